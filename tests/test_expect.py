"""common.expect: each check passes on a right value and, on a wrong one, names expected and got."""

import pytest
import torch

from common import expect


def raised(check, *args) -> str:
    """The message of the AssertionError that check(*args) must raise."""
    with pytest.raises(AssertionError) as info:
        check(*args)
    return str(info.value)


def test_numbers_name_the_value_the_expectation_and_what_came():
    assert raised(expect.at_most, "max |yours - SDPA|", 0.49, 1e-6) == (
        "max |yours - SDPA|: expected <= 1e-06, got 0.49"
    )
    assert (
        raised(expect.close, "std", 8.4, 1.0, 1e-4) == "std: expected 1 (tolerance 0.0001), got 8.4"
    )
    assert raised(expect.equal, "count", 6, 0) == "count: expected 0, got 6"
    assert (
        raised(expect.between, "largest", 1.5, 0, 1) == "largest: expected between 0 and 1, got 1.5"
    )
    assert "got nan" in raised(expect.at_most, "loss", float("nan"), 1.0)  # NaN never passes


def test_tensors_say_where_the_worst_entry_is_and_how_many_differ():
    mask = torch.ones(3, 3, dtype=torch.bool).triu()
    message = raised(expect.equal, "causal_mask(3)", mask, mask.T)
    assert message == "causal_mask(3)[0, 1]: expected False, got True (6 of 9 entries differ)"
    got = torch.tensor([0.0, 0.5, 0.1])
    message = raised(expect.close, "weights", got, torch.zeros(3), 1e-6)
    assert message == "weights[1]: expected 0 (tolerance 1e-06), got 0.5 (2 of 3 entries differ)"
    assert raised(expect.shape, "out", got, (3, 1)) == "out.shape: expected (3, 1), got (3,)"
    assert raised(expect.finite, "p", torch.tensor([1.0, float("nan")])).startswith(
        "p[1]: expected finite entries only, got nan"
    )


def test_a_tuple_result_names_the_member_that_is_wrong():
    message = raised(
        expect.members, "score_stats", (8.4, 2.0), (8.4, 1.0), ("raw std", "std"), 1e-4
    )
    assert message == "score_stats's std: expected 1 (tolerance 0.0001), got 2"


def test_right_values_pass():
    expect.equal("x", torch.arange(3), torch.arange(3))
    expect.close("x", torch.ones(2), torch.ones(2) + 1e-7, 1e-6)
    expect.members("leak", (0, 0.0), (0, 0.0), ("count", "largest"))
    expect.at_least("p", torch.zeros(2), 0.0)
    expect.differs("out", torch.ones(2), torch.zeros(2))
    assert "the same values" in raised(expect.differs, "out", torch.ones(2), torch.ones(2))


def test_a_value_whose_own_code_would_answer_the_comparison_fails():
    """Red team 11: an object whose class says it is never unequal, a tensor given a .double of
    its own that makes every distance zero, either inside a tuple: none is believed."""

    class Liar:
        __ne__ = lambda self, other: False  # noqa: E731 - as a class body writes it

    assert "whose comparisons are its own" in raised(expect.equal, "p", Liar(), 0.5)
    assert "whose comparisons are its own" in raised(expect.members, "m", (1, Liar()), (1, 2), "ab")
    pe = torch.ones(3)
    pe.double = lambda: torch.zeros(3, dtype=torch.float64)
    assert "a tensor with its own .double" in raised(expect.close, "pe", pe, torch.zeros(3), 1e-6)
    expect.equal("t", (1, "a", torch.Size([2])), (1, "a", (2,)))  # Python's and torch's own pass


def test_none_or_a_string_where_a_tensor_is_expected_is_said_in_the_courses_words():
    """Walk 12: expect.equal(None, tensor) raised torch's 'Could not infer dtype of NoneType'."""
    for got in (None, "keys"):
        with pytest.raises(AssertionError, match=rf"cache.keys\[0\]: expected a torch.float32 "
                           rf"tensor of shape \(2,\), got {type(got).__name__}"):  # fmt: skip
            expect.equal("cache.keys[0]", got, torch.zeros(2))
