"""Your proofs (proofs.py), graded: they must pass on the reference Head and catch the broken ones."""

import pytest

from common.loader import load, load_file, step_dir

grading = load_file(step_dir("step-04") / "scorecard.py", "_course_step_04_scorecard")
todo_or_none = grading.todo_or_none


@pytest.fixture(scope="module")
def scorecard(request, leave_scorecard):
    """Grade the proofs under test against the reference Head and every broken Head, once."""
    impl = request.config.getoption("--impl")
    card = grading.grade(load("step-04", "proofs", impl), load("step-04", "head").Head)
    whose = "your" if impl == "starter" else "the reference"
    if todo_or_none(card) is None:  # a table of TODOs would only repeat the check's summary
        leave_scorecard(f"step-04: {whose} 4.2 proofs against broken heads\n{card.render()}")
    return card


def test_proofs_pass_on_the_reference_head(scorecard):
    if todo := todo_or_none(scorecard):
        raise NotImplementedError(todo)
    assert scorecard.sound(), scorecard.render()


def test_proofs_catch_every_broken_head_that_breaks_a_4_2_property(scorecard):
    if todo := todo_or_none(scorecard):
        raise NotImplementedError(todo)
    assert [bug.name for bug in scorecard.missed()] == [], scorecard.render()
