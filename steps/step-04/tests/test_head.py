"""Step 4's head (4.1, 4.2), smoothing weights (4.4) and online softmax: shapes, proved properties, errors.

Tests marked `given` call only code the starter gives (constructor and argument checks): they pass
on the untouched starter.
"""

import math
import re

import pytest
import torch

from common import expect
from common.seeding import randn, seed_all

B, T, D, D_HEAD = 4, 8, 32, 16  # the 4.2 setting: x of shape (4, 8, 32), Head(32, 16, T_max=8)
# A row sum adds T float32 weights; each weight carries a rounding error of about eps/2 from the
# exp and the division, and each addition adds another: T * eps (about 1e-6 for T = 8) bounds the
# total, while the typical error measured is about 1e-7.
ROW_SUM_TOL = T * torch.finfo(torch.float32).eps
# Two float32 computations of the same O(1) quantity that sum in different orders: 1e-6, about
# 8 rounding units of 1 (2**-23 ~ 1.2e-7). An absolute bound, so always passed with rtol=0:
# allclose's default rtol=1e-5 would add 1e-5 * |value| and make it about 1e-5 in effect.
FLOAT32_TOL = 1e-6


def make(head, seed=0, T_max=T):
    """A seeded Head(32, 16, T_max) and a seeded x of shape (4, 8, 32)."""
    seed_all(seed)
    return head.Head(D, D_HEAD, T_max=T_max), randn(B, T, D, seed=seed + 100)


@pytest.mark.todo("4.1")
def test_shapes_parameters_and_stashed_attention(head):
    h, x = make(head)
    out = h(x)
    expect.shape("the output", out, (B, T, D_HEAD), "(B, T, d_head)")
    expect.shape("self.A", h.A, (B, T, T), "(B, T, T)")
    expect.equal("self.A.requires_grad", h.A.requires_grad, False, "keep A.detach() in self.A")
    names = sorted(name for name, _ in h.named_parameters())
    expect.equal("the head's parameters", names, ["key.weight", "query.weight", "value.weight"])
    buffers = sorted(dict(h.named_buffers()))  # a buffer: saved and moved, never trained
    expect.equal(
        "'tril' among the head's buffers", "tril" in buffers, True, f"its buffers are {buffers}"
    )


@pytest.mark.todo("4.1")
@pytest.mark.core  # 4.1's trap: -inf before the softmax, not 0 after
def test_rows_are_in_the_simplex(head):
    h, x = make(head)
    h(x)
    A = h.A
    expect.at_least("the attention weights", A, 0.0, "negative (or nan) attention weights")
    expect.close("the row sums of A", A.sum(dim=-1), torch.ones(B, T), ROW_SUM_TOL)
    expect.equal(
        "A above the diagonal",
        torch.triu(A, diagonal=1),
        torch.zeros_like(A),
        "weight on future keys",
    )


@pytest.mark.todo("4.1")
def test_first_position_sees_only_itself(head):
    h, x = make(head)
    out = h(x)
    expect.equal("A[:, 0, 0]", h.A[:, 0, 0], torch.ones(B), "a single key gets all of the weight")
    expect.close(
        "the output at position 0", out[:, 0], h.value(x)[:, 0], FLOAT32_TOL, "its own value"
    )


@pytest.mark.todo("4.1")
def test_output_stays_in_the_convex_hull_of_the_values(head):
    h, x = make(head)
    out = h(x).detach()
    v = h.value(x).detach()  # (B, T, d_head)
    for i in range(T):
        # a convex combination of v_0..v_i lies inside their bounding box, coordinate by coordinate
        low, high = v[:, : i + 1].amin(dim=1), v[:, : i + 1].amax(dim=1)  # (B, d_head)
        expect.at_least(f"out[:, {i}] - min(v[:, :{i + 1}])", out[:, i] - low, -FLOAT32_TOL)
        expect.at_most(f"out[:, {i}] - max(v[:, :{i + 1}])", out[:, i] - high, FLOAT32_TOL)


