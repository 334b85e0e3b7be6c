"""The handout's generated numbers agree with a fresh run of run.py's measurements."""

import re

from common.docs import parse_table, read_block

# How far a fresh figure may sit from the README's. The max-abs-difference figures are rounding
# noise: multiples of the float32 unit 2**-23 ~ 1.2e-7 whose exact bits depend on the BLAS and
# SIMD path (MKL or OpenBLAS on x86-64, Accelerate on macOS arm64), so another OS may print
# 2.38e-07 where this one prints 1.19e-07. On one machine runs are deterministic and the figures
# are identical. Allowed: both figures PASS and differ by at most half the row's threshold (1e-6
# rows: 4 rounding units). A stale README whose figure the code no longer reproduces still fails.
DOCS_FRACTION_OF_THRESHOLD = 0.5
# The exercise prints attention weights with 6 decimals: print rounding (5e-7) plus cross-build
# rounding (~1e-7) stays below 2e-6; a different seed, T or mask moves them by far more.
EXERCISE_ABS_TOL = 2e-6
NUMBER = re.compile(r"\d+(?:\.\d+)?(?:e[-+]\d+)?")


def test_readme_parity_table_matches_a_fresh_run(attention, runner):
    """Same comparisons, same thresholds, all PASS, and each figure within the tolerance above."""
    documented = parse_table(read_block(runner.README, "lab-01-parity"))
    rows = runner.parity_rows(attention)
    fresh = parse_table(runner.parity_table(rows))
    assert [r[0] for r in documented] == [r[0] for r in fresh]
    for doc, new, (label, _, tol) in zip(documented, fresh, rows, strict=True):
        assert doc[2:] == new[2:] == [f"{tol:.0e}", "PASS"], label
        assert abs(float(doc[1]) - float(new[1])) <= DOCS_FRACTION_OF_THRESHOLD * tol, label


def test_readme_exercise_output_matches_a_fresh_run(attention, wrong_mask, runner):
    """The README's exercise output: same text and counts, weights within EXERCISE_ABS_TOL."""
    block = read_block(runner.README, "lab-01-exercise")
    documented = [line for line in block.splitlines() if line and not line.startswith("```")]
    fresh = runner.exercise_lines(runner.exercise(attention, wrong_mask))
    assert len(documented) == len(fresh)
    for doc, new in zip(documented, fresh, strict=True):
        assert NUMBER.sub("#", doc) == NUMBER.sub("#", new)  # same words, same PASS/FAIL
        for a, b in zip(NUMBER.findall(doc), NUMBER.findall(new), strict=True):
            if a.isdigit() and b.isdigit():
                assert a == b, (doc, new)  # shapes, T and leak counts are exact
            else:
                assert abs(float(a) - float(b)) <= EXERCISE_ABS_TOL, (doc, new)
