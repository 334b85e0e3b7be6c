"""PyTorch parity: our attention against F.scaled_dot_product_attention and nn.MultiheadAttention."""

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from common import expect
from common.seeding import randn, seed_all

# Thresholds live in experiments.py next to their reasons (the handout's table uses the same ones):
# SINGLE_HEAD_TOL = 1e-6, a few float32 rounding units of outputs of size ~1, vs SDPA's MATH backend;
# MULTI_HEAD_TOL = 2e-5, rounding through three chained matmuls vs nn.MultiheadAttention.

SHAPES = [(1, 1, 4), (2, 8, 16), (2, 4, 6, 8)]  # [B, T, d_head] and [B, h, T, d_head]
SHAPE_IDS = ["B1-T1", "B2-T8", "B2-h4-T6"]


@pytest.mark.todo("task 2")
@pytest.mark.core  # task 2's parity
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_unmasked_matches_sdpa(attention, runner, shape, seed):
    """No mask: our output equals F.scaled_dot_product_attention's within SINGLE_HEAD_TOL."""
    diff = runner.diff_single_head(attention, shape, seed)
    expect.at_most("max |yours - SDPA|", diff, runner.SINGLE_HEAD_TOL)


@pytest.mark.todo("task 3")
@pytest.mark.core  # task 3's parity
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_causal_mask_matches_sdpa_is_causal(attention, runner, shape, seed):
    """causal_mask(T) gives the same output as SDPA's own is_causal=True."""
    diff = runner.diff_causal(attention, shape, seed)
    expect.at_most("max |yours - SDPA is_causal|", diff, runner.SINGLE_HEAD_TOL)


@pytest.mark.todo("task 2")
@pytest.mark.core  # task 2's trap: a fill of 0 is an ordinary score
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_boolean_padding_mask_matches_sdpa_attn_mask(attention, runner, shape, seed):
    """The same boolean key-padding mask means the same thing to both (True = may attend)."""
    diff = runner.diff_padding(attention, shape, seed)
    expect.at_most("max |yours - SDPA attn_mask|", diff, runner.SINGLE_HEAD_TOL)


@pytest.mark.todo("task 2")
@pytest.mark.core  # task 2's trap: d_model never enters the scale
def test_explicit_scale_matches_sdpa_scale(attention, runner):
    """scale= replaces the default 1/sqrt(d_head), exactly as SDPA's scale= does."""
    q, k, v = (randn(2, 5, 8, seed=i) for i in range(3))  # each (B, T, d_head)
    ours, _ = attention.scaled_dot_product_attention(q, k, v, scale=0.9)
    with sdpa_kernel(backends=[SDPBackend.MATH]):
        expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=0.9)
    expect.close(
        "your output with scale=0.9, against SDPA's", ours, expected, runner.SINGLE_HEAD_TOL
    )


@pytest.mark.todo("task 5")
@pytest.mark.core  # task 5's parity, and its trap: k from self.query
def test_self_attention_is_sdpa_of_its_projections(attention, runner):
    """SelfAttention(x) equals SDPA applied to its own q, k, v projections."""
    seed_all(0)
    head = attention.SelfAttention(16, 8)
    x = randn(2, 6, 16, seed=0)  # (B, T, d)
    with torch.no_grad():
        q = x @ head.query.weight.T  # (B, T, d) @ (d, d_head) -> (B, T, d_head)
        k = x @ head.key.weight.T  # (B, T, d) @ (d, d_head) -> (B, T, d_head)
        v = x @ head.value.weight.T  # (B, T, d) @ (d, d_head) -> (B, T, d_head)
        out, _ = head(x, attention.causal_mask(6))
    expected = runner.reference_sdpa(q, k, v, is_causal=True)
    expect.close("SelfAttention's output, against SDPA's", out, expected, runner.SINGLE_HEAD_TOL)


@pytest.mark.todo("task 6")
@pytest.mark.core  # task 6's parity
@pytest.mark.parametrize("causal", [False, True], ids=["no-mask", "causal"])
@pytest.mark.parametrize("d_model, n_heads", [(16, 4), (24, 3), (8, 1)])
def test_multi_head_matches_nn_multihead_attention(attention, runner, d_model, n_heads, causal):
    """Weights copied from nn.MultiheadAttention: same output within MULTI_HEAD_TOL."""
    diff = runner.diff_multi_head(attention, 2, 7, d_model, n_heads, seed=3, causal=causal)
    expect.at_most("max |yours - nn.MultiheadAttention|", diff, runner.MULTI_HEAD_TOL)


@pytest.mark.todo("task 6")
def test_multi_head_weights_match_per_head(attention, runner):
    """Per-head attention weights [B, h, T, T] agree with nn.MultiheadAttention's, head by head."""
    ours, ref = runner.multi_head_pair(attention, d_model=16, n_heads=4, seed=0)
    x = randn(2, 6, 16, seed=0)  # (B, T, d)
    mask = attention.causal_mask(6)  # (T, T), True = may attend
    with torch.no_grad():
        _, weights = ours(x, mask)  # (B, h, T, T)
        # nn.MultiheadAttention's boolean mask is the opposite: True = may NOT attend.
        _, expected = ref(x, x, x, attn_mask=~mask, average_attn_weights=False)  # (B, h, T, T)
    expect.shape("your weights", weights, (2, 4, 6, 6))
    expect.close(
        "your weights, against nn.MultiheadAttention's", weights, expected, runner.MULTI_HEAD_TOL
    )


# B == h: a [B, T, T] mask given no head axis still broadcasts against the [B, h, T, T] scores,
# lining sequence b's mask up with head b: silently wrong (0.158 apart here), not an error.
@pytest.mark.todo("task 6")
@pytest.mark.core  # task 6's trap: the mask's head axis
@pytest.mark.parametrize("B", [3, 2], ids=["B3-h2", "B2-h2"])
def test_multi_head_padding_matches_key_padding_mask(attention, runner, B):
    """combine_causal_and_padding equals nn.MultiheadAttention's attn_mask + key_padding_mask."""
    ours, ref = runner.multi_head_pair(attention, d_model=16, n_heads=2, seed=1)
    x = randn(B, 6, 16, seed=1)  # (B, T, d)
    causal, padding = attention.causal_mask(6), runner.padding_mask(B, 6)  # (T, T), (B, T)
    with torch.no_grad():
        out, _ = ours(x, attention.combine_causal_and_padding(causal, padding))  # (B, T, d)
        with sdpa_kernel(backends=[SDPBackend.MATH]):
            expected, _ = ref(
                x, x, x, attn_mask=~causal, key_padding_mask=~padding, need_weights=False
            )
    expect.close(
        "your output, against nn.MultiheadAttention's", out, expected, runner.MULTI_HEAD_TOL
    )


@pytest.mark.todo("task 2")
def test_value_width_may_differ_from_d_head(attention, runner):
    """The default scale is 1/sqrt of the q and k width; v may be wider or narrower."""
    q, k = randn(2, 5, 8, seed=0), randn(2, 5, 8, seed=1)  # (B, T, d_head)
    v = randn(2, 5, 3, seed=2)  # (B, T, d_v) with d_v != d_head
    ours, _ = attention.scaled_dot_product_attention(q, k, v)  # (B, T, d_v)
    expect.shape("your output", ours, (2, 5, 3))
    expect.close(
        "your output, against SDPA's", ours, runner.reference_sdpa(q, k, v), runner.SINGLE_HEAD_TOL
    )
