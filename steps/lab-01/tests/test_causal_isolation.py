"""Causal isolation and padding: no query sees a later key, padded keys get no weight, never NaN."""

import pytest
import torch

from common import expect
from common.seeding import randn, seed_all


def lower_triangle(T: int) -> torch.Tensor:
    """[T, T] bool, True where key j <= query t, written without tril."""
    t = torch.arange(T)
    return t[None, :] <= t[:, None]  # (1, T) <= (T, 1) -> (T, T)


def right_padding(lengths: list[int], T: int) -> torch.Tensor:
    """[B, T] bool, True = real token: sequence b has lengths[b] real tokens, then padding."""
    return torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]  # (1, T) < (B, 1) -> (B, T)


@pytest.mark.todo("task 3")
@pytest.mark.core  # task 3's trap: triu, or the diagonal dropped
@pytest.mark.parametrize("T", [1, 4, 9])
def test_causal_mask_is_the_lower_triangle(attention, T):
    """causal_mask(T) is bool [T, T] with True exactly where key j <= query t."""
    mask = attention.causal_mask(T)
    expect.equal("causal_mask(T).dtype", mask.dtype, torch.bool)
    expect.equal("causal_mask(T)", mask, lower_triangle(T), "True where key j <= query t")


@pytest.mark.given
@pytest.mark.parametrize("seq_len", [0, -3])
def test_causal_mask_refuses_an_empty_sequence(attention, seq_len):
    """A length below 1 is a ValueError naming the value."""
    with pytest.raises(ValueError, match=f"positive int, got {seq_len}"):
        attention.causal_mask(seq_len)


@pytest.mark.todo("task 3")
@pytest.mark.parametrize("T, seed", [(1, 0), (4, 1), (9, 2)])
def test_weights_above_the_diagonal_are_exactly_zero(attention, T, seed):
    """With the causal mask every weight on a later key is exactly 0, and each row sums to 1."""
    q, k, v = (randn(2, T, 8, seed=seed + i) for i in range(3))  # each (B, T, d_head)
    _, weights = attention.scaled_dot_product_attention(q, k, v, attention.causal_mask(T))
    later = weights * ~lower_triangle(T)  # (B, T, T): only the weights on later keys
    expect.equal("a weight on a later key", later, torch.zeros(2, T, T), "it must be exactly 0")
    # 1e-6: a float32 sum of <= 9 probabilities, a few rounding units of 2**-23.
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, T), rtol=0, atol=1e-6)


@pytest.mark.todo("task 3")
@pytest.mark.parametrize("tensor", ["k", "v"])
@pytest.mark.parametrize("s", [1, 4, 7])
def test_changing_a_future_key_or_value_leaves_earlier_outputs_identical(attention, tensor, s):
    """Replace key/value s: outputs at positions < s stay bit-identical; position s does change."""
    T = 8
    q, k, v = (randn(2, T, 8, seed=i) for i in range(3))  # each (B, T, d_head)
    k2, v2 = k.clone(), v.clone()
    (k2 if tensor == "k" else v2)[:, s] = randn(2, 8, seed=99)  # token s gets new numbers
    mask = attention.causal_mask(T)
    out, _ = attention.scaled_dot_product_attention(q, k, v, mask)
    out2, _ = attention.scaled_dot_product_attention(q, k2, v2, mask)
    # bitwise: a masked key contributes exact zeros
    expect.equal(f"outputs before position {s} once {tensor}[{s}] changed", out2[:, :s], out[:, :s])
    expect.differs(f"output {s} once {tensor}[{s}] changed", out2[:, s], out[:, s])  # it was real


