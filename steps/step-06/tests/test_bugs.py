"""Each classic bug, put into a copy of the reference, makes its own check fail (and no earlier one)."""

import pytest

from common.course import course_step
from common.course.bugs import Bug
from common.loader import load_file

checks = load_file(course_step("step-06").folder / "loop_checks.py")
CURATED = course_step("step-06").bugs()  # bugs.py
# every test runs the reference with one line changed: none of your code runs, so the check
# (--impl starter) leaves them out
pytestmark = pytest.mark.course


@pytest.mark.parametrize("bug", CURATED, ids=[b.name for b in CURATED])
def test_the_check_named_in_the_symptom_table_catches_the_bug(bug, tiny):
    caught_by = checks.first_failing(checks.reference_with(bug), tiny)
    assert caught_by == bug.check, (
        f"the first check to fail with '{bug.name}': expected {bug.check}, got {caught_by}"
    )


def test_the_reference_passes_every_check(tiny):
    module = checks.reference_with(Bug("none", "", "", old="model.eval()", new="model.eval()"))
    failed = checks.first_failing(module, tiny)
    assert failed is None, f"the first check to fail on the reference: expected none, got {failed}"


def test_an_estimate_that_always_ends_in_train_mode_fails_the_eval_mode_check(tiny):
    """Task 2's contract: back to the mode it was in, so a model measured in eval mode stays there."""
    always_train = Bug(
        "always train()", "", "", old="model.train(was_training)", new="model.train()"
    )
    with pytest.raises(AssertionError, match="expected eval mode .*got train mode"):
        checks.check_eval_mode(checks.reference_with(always_train), tiny)
