"""Your proofs (proofs.py), graded one by one: each must pass on the reference Head and catch the
broken heads that violate its own property (scorecard.OWN); an empty proof catches nothing."""

import pytest

from common.course import course_step
from common.loader import load, load_file

grading = load_file(course_step("step-04").folder / "scorecard.py")
TASK = {  # the TODO of each proof
    "prove_simplex": "4.2.1",
    "prove_causality_by_perturbation": "4.2.2",
    "prove_causality_by_gradient": "4.2.3",
}
GRADED = []  # the cards of the proofs graded so far in this session, for the printed scorecard


@pytest.mark.core  # the whole proof: sound on the reference, and every broken head of its property
@pytest.mark.parametrize(
    "proof", [pytest.param(p, marks=pytest.mark.todo(TASK[p])) for p in grading.OWN]
)
def test_your_proof_is_sound_and_catches_the_bugs_of_its_property(impl, proof, leave_scorecard):
    card = grading.grade(load("step-04", "proofs", impl), grading.SOUND, only=[proof])
    if todo := grading.todo_or_none(card):
        raise NotImplementedError(todo)
    GRADED[:] = [c for c in GRADED if c.proofs != [proof]] + [card]
    whose = "your" if impl == "starter" else "the reference"
    leave_scorecard(
        f"step-04: {whose} 4.2 proofs against broken heads\n{grading.merge(GRADED).render()}"
    )
    assert card.reference[proof] == "pass", card.render()
    assert [bug.name for bug in card.own_missed(proof)] == [], card.render()


TRAPS = {  # each proof's named trap (the CONTRACT's): the broken head that only it catches
    "prove_simplex": "mask after softmax",  # the future must be exactly 0, the rows only ~1
    "prove_causality_by_perturbation": "mask after softmax, renormalised",  # bitwise, not close
    "prove_causality_by_gradient": "diagonal excluded",  # j == 3 itself must get a gradient
}
CASES = [
    pytest.param(
        proof,
        bug,
        id=f"{proof}-{bug}",
        marks=[pytest.mark.todo(TASK[proof])] + [pytest.mark.core] * (TRAPS[proof] == bug),
    )
    for proof, bugs in grading.OWN.items()
    for bug in bugs
]


@pytest.mark.parametrize(("proof", "bug"), CASES)
def test_your_proof_catches_this_broken_head_of_its_property(impl, proof, bug):
    """One broken head at a time: the proof must pass on the reference Head and fail on it."""
    heads = [b for b in grading.HEADS if b.name == bug]
    assert len(heads) == 1, f"broken heads named {bug!r}: expected 1, got {len(heads)}"
    card = grading.grade(load("step-04", "proofs", impl), grading.SOUND, heads, only=[proof])
    if todo := grading.todo_or_none(card):
        raise NotImplementedError(todo)
    assert card.reference[proof] == "pass", (
        f"{proof} on the reference Head: expected pass, got {card.reference[proof]}"
    )
    assert card.results[bug][proof] == "caught", (
        f"{proof} on the broken head '{bug}': expected caught, got {card.results[bug][proof]}"
    )
