"""The wrong-mask exercise: a mask of the right shape leaks the future; your future_leak catches it."""

import pytest
import torch

from common import STEPS_DIR, expect
from common.loader import load_file
from common.seeding import randn

catalogue = load_file(STEPS_DIR / "lab-01" / "tests" / "broken_masks.py")  # the broken masks

T = 4  # the exercise's sequence length: T * (T - 1) / 2 = 6 weights sit above the diagonal
LEAK = ("count", "largest")  # the members of future_leak's result


# The exercise's own tests come first: the exhibit buggy_causal_mask (given code, the transpose of
# causal_mask) is caught by the student's future_leak, and a correct mask is not. The tests after
# them prove, on broken_masks.py's masks, that the diagnostic has no blind spot.


@pytest.mark.todo("task 7")
@pytest.mark.core  # task 7's property
def test_your_diagnostic_catches_the_exhibit(wrong_mask):
    """future_leak on the exhibit's weights finds all 6 future weights; the assertion names it."""
    weights = wrong_mask.attention_weights(wrong_mask.buggy_causal_mask(T))  # (1, T, T)
    count, largest = wrong_mask.future_leak(weights)
    expect.equal("future_leak's types", (type(count), type(largest)), (int, float))
    expect.equal("future_leak's count", count, T * (T - 1) // 2, "every weight above the diagonal")
    expect.between("future_leak's largest", largest, 0, 1)
    with pytest.raises(AssertionError, match=r"buggy_causal_mask: 6 future-token weights"):
        wrong_mask.assert_no_future_leak(weights, "buggy_causal_mask")


@pytest.mark.todo("task 7")
def test_your_diagnostic_passes_the_causal_mask_which_matches_sdpa(attention, wrong_mask, runner):
    """causal_mask leaks nothing, and attention under it is PyTorch's is_causal=True."""
    mask = attention.causal_mask(T)
    leak = wrong_mask.future_leak(wrong_mask.attention_weights(mask))
    expect.members("future_leak under causal_mask", leak, (0, 0.0), LEAK)
    q, k, v = (randn(2, T, 8, seed=i) for i in range(3))  # each (B, T, d_head)
    ours, _ = attention.scaled_dot_product_attention(q, k, v, mask)
    expected = runner.reference_sdpa(q, k, v, is_causal=True)
    expect.close("your output, against SDPA is_causal's", ours, expected, runner.SINGLE_HEAD_TOL)


@pytest.mark.todo("task 7")
@pytest.mark.core  # task 7's trap: the diagonal
def test_the_diagonal_is_not_the_future(wrong_mask):
    """Weight on the diagonal (a token attending to itself) is no leak: identity weights give 0."""
    leak = wrong_mask.future_leak(torch.eye(T)[None])
    expect.members("future_leak of identity weights", leak, (0, 0.0), LEAK)


@pytest.mark.todo("task 3")
def test_the_shipped_mask_passes_shape_and_row_sum_checks(wrong_mask):
    """The exhibit has the right shape and dtype, and its weights still sum to 1 per row."""
    mask = wrong_mask.buggy_causal_mask(T)
    # the transpose of the lower triangle is triu
    expect.equal("buggy_causal_mask(T)", mask, catalogue.triu_mask(T))
    weights = wrong_mask.attention_weights(mask)
    expect.equal("the mask's dtype", mask.dtype, torch.bool)
    expect.shape("attention_weights(mask)", weights, (1, T, T))
    # 1e-6: a float32 sum of <= 4 probabilities, a few rounding units of 2**-23.
    torch.testing.assert_close(weights.sum(-1), torch.ones(1, T), rtol=0, atol=1e-6)


@pytest.mark.todo("task 7")
def test_the_shipped_mask_fails_the_leak_diagnostic(wrong_mask):
    """assert_no_future_leak raises, naming the label, the count (6 at T = 4) and the largest."""
    weights = wrong_mask.attention_weights(catalogue.triu_mask(T))
    with pytest.raises(AssertionError, match=r"triu mask: 6 future-token weights .*largest 0\.\d"):
        wrong_mask.assert_no_future_leak(weights, "triu mask")


@pytest.mark.todo("task 7")
@pytest.mark.parametrize("seq_len", [2, 4, 7])
def test_the_shipped_mask_leaks_every_pair_above_the_diagonal(wrong_mask, seq_len):
    """With triu every (query t, key j > t) pair gets weight: T * (T - 1) / 2 leaks, each in (0, 1)."""
    count, largest = wrong_mask.future_leak(
        wrong_mask.attention_weights(catalogue.triu_mask(seq_len))
    )
    expect.equal("future_leak's count", count, seq_len * (seq_len - 1) // 2, "every pair above")
    expect.between("future_leak's largest", largest, 0, 1)


@pytest.mark.todo("task 7")
def test_diagnostic_catches_a_missing_mask(wrong_mask):
    """No mask at all: every weight above the diagonal leaks."""
    weights = wrong_mask.attention_weights(catalogue.missing_mask(T))
    with pytest.raises(AssertionError, match="no mask: 6 future-token weights"):
        wrong_mask.assert_no_future_leak(weights, "no mask")


@pytest.mark.todo("task 7")
def test_diagnostic_catches_an_inverted_mask(wrong_mask):
    """The negated causal mask: queries see only later keys (the last query's row is all zero)."""
    weights = wrong_mask.attention_weights(catalogue.inverted_mask(T))
    expect.equal("NaN in the weights", bool(torch.isnan(weights).any()), False)
    with pytest.raises(AssertionError, match="inverted mask: 6 future-token weights"):
        wrong_mask.assert_no_future_leak(weights, "inverted mask")


@pytest.mark.todo("task 7")
def test_diagnostic_catches_or_combined_padding(attention, wrong_mask):
    """causal | padding lets every real key through, including later ones."""
    causal = attention.causal_mask(T)
    padding = torch.tensor([[True, True, True, True], [True, True, True, False]])  # (B, T)
    q, k, v = (randn(2, T, 8, seed=i) for i in range(3))  # each (B, T, d_head)
    _, weights = attention.scaled_dot_product_attention(
        q, k, v, catalogue.or_padding(causal, padding)
    )
    with pytest.raises(AssertionError, match="OR-combined padding: 9 future-token weights"):
        wrong_mask.assert_no_future_leak(weights, "OR-combined padding")


@pytest.mark.todo("task 7")
def test_diagnostic_passes_and_combined_padding(attention, wrong_mask):
    """The correct combination (AND) leaks nothing, so the diagnostic stays quiet."""
    causal = attention.causal_mask(T)
    padding = torch.tensor([[True, True, True, True], [True, True, True, False]])  # (B, T)
    q, k, v = (randn(2, T, 8, seed=i) for i in range(3))  # each (B, T, d_head)
    mask = attention.combine_causal_and_padding(causal, padding)
    _, weights = attention.scaled_dot_product_attention(q, k, v, mask)
    expect.members(
        "future_leak under the AND mask", wrong_mask.future_leak(weights), (0, 0.0), LEAK
    )
    wrong_mask.assert_no_future_leak(weights, "AND-combined padding")


@pytest.mark.todo("task 7")
@pytest.mark.core  # task 7's trap: a tiny leak, no tolerance
def test_diagnostic_counts_even_a_tiny_leak(attention, wrong_mask):
    """Any non-zero weight on a later key is a leak, however small: causality is exact."""
    weights = wrong_mask.attention_weights(attention.causal_mask(T)).clone()  # (1, T, T)
    weights[0, 0, T - 1] = 1e-6  # query 0 peeks at the last key
    count, largest = wrong_mask.future_leak(weights)
    expect.equal("future_leak's count of one weight of 1e-6", count, 1)
    expect.close("future_leak's largest", largest, 1e-6, 1e-12)
    with pytest.raises(AssertionError, match="tiny: 1 future-token weights"):
        wrong_mask.assert_no_future_leak(weights, "tiny")


@pytest.mark.todo("task 7")
def test_future_leak_reads_a_single_t_by_t_matrix_too(attention, wrong_mask):
    """future_leak takes weights with or without a batch axis: [T, T] counts the same leaks."""
    weights = wrong_mask.attention_weights(catalogue.triu_mask(T))  # (1, T, T)
    leak = wrong_mask.future_leak(weights[0])
    expect.members("future_leak of [T, T] weights", leak, wrong_mask.future_leak(weights), LEAK)
    expect.equal("future_leak of [T, T] weights' count", leak[0], T * (T - 1) // 2)
