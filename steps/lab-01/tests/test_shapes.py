"""Shapes: q, k, v, scores, weights and outputs have the documented shapes; bad input is refused.

Tests marked `given` call only code the starter gives (the constructors): they pass on it untouched.
"""

import re

import pytest
import torch

from common import expect
from common.seeding import randn, seed_all


@pytest.mark.todo("task 2")
@pytest.mark.parametrize(
    "q_shape, kv_shape",
    [
        ((5, 8), (5, 8)),  # no leading dims at all: [T, d_head]
        ((2, 5, 8), (2, 5, 8)),  # single head: [B, T, d_head]
        ((2, 1, 8), (2, 1, 8)),  # one position: T = 1
        ((2, 5, 1), (2, 5, 1)),  # one feature: d_head = 1
        ((2, 3, 5, 4), (2, 3, 5, 4)),  # several heads: [B, h, T, d_head]
        ((2, 3, 7, 4), (2, 3, 9, 4)),  # T_q != T_k
    ],
)
def test_sdpa_output_and_weight_shapes(attention, q_shape, kv_shape):
    """Output is [..., T_q, d_v] and weights are [..., T_q, T_k], whatever the leading dims."""
    q, k, v = randn(*q_shape, seed=0), randn(*kv_shape, seed=1), randn(*kv_shape, seed=2)
    out, weights = attention.scaled_dot_product_attention(q, k, v)
    expect.shape("the output", out, q_shape, "[..., T_q, d_v]")
    expect.shape("the weights", weights, (*q_shape[:-1], kv_shape[-2]), "[..., T_q, T_k]")


@pytest.mark.todo("task 5")
@pytest.mark.parametrize("T", [5, 1])
@pytest.mark.parametrize("d_model, d_head", [(16, 16), (16, 4)])
def test_self_attention_shapes(attention, d_model, d_head, T):
    """One head: q, k, v are [B, T, d_head], weights [B, T, T], output [B, T, d_head]."""
    seed_all(0)
    head = attention.SelfAttention(d_model, d_head)
    x = randn(2, T, d_model, seed=0)  # (B, T, d)
    q, k, v = head.project(x)
    for name, projected in zip("qkv", (q, k, v), strict=True):
        expect.shape(f"project(x)'s {name}", projected, (2, T, d_head), "[B, T, d_head]")
    out, weights = head(x)
    expect.shape("the weights", weights, (2, T, T), "[B, T, T]")
    expect.shape("the output", out, (2, T, d_head), "[B, T, d_head]")


