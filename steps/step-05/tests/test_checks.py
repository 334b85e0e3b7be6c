"""The classic-bug checks on your GPT, and each curated broken GPT (the reference with one bug) caught
by the check that names it."""

import pytest

from common.course import course_step
from common.course.bugs import broken_copy
from common.loader import load_file

HERE = course_step("step-05").folder
CURATED = load_file(HERE / "bugs.py").BUGS


@pytest.mark.todo("task 4")
def test_parameter_count(gpt, checks):
    checks.assert_parameter_count(gpt)


@pytest.mark.todo("task 4")
def test_init_loss_is_ln_V(gpt, checks):
    checks.assert_init_loss_is_ln_V(gpt)


@pytest.mark.todo("task 4")
def test_overfits_one_batch(gpt, checks):
    checks.assert_overfits_one_batch(gpt)


@pytest.mark.todo("task 4")
def test_positions_matter(gpt, checks):
    checks.assert_positions_matter(gpt)


@pytest.mark.todo("task 4")
def test_zeroed_branches_give_the_embedding_back(gpt, checks):
    checks.assert_zeroed_branches_give_the_embedding_back(gpt)


@pytest.mark.todo("task 4")
@pytest.mark.core  # task 4's property
def test_causal_by_perturbation(gpt, checks):
    checks.assert_causal_by_perturbation(gpt)


@pytest.mark.todo("task 4")
def test_causal_by_gradient(gpt, checks):
    checks.assert_causal_by_gradient(gpt)


@pytest.mark.todo("task 4")
@pytest.mark.core  # task 4's trap: the classes on axis 1
def test_loss_is_the_next_token_cross_entropy(gpt, checks):
    checks.assert_loss_is_the_next_token_cross_entropy(gpt)


@pytest.mark.todo("task 5")
@pytest.mark.core  # task 5's parity
def test_generate_samples_the_softmax(gpt, checks):
    checks.assert_generate_samples_the_softmax(gpt)


@pytest.mark.todo("task 5")
@pytest.mark.core  # task 5's trap: not cropping
def test_generate_crops_the_context(gpt, checks):
    checks.assert_generate_crops_the_context(gpt)


@pytest.mark.course  # reads gpt_checks.py and this file only
def test_every_check_has_its_test_in_the_same_order():
    names = [n.removeprefix("test_") for n in globals() if n.startswith("test_")]
    checks = load_file(HERE / "gpt_checks.py")
    ordered = [n for n in names if n in checks.CHECKS]
    assert ordered == list(checks.CHECKS), (
        f"the tests of the checks in this file's order: expected {list(checks.CHECKS)}, got {ordered}"
    )


@pytest.mark.course  # a bug is a replacement in the reference's gpt.py: none of your code runs
@pytest.mark.parametrize("bug", CURATED, ids=[b.name for b in CURATED])
def test_each_curated_bug_fails_the_check_that_names_it(bug, checks):
    broken = broken_copy(HERE / "solution", "gpt", bug)  # a fresh copy of the reference, broken
    with pytest.raises((AssertionError, ValueError)):
        checks.CHECKS[bug.check](broken)
