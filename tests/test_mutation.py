"""Mutation score: each step's own suite must fail against every applicable broken variant."""

import pytest

from common import STEPS_DIR
from common.broken import BUGS, PADDING_BUGS, Bug, broken_module
from common.loader import load_fresh, override
from tests.contracts import run_pytest

# (step, module the variant replaces, the bugs that apply to it)
TARGETS = [("step-04", "head", BUGS), ("lab-01", "attention", BUGS + PADDING_BUGS)]
# The same arguments for the unbroken guard and every mutant, so a kill can only be the mutation's.
# Slow tests sit out: in the steps they only render figures, which takes seconds.
SUITE_ARGS = ["--impl", "solution", "-x", "-qq", "--no-header", "-m", "not slow"]
CASES = [(step, module, bug) for step, module, bugs in TARGETS for bug in bugs]


def _suite_exit_code(step: str, module: str, bug: Bug) -> int:
    """Run `step`'s reference suite in process with `module` replaced by its broken variant."""
    fresh = load_fresh(STEPS_DIR / step / "solution", module)
    with override(step, module, broken_module(fresh, bug)):
        return run_pytest([str(STEPS_DIR / step / "tests"), *SUITE_ARGS])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("step", "module", "bug"), CASES, ids=[f"{s}-{b.name}" for s, _, b in CASES]
)
def test_suite_kills_the_variant(step, module, bug):
    assert _suite_exit_code(step, module, bug) == pytest.ExitCode.TESTS_FAILED, (
        f"{step}'s tests all pass with {module} broken by '{bug.name}': {bug.breaks}"
    )


@pytest.mark.parametrize("step", [step for step, _, _ in TARGETS])
def test_the_unbroken_suite_passes_in_process(step):
    """So a 'kill' above means the variant failed a test, not that nested runs are broken."""
    assert run_pytest([str(STEPS_DIR / step / "tests"), *SUITE_ARGS]) == pytest.ExitCode.OK
