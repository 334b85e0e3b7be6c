"""lab-01's contracts at sizes and seeds the visible tests never use, each against torch's own
computation: the grade runs these beside an instructor's own held-out tests, so a TODO right only at
the visible tests' inputs fails here."""

import math

import pytest
import torch
import torch.nn.functional as F

from common import expect


def rand(*shape: int, seed: int) -> torch.Tensor:
    """Seeded float64 normal entries, from a generator of its own."""
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@pytest.mark.todo("task 1")
@pytest.mark.core  # the contract itself, at other inputs: as core as the visible test of it
def test_stable_softmax_is_torchs_on_another_shape_and_axis(attention):
    x = rand(3, 7, 11, seed=8101) * 400  # (3, 7, 11): entries past exp's float64 range
    x[1, 2] = float("-inf")  # one row blocked whole
    got = attention.stable_softmax(x, dim=1)  # (3, 7, 11)
    want = F.softmax(x, dim=1).nan_to_num(0.0)  # (3, 7, 11)
    expect.close("stable_softmax(x, dim=1) of (3, 7, 11)", got, want, 1e-12)


@pytest.mark.todo("task 2")
@pytest.mark.core
def test_attention_is_torchs_with_another_mask_and_size(attention):
    q, k, v = rand(2, 5, 9, seed=8201), rand(2, 13, 9, seed=8202), rand(2, 13, 6, seed=8203)
    mask = rand(2, 5, 13, seed=8204) > -0.5  # (2, 5, 13) bool, True keeps a key
    mask[0, 3] = False  # one query blocked whole: its weights are 0
    out, weights = attention.scaled_dot_product_attention(q, k, v, mask)
    scores = (q @ k.transpose(-2, -1) / math.sqrt(9)).masked_fill(~mask, float("-inf"))
    want = F.softmax(scores, dim=-1).nan_to_num(0.0)  # (2, 5, 13)
    expect.close("the weights of (2, 5, 9) queries on 13 keys", weights, want, 1e-12)
    expect.close("the output", out, want @ v, 1e-12)


@pytest.mark.todo("task 3")
@pytest.mark.core
@pytest.mark.parametrize("T", [1, 23])
def test_causal_mask_is_the_lower_triangle_at_another_size(attention, T):
    expect.equal(f"causal_mask({T})", attention.causal_mask(T), torch.ones(T, T).tril().bool())


@pytest.mark.todo("task 4")
@pytest.mark.core
def test_combined_mask_is_causal_and_real_keys_at_another_size(attention):
    causal = torch.ones(9, 9).tril().bool()  # (9, 9)
    padding = rand(4, 9, seed=8401) > 0  # (4, 9) bool, True marks a real token
    got = attention.combine_causal_and_padding(causal, padding)
    expect.equal("the combined mask of B=4, T=9", got, causal[None] & padding[:, None, :])


@pytest.mark.todo("task 5")
@pytest.mark.core
def test_a_head_is_attention_of_its_own_projections_at_another_size(attention):
    torch.manual_seed(8501)
    head = attention.SelfAttention(10, 6).double()
    x, mask = rand(3, 8, 10, seed=8502), torch.ones(8, 8).tril().bool()  # (3, 8, 10), (8, 8)
    out, weights = head(x, mask)
    q, k, v = head.query(x), head.key(x), head.value(x)  # (3, 8, 6) each
    scores = (q @ k.transpose(-2, -1) / math.sqrt(6)).masked_fill(~mask, float("-inf"))
    want = F.softmax(scores, dim=-1)  # (3, 8, 8)
    expect.close("a head's weights, d_model=10, d_head=6", weights, want, 1e-12)
    expect.close("a head's output", out, want @ v, 1e-12)


@pytest.mark.todo("task 6")
@pytest.mark.core
def test_multi_head_attention_is_torchs_at_another_size(attention):
    torch.manual_seed(8601)
    mine = attention.MultiHeadSelfAttention(12, 3).double()
    theirs = torch.nn.MultiheadAttention(12, 3, bias=False, batch_first=True).double()
    with torch.no_grad():
        theirs.in_proj_weight.copy_(mine.in_proj.weight)
        theirs.out_proj.weight.copy_(mine.out_proj.weight)
    x, mask = rand(2, 7, 12, seed=8602), torch.ones(7, 7).tril().bool()  # (2, 7, 12), (7, 7)
    out, weights = mine(x, mask)
    want, want_weights = theirs(x, x, x, attn_mask=~mask, average_attn_weights=False)
    expect.close("multi-head attention of d_model=12, 3 heads", out, want, 1e-10)
    expect.close("its weights, (B, h, T, T)", weights, want_weights, 1e-10)


@pytest.mark.todo("task 7")
@pytest.mark.core
def test_future_leak_counts_every_nonzero_weight_above_the_diagonal(wrong_mask):
    weights = torch.zeros(2, 3, 6, 6, dtype=torch.float64)  # (2, 3, 6, 6)
    weights[0, 1, 2, 5], weights[1, 2, 0, 1], weights[1, 0, 4, 5] = 1e-30, -0.25, 0.5
    weights[0, 0, 3, 3] = 0.9  # the diagonal: no leak
    count, largest = wrong_mask.future_leak(weights)
    expect.equal("future_leak's (count, largest) of 3 leaks", (count, largest), (3, 0.5))