@pytest.mark.todo("4.1")
@pytest.mark.core  # 4.1's property: causal
def test_causality_by_perturbation(head):
    h, x = make(head)
    out = h(x)
    x2 = x.clone()
    x2[:, 5, :] = randn(B, D, seed=7)  # an arbitrary change at position 5
    out2 = h(x2)
    why = "positions 0-4 must not see position 5 at all"
    expect.equal("outputs 0-4 once x[:, 5] changed", out2[:, :5], out[:, :5], why)
    for i in range(5, T):
        moved = (out[:, i] - out2[:, i]).abs().max()  # O(1), not rounding: measured 0.3 to 0.5
        expect.at_least(
            f"max |change| of output {i}",
            moved.item(),
            FLOAT32_TOL,
            f"position {i} should see position 5",
        )


@pytest.mark.todo("4.1")
def test_causality_by_gradient(head):
    h, x = make(head)
    x.requires_grad_(True)
    out = h(x)
    out[0, 3].sum().backward()  # d(sum of the d_head outputs at batch 0, position 3) / dx
    g = x.grad  # (B, T, d)
    expect.equal(
        "d out[0, 3] / d x[0, 4:]",
        g[0, 4:],
        torch.zeros_like(g[0, 4:]),
        "out[0, 3] depends on x[0, j > 3]",
    )
    reach = g[0, :4].abs().sum(dim=-1)  # (4,) how much out[0, 3] depends on each earlier x
    expect.between(
        "the smallest sum |d out[0, 3] / d x[0, j]|, j <= 3",
        reach.min().item(),
        0,
        math.inf,
        "out[0, 3] should depend on x[0, 0..3]",
    )
    expect.equal(
        "d out[0, 3] / d x[1:]", g[1:], torch.zeros_like(g[1:]), "batch elements must not mix"
    )


@pytest.mark.todo("4.1")
@pytest.mark.core  # 4.1's trap: tril cut to [:T, :T]
def test_a_shorter_sequence_gives_the_same_prefix(head):
    h, x = make(head)
    out = h(x)
    short = h(x[:, :5])  # T = 5 < T_max = 8
    expect.shape("the output of a 5-token x", short, (B, 5, D_HEAD))
    expect.shape("self.A of a 5-token x", h.A, (B, 5, 5))
    # causality again: the first 5 outputs cannot depend on whether positions 5-7 exist
    expect.close(
        "the output of x[:, :5]", short, out[:, :5], FLOAT32_TOL, "the first 5 outputs of x"
    )


@pytest.mark.todo("4.1")
@pytest.mark.core  # 4.1's parity
def test_attention_matches_the_formula(head):
    h, x = make(head)
    out = h(x)
    with torch.no_grad():  # softmax(mask(q k^T / sqrt(d_head))) v, written out independently
        q, k, v = x @ h.query.weight.T, x @ h.key.weight.T, x @ h.value.weight.T
        scores = torch.einsum("bid,bjd->bij", q, k) / math.sqrt(D_HEAD)
        future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
        A = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    expect.close("self.A", h.A, A, FLOAT32_TOL, "softmax(mask(q k^T / sqrt(d_head)))")
    expect.close("the output", out, A @ v, FLOAT32_TOL, "A @ v")


@pytest.mark.todo("4.1")
def test_scores_are_divided_by_sqrt_d_head(head):
    h = head.Head(4, 4, T_max=2)
    with torch.no_grad():
        for linear in (h.query, h.key, h.value):
            linear.weight.copy_(torch.eye(4))
    x = torch.tensor([[[0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]]])  # (1, 2, 4)
    h(x)
    # row 1 scores: x1.x0 = 0 and x1.x1 = 4, divided by sqrt(4) = 2
    expected = torch.softmax(torch.tensor([0.0, 2.0]), dim=0)
    unscaled = torch.softmax(torch.tensor([0.0, 4.0]), dim=0)
    assert torch.allclose(h.A[0, 1], expected, rtol=0, atol=FLOAT32_TOL), (
        f"got {h.A[0, 1].tolist()}; without the 1/sqrt(d_head) it would be {unscaled.tolist()}"
    )


@pytest.mark.todo("4.1")
def test_gradients_reach_the_three_weight_matrices(head):
    h, x = make(head)
    h(x).sum().backward()
    for name in ("query", "key", "value"):
        assert getattr(h, name).weight.grad.abs().sum() > 0, f"no gradient reaches {name}"


