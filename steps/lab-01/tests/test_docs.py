"""The handout's generated numbers agree with a fresh run of run.py's measurements."""

import re

import pytest

from common.docs import parse_table, read_block

# How far a fresh figure may sit from the README's: 5e-7 absolute, a few float32 rounding units.
# The max-abs-difference figures are O(1e-7) rounding noise in outputs of size ~1, where one
# rounding unit is 2**-23 ~ 1.2e-7. Their exact bits depend on the BLAS and SIMD path (MKL or
# OpenBLAS on x86-64, Accelerate on macOS arm64), which may move them by a couple of units (1.19e-07
# here, 2.38e-07 there). On one machine runs are deterministic and the figures are identical. Both
# figures must also PASS their row's threshold, checked as exact text. A README figure the code no
# longer reproduces (a real change of scale, mask or layout moves it by 1e-2 or more) fails.
DOCS_ABS_TOL = 5e-7
# The exercise prints attention weights with 6 decimals: print rounding (5e-7 each side) plus
# cross-build rounding (~1e-7) stays below 2e-6; a different seed, T or mask moves them by far more.
# Its max-abs-difference figure (printed as 1.19e-07) is rounding noise like the table's: DOCS_ABS_TOL.
EXERCISE_ABS_TOL = 2e-6
NUMBER = re.compile(r"\d+(?:\.\d+)?(?:e[-+]\d+)?")
THRESHOLD = re.compile(r"\(threshold ([^)]*)\)")
# What a student whose code disagrees with the handout reads (maintainers: CONTRIBUTING.md).
DIFFER = "your numbers differ from the reference run this handout shows"


def test_readme_parity_table_matches_a_fresh_run(attention, runner):
    """Same comparisons, same thresholds, all PASS, and each figure within DOCS_ABS_TOL."""
    documented = parse_table(read_block(runner.README, "lab-01-parity"))
    rows = runner.parity_rows(attention)
    fresh = parse_table(runner.parity_table(rows))
    assert [r[0] for r in documented] == [r[0] for r in fresh], DIFFER
    for doc, new, (label, _, tol) in zip(documented, fresh, rows, strict=True):
        assert doc[2:] == new[2:] == [f"{tol:.0e}", "PASS"], f"{DIFFER}: {label}: {new[1:]}"
        assert abs(float(doc[1]) - float(new[1])) <= DOCS_ABS_TOL, (
            f"{DIFFER}: {label}: README {doc[1]}, this run {new[1]}"
        )


def test_readme_exercise_output_matches_a_fresh_run(attention, wrong_mask, runner):
    """The README's exercise output: same text and counts, numbers within the tolerances above."""
    block = read_block(runner.README, "lab-01-exercise")
    documented = [line for line in block.splitlines() if line and not line.startswith("```")]
    fresh = runner.exercise_lines(runner.exercise(attention, wrong_mask))
    assert len(documented) == len(fresh), f"{DIFFER}: {fresh}"
    for doc, new in zip(documented, fresh, strict=True):
        assert NUMBER.sub("#", doc) == NUMBER.sub("#", new), f"{DIFFER}: {new}"  # same words
        assert THRESHOLD.findall(doc) == THRESHOLD.findall(new), (
            f"{DIFFER}: README {doc}, this run {new}"
        )  # exact threshold text
        for a, b in zip(NUMBER.findall(doc), NUMBER.findall(new), strict=True):
            if a.isdigit() and b.isdigit():
                assert a == b, (
                    f"{DIFFER}: README {doc}, this run {new}"
                )  # shapes, T and leak counts are exact
            else:
                tol = DOCS_ABS_TOL if "e" in a else EXERCISE_ABS_TOL  # e-notation: rounding noise
                assert abs(float(a) - float(b)) <= tol, f"{DIFFER}: README {doc}, this run {new}"


# The appendix's parity figures in float32 rounding units: DOCS_ABS_TOL / 2**-23, about 4 units.
UNITS_TOL = DOCS_ABS_TOL / 2.0**-23


@pytest.mark.given  # counts the tests of the solution: no TODO on the path
def test_readme_expected_test_count_is_the_live_count(runner):
    """'Expected: N passed' names what `pixi run test-lab-01` runs today, not the lecture's 28."""
    block = read_block(runner.README, "lab-01-test-count")
    assert block == runner.expected_count_block(runner.collected_tests()), (
        "the suite's test count is not the README's (maintainers: see CONTRIBUTING.md)"
    )


def test_readme_lecture_leak_reproduces_the_lecture_and_this_lab(attention, wrong_mask, runner):
    """The lecture's 0.740962 comes back from its draw of q, k, v; this lab's draw gives its own."""
    documented = parse_table(read_block(runner.README, "lab-01-lecture-leak"))
    rows = runner.lecture_leak(attention, wrong_mask)
    fresh = parse_table(runner.lecture_leak_block(rows))
    assert [r[:2] for r in documented] == [r[:2] for r in fresh]  # names and exact counts
    for doc, new in zip(documented, fresh, strict=True):
        assert abs(float(doc[2]) - float(new[2])) <= EXERCISE_ABS_TOL, (
            f"{DIFFER}: README {doc}, this run {new}"
        )
    (_, _, lecture), (_, count, ours) = rows
    assert round(lecture, 6) == runner.LECTURE_LEAK
    exercise = runner.exercise_buggy(wrong_mask)  # the lab's own figure, printed by the exercise
    assert (count, ours) == (exercise["buggy_count"], exercise["buggy_largest"])


def test_readme_lecture_parity_is_rounding_noise_both_ways(attention, runner):
    """The lecture's last bits and this lab's lie within the same seed-to-seed spread of units."""
    documented = parse_table(read_block(runner.README, "lab-01-lecture-parity"))
    fresh = parse_table(runner.parity_spread_block(runner.parity_spread(attention)))
    assert [r[:2] for r in documented] == [r[:2] for r in fresh]  # labels, lecture's figures
    for doc, new in zip(documented, fresh, strict=True):
        assert abs(float(doc[2]) - float(new[2])) <= DOCS_ABS_TOL, (
            f"{DIFFER}: README {doc}, this run {new}"
        )
        for a, b in zip(doc[3:], new[3:], strict=True):
            assert abs(float(a) - float(b)) <= UNITS_TOL, f"{DIFFER}: README {doc}, this run {new}"
    for row in fresh:  # the lecture's figure is a few rounding units too, like ours
        assert float(row[1]) / 2.0**-23 <= 4 and float(row[5]) <= 4, row