@pytest.mark.parametrize(
    "module",
    [
        pytest.param("SelfAttention", marks=pytest.mark.todo("task 5")),
        pytest.param("MultiHeadSelfAttention", marks=pytest.mark.todo("task 6")),
    ],
)
def test_modules_with_a_causal_mask_isolate_earlier_tokens(attention, module):
    """Change input token 3 of the module: outputs 0..2 stay bit-identical, output 3 changes."""
    seed_all(0)
    if module == "SelfAttention":
        layer = attention.SelfAttention(8, 4)
    else:
        layer = attention.MultiHeadSelfAttention(8, 2)
    x = randn(2, 6, 8, seed=0)  # (B, T, d)
    x2 = x.clone()
    x2[:, 3] = randn(2, 8, seed=99)
    mask = attention.causal_mask(6)
    out, _ = layer(x, mask)
    out2, _ = layer(x2, mask)
    expect.equal(
        "outputs 0-2 once token 3 changed", out2[:, :3], out[:, :3], "a later token leaked"
    )
    expect.differs("output 3 once token 3 changed", out2[:, 3], out[:, 3])


@pytest.mark.todo("task 4")
@pytest.mark.core  # task 4's trap: AND, not OR
def test_combine_is_causal_and_padding(attention):
    """combine_causal_and_padding gives [B, T, T] with True iff j <= i AND key j is real."""
    T, padding = 5, right_padding([5, 3], 5)  # (B, T)
    combined = attention.combine_causal_and_padding(attention.causal_mask(T), padding)
    expect.shape("the combined mask", combined, (2, T, T))
    expect.equal("the combined mask's dtype", combined.dtype, torch.bool)
    expected = lower_triangle(T)[None] & padding[:, None, :]  # (1, T, T) & (B, 1, T) -> (B, T, T)
    expect.equal("combined[b, i, j]", combined, expected, "True iff j <= i AND key j is real")


@pytest.mark.given
@pytest.mark.parametrize(
    "causal_shape, padding_shape, message",
    [
        ((4,), (2, 4), r"causal must have shape \[T, T\] \(2 dims\), got shape \(4,\)"),
        ((1, 4, 4), (2, 4), r"causal must have shape \[T, T\] \(2 dims\), got shape \(1, 4, 4\)"),
        ((4, 4), (4,), r"padding must have shape \[B, T\] \(2 dims\), got shape \(4,\)"),
        ((4, 4), (2, 1, 4), r"padding must have shape \[B, T\] \(2 dims\), got shape \(2, 1, 4\)"),
        ((4, 5), (2, 5), r"causal must be square, \[T, T\], got shape \(4, 5\)"),
        ((1, 4), (2, 4), r"causal must be square, \[T, T\], got shape \(1, 4\)"),
        ((4, 1), (2, 4), r"causal must be square, \[T, T\], got shape \(4, 1\)"),
        ((4, 4), (2, 5), r"padding must broadcast to \(2, 4\), got shape \(2, 5\)"),
    ],
    ids=[
        "1-D causal",
        "3-D causal",
        "1-D padding",
        "3-D padding",
        "non-square",
        "one row",  # it would broadcast, and the result would be [B, 1, T]
        "one column",
        "longer padding",
    ],
)
def test_combine_refuses_masks_of_the_wrong_shape(attention, causal_shape, padding_shape, message):
    """causal must be [T, T] and padding [B, T] with the same T: ValueError naming the shape."""
    causal = torch.ones(causal_shape, dtype=torch.bool)
    padding = torch.ones(padding_shape, dtype=torch.bool)
    with pytest.raises(ValueError, match=message):
        attention.combine_causal_and_padding(causal, padding)


@pytest.mark.given
@pytest.mark.parametrize("which", ["causal", "padding"])
def test_combine_refuses_a_float_mask(attention, which):
    """A float causal or padding mask is not silently cast: ValueError asking for a bool mask."""
    causal, padding = torch.ones(4, 4, dtype=torch.bool), torch.ones(2, 4, dtype=torch.bool)
    if which == "causal":
        causal = causal.float()
    else:
        padding = padding.float()
    with pytest.raises(ValueError, match=f"{which} must be a boolean tensor.*pass a bool mask"):
        attention.combine_causal_and_padding(causal, padding)


