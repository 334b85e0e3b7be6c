"""The proof scorecard: the reference proofs catch every 4.2 bug; weak proofs get named misses and hints."""

from pathlib import Path

import pytest

from common.course import course_step
from common.loader import load, load_file, load_from

scorecard = load_file(course_step("step-04").folder / "scorecard.py")
grade, OWN, HEADS = scorecard.grade, scorecard.OWN, course_step("step-04").bugs()

WEAK = Path(__file__).parent / "fixtures" / "weak_proofs"


@pytest.fixture(scope="module")
def reference():
    return load("step-04", "head", impl="solution").Head


@pytest.mark.process
def test_reference_proofs_are_sound_and_each_catches_its_own_4_2_bugs(reference):
    card = grade(load("step-04", "proofs", impl="solution"), reference)
    text = card.render()
    assert card.sound() and card.missed() == []
    assert "score: 8/8 broken heads caught" in text
    assert "NOT A 4.2 BUG  missing 1/sqrt(d_k)" in text
    assert all(card.results["missing 1/sqrt(d_k)"][p] == "missed" for p in card.proofs)
    owned = {n for own in OWN.values() for n in own}
    assert {b.name for b in HEADS if scorecard.violates_4_2(b)} == owned
    assert all(card.own_missed(proof) == [] for proof in OWN)


@pytest.mark.process
def test_weak_proofs_get_named_misses_with_hints(reference):
    card = grade(load_from(WEAK, "proofs", "_weak_proofs"), reference)
    text = card.render()
    missed = {bug.name for bug in card.missed()}
    assert card.sound()
    assert {"upper-triangular mask", "no mask", "masked with 0 instead of -inf"} <= missed
    assert {"mask after softmax", "softmax over the wrong axis"}.isdisjoint(missed)
    assert "MISSED  upper-triangular mask" in text and "Hint: assert that the strict upper" in text
    assert f"score: {len(HEADS) - 1 - len(missed)}/{len(HEADS) - 1}" in text


@pytest.mark.process
def test_a_proof_that_fails_on_the_reference_is_unsound(reference):
    class Proofs:
        @staticmethod
        def prove_nothing_is_causal(Head):
            raise AssertionError("rejects everything")

    card = grade(Proofs, reference, bugs=HEADS[:1])
    assert not card.sound()
    assert "UNSOUND  prove_nothing_is_causal must pass on the reference Head" in card.render()


@pytest.mark.process
def test_an_empty_proof_catches_none_of_its_own_bugs(reference):
    """Proofs that only run the head (no assert) pass on the reference and so prove nothing."""

    def empty(Head):
        head, x = proofs.head_and_input(Head)
        head(x)

    proofs = load("step-04", "proofs", impl="solution")
    fake = type("Proofs", (), {name: staticmethod(empty) for name in OWN})
    card = grade(fake, reference)
    assert card.sound()
    for proof, own in OWN.items():
        assert sorted(b.name for b in card.own_missed(proof)) == sorted(own), proof
        assert f"{proof}: caught 0 of the {len(own)} broken heads" in card.render()
