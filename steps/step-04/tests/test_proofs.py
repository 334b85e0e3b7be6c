"""Your proofs (proofs.py), graded one by one: each must pass on the reference Head and catch the
broken heads that violate its own property (scorecard.OWN); an empty proof catches nothing."""

import pytest

from common.course import course_step
from common.loader import load, load_file

grading = load_file(course_step("step-04").folder / "scorecard.py")
GRADED = []  # the cards of the proofs graded so far in this session, for the printed scorecard


@pytest.mark.parametrize("proof", list(grading.OWN))
def test_your_proof_is_sound_and_catches_the_bugs_of_its_property(impl, proof, leave_scorecard):
    card = grading.grade(
        load("step-04", "proofs", impl), load("step-04", "head").Head, only=[proof]
    )
    if todo := grading.todo_or_none(card):
        raise NotImplementedError(todo)
    GRADED[:] = [c for c in GRADED if c.proofs != [proof]] + [card]
    whose = "your" if impl == "starter" else "the reference"
    leave_scorecard(
        f"step-04: {whose} 4.2 proofs against broken heads\n{grading.merge(GRADED).render()}"
    )
    assert card.reference[proof] == "pass", card.render()
    assert [bug.name for bug in card.own_missed(proof)] == [], card.render()