@pytest.mark.given
@pytest.mark.parametrize(
    "shape, message",
    [
        ((1, 9, D), r"sequence length T=9 exceeds T_max=8"),
        ((1, 8, 31), r"x has width d=31, but this head was built for d=32"),
        ((8, D), r"3 dims, got \(8, 32\)"),
        ((1, 1, 8, D), r"3 dims, got \(1, 1, 8, 32\)"),
    ],
    ids=["too-long", "wrong-width", "no-batch-axis", "extra-axis"],
)
def test_bad_input_is_refused_with_a_clear_message(head, shape, message):
    h, _ = make(head)
    with pytest.raises(ValueError, match=message):
        h(torch.zeros(shape))


@pytest.mark.given  # attention_scores is given code: the scale check's raw material
def test_attention_scores_with_and_without_the_scaling(head):
    q, k = randn(2, 3, 16, seed=1), randn(2, 3, 16, seed=2)
    raw = head.attention_scores(q, k, scale=False)
    # |q.k| reaches about 6 here, where one float32 rounding unit is 4.8e-7, and the two sides
    # may add their 16 products in different orders: 1e-5 leaves room for about 20 units.
    expect.close("attention_scores(scale=False)", raw, torch.einsum("bid,bjd->bij", q, k), 1e-5)
    scaled = head.attention_scores(q, k)
    # dividing by 4 = sqrt(16) is exact in float32, so only a differently rounded product differs
    expect.close(
        "attention_scores(q, k)", scaled, raw / 4, FLOAT32_TOL, "the raw scores / sqrt(16)"
    )


@pytest.mark.todo("4.2.4")
@pytest.mark.core  # 4.2.4's parity, and its trap: the axis
def test_score_stats_measures_the_spread_and_the_saturation(head):
    """Your scale check: stds of q k^T with and without 1/sqrt(d_k), and the mean row max."""
    q, k = randn(8, 8, 64, seed=1), randn(8, 8, 64, seed=2)  # (B, T, d_k) iid N(0, 1)
    raw = torch.einsum("bid,bjd->bij", q, k)  # (B, T, T) written out independently
    expected = [raw.std(), (raw / 8).std()]
    expected += [torch.softmax(s, dim=-1).max(dim=-1).values.mean() for s in (raw, raw / 8)]
    stats = head.score_stats(q, k)
    labels = ("raw std", "scaled std", "raw mean row max", "scaled mean row max")
    expect.equal("score_stats' types", [type(s) for s in stats], [float] * len(labels))
    # a std of about 8 (or 1) and a mean of 64 maxima: 1e-4 is far below a wrong axis or scale
    expect.members("score_stats", stats, [e.item() for e in expected], labels, atol=1e-4)
    # unscaled rows near one-hot, scaled ones not
    expect.at_least("score_stats' raw mean row max", stats[2], 0.8, "near one-hot")
    expect.at_most("score_stats' scaled mean row max", stats[3], 0.5, "far from one-hot")


@pytest.mark.given
@pytest.mark.parametrize(
    "dtype, message",
    [
        (torch.float64, r"x has dtype torch\.float64, but this head's weights are torch\.float32"),
        (torch.int64, r"x has dtype torch\.int64, but this head's weights are torch\.float32"),
    ],
    ids=["float64", "int64"],
)
def test_input_of_another_dtype_is_refused(head, dtype, message):
    h, x = make(head)
    with pytest.raises(ValueError, match=message):
        h(x.to(dtype))


@pytest.mark.given
def test_an_empty_sequence_is_refused(head):
    h, x = make(head)
    with pytest.raises(ValueError, match=r"sequence length T=0"):
        h(x[:, :0])  # (4, 0, 32)


@pytest.mark.given
@pytest.mark.parametrize(
    "sizes, message",
    [
        ((D, D_HEAD, 0), r"T_max must be a positive int, got 0"),
        ((D, 0, T), r"d_head must be a positive int, got 0"),
        ((-1, D_HEAD, T), r"d must be a positive int, got -1"),
        ((D, D_HEAD, 8.0), r"T_max must be a positive int, got 8\.0"),
    ],
    ids=["T_max=0", "d_head=0", "d=-1", "float-T_max"],
)
def test_bad_sizes_are_refused_when_the_head_is_built(head, sizes, message):
    h = head.Head(D, D_HEAD, T_max=T)  # valid sizes are built, down to 1
    expect.shape("tril", h.tril, (T, T))
    expect.shape("query.weight", h.query.weight, (D_HEAD, D))
    expect.equal("A before the first forward", h.A, None)
    expect.shape("Head(1, 1, T_max=1).tril", head.Head(1, 1, T_max=1).tril, (1, 1))
    with pytest.raises(ValueError, match=message):
        head.Head(*sizes)