@pytest.mark.todo("task 6")
@pytest.mark.parametrize("T", [5, 1])
@pytest.mark.parametrize("d_model, n_heads", [(16, 4), (12, 3), (8, 1)])
def test_multi_head_shapes(attention, d_model, n_heads, T):
    """Several heads: heads are [B, h, T, d_head], weights [B, h, T, T], output [B, T, d_model]."""
    seed_all(0)
    mha = attention.MultiHeadSelfAttention(d_model, n_heads)
    x = randn(2, T, d_model, seed=0)  # (B, T, d)
    heads = mha.split_heads(x)
    expect.shape("split_heads(x)", heads, (2, n_heads, T, d_model // n_heads), "[B, h, T, d_head]")
    out, weights = mha(x)
    expect.shape("the weights", weights, (2, n_heads, T, T), "[B, h, T, T]")
    expect.shape("the output", out, (2, T, d_model), "[B, T, d_model]")


@pytest.mark.todo("task 6")
@pytest.mark.core  # task 6's property: the merge undoes the split
def test_split_then_merge_heads_is_identity(attention):
    """merge_heads(split_heads(x)) gives x back exactly: the split only reorders numbers."""
    seed_all(0)
    mha = attention.MultiHeadSelfAttention(12, 3)
    x = randn(2, 5, 12, seed=0)  # (B, T, d)
    expect.equal("merge_heads(split_heads(x))", mha.merge_heads(mha.split_heads(x)), x, "x itself")


@pytest.mark.todo("task 6")
@pytest.mark.core  # task 6's trap: the head axis before T
def test_head_i_owns_columns_i_times_d_head(attention):
    """Head i is columns [i*d_head, (i+1)*d_head) of x: nn.MultiheadAttention's layout."""
    seed_all(0)
    mha = attention.MultiHeadSelfAttention(12, 3)
    x = randn(2, 5, 12, seed=0)  # (B, T, d)
    heads = mha.split_heads(x)  # (B, h, T, d_head)
    for i in range(3):
        expect.equal(
            f"head {i}", heads[:, i], x[..., 4 * i : 4 * (i + 1)], f"x's columns {4 * i}.."
        )


@pytest.mark.todo("task 2")
@pytest.mark.parametrize(
    "mask_shape",
    [(5, 5), (2, 1, 5), (2, 5, 5), (1, 5)],
    ids=["[T, T]", "[B, 1, T] key padding", "[B, T, T]", "[1, T]"],
)
def test_broadcast_mask_equals_expanded_mask(attention, mask_shape):
    """A mask that broadcasts to [B, T, T] gives the same result as the same mask expanded."""
    q, k, v = (randn(2, 5, 4, seed=i) for i in range(3))  # each (B, T, d_head)
    mask = randn(*mask_shape, seed=9) > -0.5  # (mask_shape) bool
    mask[..., 0] = True  # every query keeps at least one key
    out, weights = attention.scaled_dot_product_attention(q, k, v, mask)
    full_out, full_weights = attention.scaled_dot_product_attention(q, k, v, mask.expand(2, 5, 5))
    expect.equal("the output", out, full_out, "the same as with the mask expanded")
    expect.equal("the weights", weights, full_weights, "the same as with the mask expanded")


@pytest.mark.given
@pytest.mark.parametrize("q_width, k_width", [(8, 6), (6, 8)], ids=["q wider", "q narrower"])
def test_mismatched_q_k_widths_raise(attention, q_width, k_width):
    """q and k of different d_head, either way round: ValueError naming both shapes."""
    q, k, v = randn(2, 5, q_width, seed=0), randn(2, 5, k_width, seed=1), randn(2, 5, 6, seed=2)
    want = rf"same width d_head.*\(2, 5, {q_width}\).*\(2, 5, {k_width}\)"
    with pytest.raises(ValueError, match=want):
        attention.scaled_dot_product_attention(q, k, v)


@pytest.mark.given
@pytest.mark.parametrize("T_k, T_v", [(5, 4), (4, 5)], ids=["k longer", "v longer"])
def test_mismatched_k_v_lengths_raise(attention, T_k, T_v):
    """k and v of different lengths T_k, either way round: ValueError naming both shapes."""
    q, k, v = randn(2, 5, 4, seed=0), randn(2, T_k, 4, seed=1), randn(2, T_v, 4, seed=2)
    with pytest.raises(ValueError, match=rf"same length T_k.*\(2, {T_k}, 4\).*\(2, {T_v}, 4\)"):
        attention.scaled_dot_product_attention(q, k, v)


@pytest.mark.given
@pytest.mark.parametrize(
    "shapes",
    [
        ((2, 5, 4), (3, 5, 4), (3, 5, 4)),
        ((2, 5, 4), (1, 5, 4), (1, 5, 4)),  # would broadcast silently without the check
        ((1, 5, 4), (2, 5, 4), (2, 5, 4)),
        ((2, 5, 4), (2, 5, 4), (1, 5, 4)),
        ((2, 3, 5, 4), (2, 1, 5, 4), (2, 1, 5, 4)),  # several heads: h differs
        ((2, 5, 4), (2, 2, 5, 4), (2, 2, 5, 4)),  # k, v have an extra leading dim
    ],
    ids=["q2-k3", "q2-k1", "q1-k2", "v1", "h3-h1", "extra-dim"],
)
def test_mismatched_leading_dims_raise(attention, shapes):
    """q, k, v whose leading (batch, head) dims differ, even if they broadcast: ValueError."""
    q, k, v = (randn(*shape, seed=i) for i, shape in enumerate(shapes))
    got = r".*".join(re.escape(str(shape)) for shape in shapes)
    with pytest.raises(ValueError, match=r"same leading dims \[\.\.\.\].*" + got):
        attention.scaled_dot_product_attention(q, k, v)


@pytest.mark.given
@pytest.mark.parametrize(
    "q_shape, kv_shape",
    [
        ((2, 0, 4), (2, 5, 4)),
        ((2, 5, 4), (2, 0, 4)),
        ((2, 0, 4), (2, 0, 4)),
        ((2, 3, 0, 4), (2, 3, 5, 4)),  # several heads: T is dim -2, not dim 1
        ((2, 3, 5, 4), (2, 3, 0, 4)),
    ],
    ids=["T_q=0", "T_k=0", "both", "heads T_q=0", "heads T_k=0"],
)
def test_empty_sequence_to_sdpa_raises(attention, q_shape, kv_shape):
    """T_q = 0 or T_k = 0 (no query, or no key to attend to): ValueError naming both shapes."""
    q, k, v = randn(*q_shape, seed=0), randn(*kv_shape, seed=1), randn(*kv_shape, seed=2)
    got = re.escape(f"q {q_shape}, k {kv_shape}")
    with pytest.raises(ValueError, match=r"at least one position \(T_q, T_k >= 1\), got " + got):
        attention.scaled_dot_product_attention(q, k, v)


@pytest.mark.given
def test_zero_width_q_k_raise(attention):
    """d_head = 0 (nothing to compare, and 1/sqrt(0) is no scale): ValueError naming the shape."""
    q, k, v = randn(2, 5, 0, seed=0), randn(2, 5, 0, seed=1), randn(2, 5, 4, seed=2)
    with pytest.raises(ValueError, match=r"width d_head >= 1, got q \(2, 5, 0\)"):
        attention.scaled_dot_product_attention(q, k, v)


@pytest.mark.given
@pytest.mark.parametrize("d_model, n_heads", [(10, 3), (8, 3), (16, 5)])
def test_n_heads_must_divide_d_model(attention, d_model, n_heads):
    """n_heads heads of width d_model // n_heads are built; a d_model they do not divide is refused."""
    fits = attention.MultiHeadSelfAttention(4 * n_heads, n_heads)
    expect.equal("n_heads", fits.n_heads, n_heads)
    expect.equal("d_head", fits.d_head, 4)
    expect.shape("in_proj.weight", fits.in_proj.weight, (3 * 4 * n_heads, 4 * n_heads))
    with pytest.raises(ValueError, match=f"divisible.*d_model={d_model}.*n_heads={n_heads}"):
        attention.MultiHeadSelfAttention(d_model, n_heads)


@pytest.mark.given
@pytest.mark.parametrize("mask_shape", [(3, 5), (2, 5, 4), (3, 1, 5)])
def test_mask_that_does_not_broadcast_raises(attention, mask_shape):
    """A mask that cannot broadcast to the [B, T, T] scores: ValueError with both shapes."""
    q, k, v = (randn(2, 5, 4, seed=i) for i in range(3))  # each (B, T, d_head)
    mask = torch.ones(mask_shape, dtype=torch.bool)
    with pytest.raises(
        ValueError, match=r"broadcast to \(2, 5, 5\).*" + re.escape(str(mask_shape))
    ):
        attention.scaled_dot_product_attention(q, k, v, mask)


@pytest.mark.given
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_non_boolean_mask_raises(attention, dtype):
    """A float (additive 0 / -inf) or integer mask is refused, and the message says to pass bool."""
    q, k, v = (randn(2, 5, 4, seed=i) for i in range(3))  # each (B, T, d_head)
    mask = torch.zeros(5, 5, dtype=dtype)
    with pytest.raises(ValueError, match=r"additive float masks .* not accepted, pass a bool mask"):
        attention.scaled_dot_product_attention(q, k, v, mask)


@pytest.mark.given
def test_multi_head_mask_is_checked_against_b_t_t(attention):
    """The module's mask must broadcast to [B, T, T] (the head dim is added inside)."""
    seed_all(0)
    mha = attention.MultiHeadSelfAttention(8, 2)
    x = randn(2, 5, 8, seed=0)  # (B, T, d)
    with pytest.raises(ValueError, match=r"broadcast to \(2, 5, 5\)"):
        mha(x, torch.ones(2, 2, 5, 5, dtype=torch.bool))


@pytest.mark.given
@pytest.mark.parametrize(
    "call",
    [
        "sdpa 1-D q",
        "SelfAttention 2-D x",
        "SelfAttention.project 2-D x",
        "MultiHeadSelfAttention 4-D x",
    ],
)
def test_input_of_wrong_rank_raises(attention, call):
    """Input with the wrong number of dims: ValueError naming the expected layout and the shape."""
    seed_all(0)
    if call == "sdpa 1-D q":
        k = v = randn(5, 4, seed=1)  # (T, d_head)
        want = r"q must have shape \[\.\.\., T, d_head\] \(at least 2 dims\), got shape \(4,\)"
        with pytest.raises(ValueError, match=want):
            attention.scaled_dot_product_attention(randn(4, seed=0), k, v)
    elif call.startswith("SelfAttention"):  # project is called on its own too (the tests do)
        head = attention.SelfAttention(8)
        call_it = head.project if call.startswith("SelfAttention.project") else head
        with pytest.raises(ValueError, match=r"\[B, T, d_model\] \(3 dims\), got shape \(5, 8\)"):
            call_it(randn(5, 8, seed=0))
    else:
        with pytest.raises(ValueError, match=r"\[B, T, d_model\] \(3 dims\).*\(1, 2, 5, 8\)"):
            attention.MultiHeadSelfAttention(8, 2)(randn(1, 2, 5, 8, seed=0))


def layer(attention, module: str) -> torch.nn.Module:
    """A seeded float32 SelfAttention(8) or MultiHeadSelfAttention(8, 2)."""
    seed_all(0)
    if module == "SelfAttention":
        return attention.SelfAttention(8)
    return attention.MultiHeadSelfAttention(8, 2)


MODULES = ["SelfAttention", "MultiHeadSelfAttention"]
TASK = {"SelfAttention": "task 5", "MultiHeadSelfAttention": "task 6"}  # the TODO of each


@pytest.mark.given
@pytest.mark.parametrize("width", [6, 10], ids=["narrower", "wider"])
@pytest.mark.parametrize("module", MODULES)
def test_input_of_wrong_width_raises(attention, module, width):
    """x narrower or wider than d_model: ValueError naming d_model and the shape."""
    with pytest.raises(ValueError, match=rf"d_model=8.*\(2, 5, {width}\)"):
        layer(attention, module)(randn(2, 5, width, seed=0))


@pytest.mark.given
@pytest.mark.parametrize("module", MODULES)
def test_empty_sequence_to_a_module_raises(attention, module):
    """x with T = 0 positions: ValueError naming the shape."""
    with pytest.raises(ValueError, match=r"at least one position T >= 1, got shape \(2, 0, 8\)"):
        layer(attention, module)(torch.zeros(2, 0, 8))


@pytest.mark.given
@pytest.mark.parametrize(
    "x_dtype, layer_dtype",
    [
        (torch.float64, torch.float32),
        (torch.float32, torch.float64),
        (torch.float16, torch.float32),
    ],
    ids=["float64 x", "float64 layer", "float16 x"],
)
@pytest.mark.parametrize("module", MODULES)
def test_input_of_another_dtype_than_the_weights_raises(attention, module, x_dtype, layer_dtype):
    """x whose dtype is not the weights': ValueError naming both dtypes (not a matmul error)."""
    x = randn(2, 5, 8, seed=0, dtype=x_dtype)  # (B, T, d)
    want = rf"layer's dtype {re.escape(str(layer_dtype))}, got dtype {re.escape(str(x_dtype))}"
    with pytest.raises(ValueError, match=want):
        layer(attention, module).to(layer_dtype)(x)


@pytest.mark.parametrize(
    "module", [pytest.param(m, marks=pytest.mark.todo(TASK[m])) for m in MODULES]
)
def test_float64_input_to_a_float64_module_is_accepted(attention, module):
    """The dtype check compares with the weights, not with float32: float64 throughout works."""
    out, weights = layer(attention, module).double()(randn(2, 5, 8, seed=0, dtype=torch.float64))
    expect.equal(
        "the output's and the weights' dtypes", (out.dtype, weights.dtype), (torch.float64,) * 2
    )


@pytest.mark.given
def test_split_heads_refuses_input_that_is_not_b_t_d_model(attention):
    """split_heads checks its input as the module does: [B, T, d_model] of the weights' dtype."""
    mha = attention.MultiHeadSelfAttention(12, 3)
    with pytest.raises(ValueError, match=r"d_model=12, got shape \(2, 5, 10\)"):
        mha.split_heads(randn(2, 5, 10, seed=0))


@pytest.mark.given
@pytest.mark.parametrize(
    "shape",
    [(2, 3, 12), (2, 2, 5, 4), (2, 3, 5, 3), (2, 3, 5, 5), (2, 3, 5, 4, 1)],
    ids=["3-D", "h=2", "d_head=3", "d_head=5", "5-D"],
)
def test_merge_heads_refuses_a_wrong_shape(attention, shape):
    """merge_heads of anything but [B, h, T, d_head] = [B, 3, T, 4]: ValueError with the shape."""
    mha = attention.MultiHeadSelfAttention(12, 3)
    want = r"\[B, h, T, d_head\] \(4 dims\)" if len(shape) != 4 else r"\[B, 3, T, 4\]"
    with pytest.raises(ValueError, match=want + ".*" + re.escape(f"got shape {shape}")):
        mha.merge_heads(randn(*shape, seed=0))


@pytest.mark.given
@pytest.mark.parametrize(
    "dtypes",
    [
        (torch.float32, torch.float64, torch.float32),
        (torch.float32, torch.float32, torch.float16),
        (torch.int64, torch.int64, torch.int64),
    ],
    ids=["k float64", "v float16", "all int64"],
)
def test_q_k_v_of_mixed_or_integer_dtypes_raise(attention, dtypes):
    """q, k, v must share one floating-point dtype: ValueError naming the three dtypes."""
    q, k, v = (randn(2, 5, 4, seed=i).to(dtype) for i, dtype in enumerate(dtypes))
    names = r".*".join(re.escape(str(dtype)) for dtype in dtypes)
    with pytest.raises(ValueError, match=r"one floating-point dtype.*" + names):
        attention.scaled_dot_product_attention(q, k, v)


@pytest.mark.todo("task 2")
def test_same_float64_q_k_v_are_accepted(attention):
    """One shared floating-point dtype other than float32 is fine: the output keeps it."""
    q, k, v = (randn(2, 5, 4, seed=i, dtype=torch.float64) for i in range(3))
    out, weights = attention.scaled_dot_product_attention(q, k, v)
    expect.equal(
        "the output's and the weights' dtypes", (out.dtype, weights.dtype), (torch.float64,) * 2
    )


@pytest.mark.given
@pytest.mark.parametrize("module", ["SelfAttention", "MultiHeadSelfAttention"])
def test_integer_module_input_raises(attention, module):
    """Integer x (token ids, say, instead of embeddings): ValueError naming the dtype."""
    seed_all(0)
    layer = (
        attention.SelfAttention(8)
        if module == "SelfAttention"
        else attention.MultiHeadSelfAttention(8, 2)
    )
    x = torch.zeros(2, 5, 8, dtype=torch.int64)  # (B, T, d)
    with pytest.raises(ValueError, match=r"x must be a floating-point tensor.*torch\.int64"):
        layer(x)


@pytest.mark.given
@pytest.mark.parametrize(
    "d_model, d_head, bad",
    [
        (0, None, "d_model"),
        (-4, None, "d_model"),
        (8, 0, "d_head"),
        (8, -2, "d_head"),
        (8.0, 4, "d_model"),
    ],
)
def test_self_attention_sizes_must_be_positive_ints(attention, d_model, d_head, bad):
    """A zero, negative or non-int d_model or d_head: ValueError naming it and the value got."""
    expect.shape(
        "SelfAttention(8, 4).query.weight", attention.SelfAttention(8, 4).query.weight, (4, 8)
    )
    expect.equal("SelfAttention(8).d_head", attention.SelfAttention(8).d_head, 8, "d_model's")
    value = d_model if bad == "d_model" else d_head
    with pytest.raises(
        ValueError, match=rf"{bad} must be a positive int, got {re.escape(repr(value))}"
    ):
        attention.SelfAttention(d_model, d_head)


@pytest.mark.given
@pytest.mark.parametrize(
    "d_model, n_heads, bad",
    [
        (0, 2, "d_model"),
        (-8, 2, "d_model"),
        (8, 0, "n_heads"),
        (8, -2, "n_heads"),
        (8, True, "n_heads"),
    ],
)
def test_multi_head_sizes_must_be_positive_ints(attention, d_model, n_heads, bad):
    """A zero, negative or non-int d_model or n_heads: ValueError naming it and the value got."""
    expect.equal(
        "MultiHeadSelfAttention(8, 2).d_head", attention.MultiHeadSelfAttention(8, 2).d_head, 4
    )
    value = d_model if bad == "d_model" else n_heads
    with pytest.raises(
        ValueError, match=rf"{bad} must be a positive int, got {re.escape(repr(value))}"
    ):
        attention.MultiHeadSelfAttention(d_model, n_heads)
