"""The induction experiment's parts: the repeated-block data, the model, the scores, the ablation."""

import math
from dataclasses import replace

import pytest
import torch

from common.seeding import generator, seed_all


@pytest.fixture
def cfg(induction):
    return induction.InductionConfig(B=256)


@pytest.mark.course
def test_every_sequence_repeats_one_block_at_its_own_length_and_place(induction, cfg):
    x, y, s, L = induction.repeat_batch(cfg, generator(0))
    assert x.shape == y.shape == (cfg.B, cfg.T) and torch.equal(x[:, 1:], y[:, :-1])
    seq = torch.cat([x, y[:, -1:]], dim=1)  # (B, T + 1)
    for b in range(cfg.B):
        sb, Lb = int(s[b]), int(L[b])
        assert cfg.L_min <= Lb <= cfg.L_max and 0 <= sb and sb + 2 * Lb <= cfg.T + 1
        assert torch.equal(seq[b, sb : sb + Lb], seq[b, sb + Lb : sb + 2 * Lb])
    assert len(set(L.tolist())) == cfg.L_max - cfg.L_min + 1, "every block length occurs"
    assert len(set(s.tolist())) > 10 and len(set((s + L).tolist())) > 10, "the repeat moves"


@pytest.mark.course
def test_the_repeat_mask_marks_exactly_the_predictable_targets(induction, cfg):
    x, y, s, L = induction.repeat_batch(cfg, generator(1))
    first, repeat = induction.target_masks(s, L, cfg.T)
    assert torch.equal(repeat.sum(1), L - 1) and torch.equal(first.sum(1), L - 1)
    for b in range(8):
        p = repeat[b].nonzero()[:, 0]  # positions whose target sits in the repeat
        assert torch.equal(y[b, p], x[b, p - L[b] + 1]), (
            "the target is the token after the earlier copy"
        )


@pytest.mark.course
def test_a_block_too_long_for_the_sequence_is_refused(induction, cfg):
    with pytest.raises(ValueError, match="two blocks of L_max = 20 need T \\+ 1 >= 40, got T = 32"):
        induction.repeat_batch(replace(cfg, L_max=20), generator(0))


def perfect_induction(induction, cfg, s, L):
    """A (B, h, T, T) with head 0 on the token after the earlier copy, head 1 on the previous token."""
    B, T = len(s), cfg.T
    A = torch.zeros(B, 2, T, T)
    A[:, 1, 0, 0] = 1
    A[:, 1, torch.arange(1, T), torch.arange(T - 1)] = 1
    for b in range(B):
        for p in range(T):
            inside = s[b] + L[b] <= p < s[b] + 2 * L[b]
            A[b, 0, p, p - L[b] + 1 if inside else p] = 1
    return A


@pytest.mark.course
def test_prefix_matching_and_previous_token_scores_on_built_patterns(induction, cfg):
    _, _, s, L = induction.repeat_batch(replace(cfg, B=8), generator(2))
    A = perfect_induction(induction, cfg, s, L)
    prefix = induction.prefix_matching(A, s, L)
    prev = induction.previous_token(A)
    assert prefix.shape == prev.shape == (2,)
    assert prefix[0] == pytest.approx(1) and prev[1] == pytest.approx(1)
    assert prefix[1] < 0.2, "a previous-token head is not an induction head"
    assert prev[0] < 0.3
    stacked = torch.stack([A, A.flip(1)])  # (n_layer, B, h, T, T)
    assert induction.prefix_matching(stacked, s, L).shape == (2, 2)


@pytest.mark.course
def test_the_model_is_causal_and_an_ablated_head_writes_nothing(induction, cfg):
    small = replace(cfg, B=2, d=16, h=2)
    seed_all(0)
    model = induction.AttentionOnly(small)
    x, y, _, _ = induction.repeat_batch(small, generator(3))
    logits, loss = model(x, y)
    assert logits.shape == (2, small.T, small.V)
    assert abs(loss.item() - math.log(small.V)) < 0.5, "at init the loss is about ln V"
    A = model.patterns()  # (n_layer, B, h, T, T)
    assert A.shape == (2, 2, 2, small.T, small.T) and torch.all(A.triu(1) == 0)
    with torch.no_grad():
        model.attn[0].proj.weight[:, : small.d // 2] = 0  # head 0 of layer 0 projects to nothing
        zeroed = model(x)[0]
        model.attn[0].proj.weight.normal_()
        ablated, both = model(x, ablate=((0, 0),))[0], model(x, ablate=((0, 0), (0, 1)))[0]
        model.attn[0].proj.weight[:, : small.d // 2] = 0
        assert torch.allclose(model(x)[0], ablated, atol=1e-6), (
            "ablation = the head's output set to 0"
        )
    assert not torch.allclose(zeroed, both)


@pytest.mark.todo("task 4")
def test_the_induction_loop_trains_with_your_train_step(induction, train, cfg):
    tiny = replace(cfg, B=8, d=16, h=2, steps=4)
    model, run = induction.train(train.train_step, tiny, every=2)
    assert [c["step"] for c in run["curve"]] == [0, 2, 4]
    assert all(c["first"] > 3 and c["repeat"] > 3 for c in run["curve"]), (
        "4 steps learn nothing yet"
    )