@pytest.mark.todo("4.4")
def test_smoothing_weights_of_one_position_is_one(head):
    """T = 1: the only position attends to itself with weight 1, whatever the bandwidth."""
    expect.equal("smoothing_weights(1, 0.5)", head.smoothing_weights(1, 0.5), torch.ones(1, 1))


@pytest.mark.given
@pytest.mark.parametrize(
    "length, s, message",
    [
        (0, 1.0, r"T must be a positive int, got 0"),
        (-2, 1.0, r"T must be a positive int, got -2"),
        (4.0, 1.0, r"T must be a positive int, got 4\.0"),
        (True, 1.0, r"T must be a positive int, got True"),
        (4, 0, r"s must be a finite number > 0, got 0"),
        (4, -1.5, r"s must be a finite number > 0, got -1\.5"),
        (4, math.inf, r"s must be a finite number > 0, got inf"),
        (4, math.nan, r"s must be a finite number > 0, got nan"),
        (4, "2", r"s must be a finite number > 0, got '2'"),
        (4, True, r"s must be a finite number > 0, got True"),
    ],
    ids=["T=0", "T<0", "float-T", "bool-T", "s=0", "s<0", "s=inf", "s=nan", "str-s", "bool-s"],
)
def test_smoothing_weights_refuses_bad_arguments(head, length, s, message):
    with pytest.raises(ValueError, match=message):
        head.smoothing_weights(length, s)


@pytest.mark.todo("optional 1")
def test_online_softmax_of_very_negative_or_single_scores(head):
    """Scores near -1000 (exp underflows to 0 unless shifted by their own max), and one key only."""
    scores = 3 * randn(4, 8, seed=3) - 1000  # (4, 8)
    assert (scores.exp() == 0).all()  # why the running max must start at -inf, not at 0
    online = head.online_softmax(scores)
    expect.close(
        "online_softmax of scores near -1000", online, torch.softmax(scores, dim=-1), FLOAT32_TOL
    )
    one = head.online_softmax(randn(3, 1, seed=4))
    expect.equal("online_softmax of one key", one, torch.ones(3, 1))


@pytest.mark.todo("optional 2")
def test_online_attention_with_very_negative_scores_averages_the_past(head):
    """Every score -200 (exp underflows): each query weighs keys 0..i equally, the prefix mean."""
    q = -100 * torch.ones(2, 5, 4)  # (B, T, d_k): q . k_j / sqrt(4) = -200 for every key
    k = torch.ones(2, 5, 4)  # (B, T, d_k)
    v = randn(2, 5, 3, seed=5)  # (B, T, d_v)
    prefix_mean = v.cumsum(dim=1) / torch.arange(1, 6)[None, :, None]  # (B, T, d_v)
    out = head.online_attention(q, k, v)  # (B, T, d_v)
    expect.close("online_attention", out, prefix_mean, FLOAT32_TOL, "the mean of v over keys 0..i")


@pytest.mark.given
@pytest.mark.parametrize(
    "first, message",
    [
        (float("-inf"), r"first score must be finite, got 1 of 3 rows"),
        (float("inf"), r"first score must be finite, got 1 of 3 rows"),
        (float("nan"), r"first score must be finite, got 1 of 3 rows"),
    ],
    ids=["-inf", "inf", "nan"],
)
def test_online_softmax_refuses_a_row_whose_first_key_is_not_finite(head, first, message):
    """A row with no allowed key (all -inf) has no softmax: refused, as the docstring says."""
    scores = randn(3, 4, seed=0)  # (3, 4)
    scores[1, 0] = first
    if first == float("-inf"):
        scores[1] = first  # the whole row blocked: no allowed key
    with pytest.raises(ValueError, match=message):
        head.online_softmax(scores)


@pytest.mark.given
@pytest.mark.parametrize("shape", [(3, 0), ()], ids=["no keys", "0-dim"])
def test_online_softmax_refuses_scores_without_keys(head, shape):
    with pytest.raises(ValueError, match=rf"at least one key, got shape {re.escape(str(shape))}"):
        head.online_softmax(torch.zeros(shape))
