"""Every step's deterministic handout blocks are what a fresh run of its reference prints.

Each step's run.py declares RUN (common/run/experiment.py): its checked blocks, each with how close a
number must be, the tolerance written and explained beside it (CONTRIBUTING.md, "A step's run")."""

import pytest

from common import REPO_ROOT, shown
from common.docs import disagreements, exact, last_digit, read_block, within
from common.loader import load_file
from common.run import runnable
from common.run.experiment import fresh_blocks
from tools.counts import BLOCKS, count_block

RUNS = runnable()
# What a student whose handout disagrees reads, and the maintainer's fix.
DIFFER = "the handout's numbers differ from a fresh run of the reference"


@pytest.mark.parametrize("step", sorted(RUNS))
def test_handout_blocks_match_a_fresh_run(step):
    run = load_file(RUNS[step])
    assert hasattr(run, "RUN") or hasattr(run, "docs_blocks"), (
        f"{shown(RUNS[step])}: declare RUN = common.run.experiment.Run(...) (CONTRIBUTING.md)"
    )
    readme = RUNS[step].parent / "README.md"
    problems = []
    fresh_run = fresh_blocks(run.RUN) if hasattr(run, "RUN") else run.docs_blocks()
    for name, (fresh, close) in fresh_run.items():
        found = disagreements(read_block(readme, name), fresh, close)
        problems += [f"{shown(readme)} block {name!r}: {line}" for line in found]
    fix = f"if the change is meant, record it: python -m common.run {step} --write-docs"
    assert not problems, "\n".join([f"{DIFFER} ({fix}):", *problems])


@pytest.mark.parametrize("step", sorted(BLOCKS))
def test_a_handouts_test_count_is_pytests_own(step):
    readme = REPO_ROOT / "steps" / step / "README.md"
    found = disagreements(read_block(readme, BLOCKS[step]), count_block(step), exact)
    fix = "record the count: python -m tools.counts --write-docs"
    assert not found, "\n".join(
        [f"{shown(readme)}: the expected test count is stale ({fix}):", *found]
    )


def test_the_tolerances_on_examples():
    digit = last_digit(1e-6)
    assert digit("4.01", "4.02") and not digit("4.01", "4.03")
    assert digit("9.4", "9.5") and not digit("9.4", "9.6")
    assert digit("1.2e-07", "3.0e-08") and not digit("5.9e-01", "6.1e-01")
    assert not digit("1.2e-07", "9.0e-05"), "9e-05 is far more than float32 rounding"
    close = within(2e-6, e=5e-7)
    assert close("0.123456", "0.123457") and not close("0.123456", "0.123466")
    assert close("1.19e-07", "2.38e-07") and not close("1.19e-07", "9.0e-07")
    assert not close("1e-06", "5e-07") and not close("8", "9") and exact("3", "3")


def test_a_disagreement_is_one_line_each_and_words_must_match():
    block = "| row | 4.01 | PASS |\n| other | 2 | PASS |\n"
    fresh = "| row | 4.05 | PASS |\n| other | 2 | FAIL |\n"
    problems = disagreements(block + "recorded on: some machine\n", fresh, last_digit(1e-6))
    assert problems == [
        "line 1: handout '| row | 4.01 | PASS |'; fresh run '| row | 4.05 | PASS |'",
        "line 2: handout '| other | 2 | PASS |'; fresh run '| other | 2 | FAIL |'",
    ]


def test_contributings_maps_are_what_the_docstrings_say():
    """The rooms (every package of common/ and tools/, and the grader) and each step's own modules."""
    from tools.common_map import BLOCKS, CONTRIBUTING, ROOMS

    packages = {p.parent for d in ("common", "tools") for p in (REPO_ROOT / d).rglob("__init__.py")}
    rooms = sorted([*(p.relative_to(REPO_ROOT).as_posix() for p in packages), "grader"])
    assert rooms == sorted(ROOMS), f"expected every package of common/ and tools/ a room: {rooms}"
    assert "`steps/step-05/run.py`" in BLOCKS["step-files"]()
    for name, made in BLOCKS.items():
        assert read_block(CONTRIBUTING, name) == made(), "python -m tools.common_map --write-docs"