@pytest.mark.todo("task 4")
@pytest.mark.core  # task 4's property
def test_padded_keys_get_zero_weight(attention):
    """No query, real or padded, puts any weight on a padding key."""
    T, lengths = 6, [6, 4, 2]
    padding = right_padding(lengths, T)  # (B, T)
    q, k, v = (randn(3, T, 8, seed=i) for i in range(3))  # each (B, T, d_head)
    mask = attention.combine_causal_and_padding(attention.causal_mask(T), padding)
    _, weights = attention.scaled_dot_product_attention(q, k, v, mask)
    for b, n in enumerate(lengths):
        expect.equal(
            f"weights[{b}] on the padding keys {n}..", weights[b, :, n:], torch.zeros(T, T - n)
        )


@pytest.mark.todo("task 4")
def test_padded_queries_still_attend_to_real_past_keys(attention):
    """A padding query's row is a proper distribution over the real keys before it (AND, not OR)."""
    T, n = 6, 3  # 3 real tokens, then 3 padding
    padding = right_padding([n], T)  # (1, T)
    q, k, v = (randn(1, T, 8, seed=i) for i in range(3))  # each (B, T, d_head)
    mask = attention.combine_causal_and_padding(attention.causal_mask(T), padding)
    _, weights = attention.scaled_dot_product_attention(q, k, v, mask)
    padded_rows = weights[0, n:]  # (T - n, T)
    if not (padded_rows[:, :n] > 0).all():
        expect.fail(
            "the weights of the padding queries on the real keys",
            "all > 0 (AND, not OR: a padding query still sees the real past)",
            f"min {padded_rows[:, :n].min().item():.4g}",
        )
    # 1e-6: a float32 sum of 3 probabilities, a few rounding units of 2**-23.
    torch.testing.assert_close(padded_rows.sum(-1), torch.ones(T - n), rtol=0, atol=1e-6)


@pytest.mark.todo("task 4")
def test_changing_a_padding_token_changes_no_output_row(attention):
    """New numbers in a padding key/value leave every output row bit-identical."""
    T = 6
    padding = right_padding([4], T)  # (1, T): positions 4, 5 are padding
    q, k, v = (randn(1, T, 8, seed=i) for i in range(3))  # each (B, T, d_head)
    k2, v2 = k.clone(), v.clone()
    k2[:, 4:], v2[:, 4:] = randn(1, 2, 8, seed=98), randn(1, 2, 8, seed=99)
    mask = attention.combine_causal_and_padding(attention.causal_mask(T), padding)
    out, _ = attention.scaled_dot_product_attention(q, k, v, mask)
    out2, _ = attention.scaled_dot_product_attention(q, k2, v2, mask)
    expect.equal("the outputs once a padding key and value changed", out2, out)


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("function", marks=pytest.mark.todo("task 4")),
        pytest.param("MultiHeadSelfAttention", marks=pytest.mark.todo("task 6")),
    ],
)
def test_fully_masked_row_is_zero_not_nan(attention, where):
    """Left padding: query 0 may see only key 0, which is padding, so its row and output are 0."""
    T = 5
    padding = torch.tensor([[False, True, True, True, True]])  # (1, T): token 0 is padding
    mask = attention.combine_causal_and_padding(attention.causal_mask(T), padding)  # (1, T, T)
    if where == "function":
        q, k, v = (randn(1, T, 8, seed=i) for i in range(3))  # each (B, T, d_head)
        out, weights = attention.scaled_dot_product_attention(q, k, v, mask)
        weights = weights[:, None]  # (B, T, T) -> (B, 1, T, T), like the module's
    else:
        seed_all(0)
        out, weights = attention.MultiHeadSelfAttention(8, 2)(randn(1, T, 8, seed=0), mask)
    expect.equal("NaN in the output", bool(torch.isnan(out).any()), False)
    expect.equal("NaN in the weights", bool(torch.isnan(weights).any()), False)
    row = weights[:, :, 0]  # (B, h, T): query 0's row, every key of it masked
    expect.equal("the weights of query 0, which sees no real key", row, torch.zeros_like(row))
    expect.equal(
        "the output at query 0, which sees no real key", out[:, 0], torch.zeros_like(out[:, 0])
    )
    # 1e-6: the other rows are ordinary distributions (float32 sums of <= 5 terms).
    rows = weights[:, :, 1:].sum(-1)
    torch.testing.assert_close(rows, torch.ones_like(rows), rtol=0, atol=1e-6)
