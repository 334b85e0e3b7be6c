"""Mutation score: each step's own suite fails against every broken variant; the handouts say which test."""

import pytest

from common import STEPS_DIR
from common.docs import parse_table, read_block
from tools.symptoms import first_failure, targets

TARGETS = targets()  # from each step.toml's [mutation]
CASES = [(step, module, bug) for step, module, bugs in TARGETS for bug in bugs]
ROW = {(step, bug.name): i for step, _, bugs in TARGETS for i, bug in enumerate(bugs)}
WRITE = "python -m tools.symptoms --write-docs"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("step", "module", "bug"), CASES, ids=[f"{s}-{b.name}" for s, _, b in CASES]
)
def test_suite_kills_the_variant_with_the_test_the_handout_names(step, module, bug):
    failed = first_failure(step, module, bug).nodeid
    assert failed, f"{step}'s tests all pass with {module} broken by '{bug.name}': {bug.breaks}"
    readme = STEPS_DIR / step / "README.md"
    try:
        rows = parse_table(read_block(readme, "symptoms"))
    except ValueError:
        pytest.fail(
            f"steps/{step}/README.md has no symptoms block: add the two lines "
            f"'<!-- BEGIN symptoms -->' and '<!-- END symptoms -->', then run {WRITE}"
        )
    assert len(rows) == sum(s == step for s, _ in ROW), f"one row per bug: run {WRITE}"
    assert rows[ROW[step, bug.name]][1] == failed, f"regenerate the handouts' tables: {WRITE}"


@pytest.mark.parametrize("step", [step for step, _, _ in TARGETS])
def test_the_unbroken_suite_passes_in_process(step):
    """So a 'kill' above means the variant failed a test, not that nested runs are broken."""
    run = first_failure(step, "", None)
    assert run.nodeid is None, f"steps/{step}'s own suite fails unbroken, first at {run.nodeid}"
    assert run.ran > 0, f"steps/{step}/tests ran no test in process"
