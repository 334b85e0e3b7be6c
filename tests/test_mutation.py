"""Mutation score: each step's own suite fails against every broken variant; the handouts say which test."""

import pytest

from common import STEPS_DIR
from common.docs import parse_table, read_block
from tests.symptoms import TARGETS, first_failure

CASES = [(step, module, bug) for step, module, bugs in TARGETS for bug in bugs]
ROW = {(step, bug.name): i for step, _, bugs in TARGETS for i, bug in enumerate(bugs)}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("step", "module", "bug"), CASES, ids=[f"{s}-{b.name}" for s, _, b in CASES]
)
def test_suite_kills_the_variant_with_the_test_the_handout_names(step, module, bug):
    failed = first_failure(step, module, bug).nodeid
    assert failed, f"{step}'s tests all pass with {module} broken by '{bug.name}': {bug.breaks}"
    rows = parse_table(read_block(STEPS_DIR / step / "README.md", "symptoms"))
    assert len(rows) == sum(s == step for s, _ in ROW)  # one row per bug, in the bugs' order
    assert rows[ROW[step, bug.name]][1] == failed, (
        "regenerate the handouts' tables: python -m tests.symptoms --write-docs"
    )


@pytest.mark.parametrize("step", [step for step, _, _ in TARGETS])
def test_the_unbroken_suite_passes_in_process(step):
    """So a 'kill' above means the variant failed a test, not that nested runs are broken."""
    run = first_failure(step, "", None)
    assert run.nodeid is None and run.ran > 20
