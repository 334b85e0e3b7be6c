"""Step 5's classic-bug checks: each takes a gpt module, builds a tiny seeded GPT and raises AssertionError on a bug."""

import math

import torch

from common import expect
from common.seeding import generator, seed_all

TINY = dict(V=16, T_max=8, d=32, h=4, n_layer=2)  # small enough that every check takes < 1 s
# Init loss: at init the logits have std about 0.02 * sqrt(d) (weights N(0, 0.02) on a unit-RMS
# vector), so the loss is ln V + sigma^2 / 2 ~ ln V + 0.006 for d = 32, plus the noise of a mean
# over 256 positions (about 0.01): measured ln V + 0.013. 0.05 is well above that; PyTorch's
# default init (measured: logits std 0.56, ln V + 0.12) and a summed loss land outside it.
INIT_LOSS_TOL = 0.05
OVERFIT_STEPS, OVERFIT_LR, OVERFIT_LOSS = 100, 1e-2, 0.01  # measured: 5e-4 after 100 steps


def tiny(gpt, seed=0, **sizes):
    """A seeded GPT of the TINY sizes (or `sizes` instead)."""
    seed_all(seed)
    return gpt.GPT(**(TINY | sizes))


def random_ids(B, T, V, seed):
    """(B, T) token ids drawn uniformly from [0, V) with their own generator."""
    return torch.randint(V, (B, T), generator=generator(seed))


def count(module):
    """Trainable numbers of a module, each shared tensor once (as an optimiser sees them)."""
    return sum(p.numel() for p in module.parameters())


def assert_parameter_count(gpt):
    """Built models have the README's number of parameters, for several sizes."""
    assert gpt.n_params(16, 8, 32, 2) == 26496, "the formula: 2Vd + T_max d + L(12d^2 + 9d) + 2d"
    for sizes in (TINY, TINY | dict(n_layer=3), TINY | dict(d=48, h=3, V=20, T_max=5)):
        model = tiny(gpt, **sizes)
        want = gpt.n_params(sizes["V"], sizes["T_max"], sizes["d"], sizes["n_layer"])
        assert count(model) == want, (
            f"GPT({sizes}) has {count(model)} parameters, the formula gives {want}: "
            f"{count(model) - want:+d}"
        )
        d = sizes["d"]
        block = model.blocks[0]
        assert count(block.attn) == 4 * d * d, "attention: h heads of 3 d x d_head, proj d x d"
        assert count(block.mlp) == 8 * d * d + 5 * d, "MLP: d x 4d + 4d and 4d x d + d"


def assert_init_loss_is_ln_V(gpt):
    """An untrained GPT predicts nearly uniformly: its mean loss is within INIT_LOSS_TOL of ln V."""
    model = tiny(gpt)
    V = TINY["V"]
    idx = random_ids(32, TINY["T_max"] + 1, V, seed=1)  # (32, 9)
    with torch.no_grad():
        _, loss = model(idx[:, :-1], idx[:, 1:])
    assert loss.dim() == 0, f"the loss must be one number (a 0-dim tensor), got {tuple(loss.shape)}"
    assert abs(loss.item() - math.log(V)) < INIT_LOSS_TOL, (
        f"loss at init {loss.item():.3f}, ln V = {math.log(V):.3f}"
    )


def assert_overfits_one_batch(gpt):
    """OVERFIT_STEPS of AdamW on one batch of 8 sequences drive its loss below OVERFIT_LOSS."""
    model = tiny(gpt, V=8, n_layer=1)
    idx = random_ids(8, 9, 8, seed=1)  # (8, 9)
    idx[:, 0] = torch.arange(8)  # distinct first ids: every prefix is unique, so all can be learned
    x, y = idx[:, :-1], idx[:, 1:]  # (8, 8) each
    opt = torch.optim.AdamW(model.parameters(), lr=OVERFIT_LR)
    for _ in range(OVERFIT_STEPS):
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    assert loss.item() < OVERFIT_LOSS, (
        f"loss {loss.item():.3f} after {OVERFIT_STEPS} steps on one batch; a GPT memorises it"
    )


def assert_zeroed_branches_give_the_embedding_back(gpt):
    """With every branch's last projection zero, the blocks return the embedding bit for bit."""
    model = tiny(gpt)
    idx = random_ids(4, TINY["T_max"], TINY["V"], seed=1)  # (4, 8)
    with torch.no_grad():
        for block in model.blocks:
            block.attn.proj.weight.zero_()
            block.mlp.proj.weight.zero_()
            block.mlp.proj.bias.zero_()
        x = model.tok_emb(idx) + model.pos_emb(torch.arange(idx.shape[1]))  # (4, 8, d)
        assert torch.equal(model.blocks(x), x), "x + 0 is x: the residual stream must pass through"
        logits, _ = model(idx)
        assert torch.equal(logits, model.lm_head(model.ln_f(x))), "logits = lm_head(ln_f(x))"


def assert_positions_matter(gpt):
    """One token repeated: only the positional embedding can make the positions' logits differ."""
    model = tiny(gpt)
    idx = torch.full((1, TINY["T_max"]), 3)  # (1, 8)
    with torch.no_grad():
        logits, _ = model(idx)  # (1, 8, V)
    spread = (logits[0] - logits[0, :1]).abs().amax(dim=-1)  # (8,) distance from position 0
    # without positions every position averages copies of one value: equal up to ~1e-7
    assert (spread[1:] > 1e-4).all(), f"logits barely depend on the position: {spread.tolist()}"


def assert_causal_by_perturbation(gpt):
    """Changing token 5 leaves the logits at positions 0-4 bitwise equal and moves 5-7."""
    model = tiny(gpt)
    idx = random_ids(4, TINY["T_max"], TINY["V"], seed=1)  # (4, 8)
    changed = idx.clone()
    changed[:, 5] = (idx[:, 5] + 1) % TINY["V"]
    with torch.no_grad():
        before, _ = model(idx)
        after, _ = model(changed)
    assert torch.equal(before[:, :5], after[:, :5]), "positions 0-4 must not see token 5 at all"
    moved = (before[:, 5:] - after[:, 5:]).abs().amax(dim=-1)  # (4, 3)
    assert (moved > 1e-6).all(), "positions 5-7 should see token 5"


def assert_causal_by_gradient(gpt):
    """d logits[0, 3] / d (position embedding j) is exactly zero for j > 3, nonzero for j <= 3."""
    model = tiny(gpt)
    idx = random_ids(1, TINY["T_max"], TINY["V"], seed=1)  # (1, 8)
    logits, _ = model(idx)
    logits[0, 3].sum().backward()  # position j's embedding row is used at position j only
    g = model.pos_emb.weight.grad  # (T_max, d)
    assert g is not None, "no gradient reaches pos_emb: are the positions added to x?"
    assert torch.equal(g[4:], torch.zeros_like(g[4:])), "logits[0, 3] depend on positions > 3"
    assert (g[:4].abs().sum(dim=-1) > 0).all(), "logits[0, 3] should depend on positions 0..3"


def assert_loss_is_the_next_token_cross_entropy(gpt):
    """loss = mean over (b, t) of -log softmax(logits[b, t])[targets[b, t]], written out by hand."""
    model = tiny(gpt)
    idx = random_ids(4, TINY["T_max"] + 1, TINY["V"], seed=1)  # (4, 9)
    x, y = idx[:, :-1], idx[:, 1:]
    with torch.no_grad():
        model.lm_head.weight.mul_(20)  # logits of size ~1, so a wrong pairing moves the loss
        logits, loss = model(x, y)
    logp = torch.log_softmax(logits, dim=-1)  # (4, 8, V)
    by_hand = -logp.gather(-1, y[..., None]).mean()  # picks logp[b, t, y[b, t]]
    assert loss.dim() == 0 and torch.allclose(loss, by_hand, rtol=0, atol=1e-5), (
        f"loss {loss.item():.4f}, by hand {by_hand.item():.4f}: logits[b, t] predict targets[b, t]"
    )


def assert_generate_crops_the_context(gpt):
    """generate past T_max feeds the model the last T_max ids and draws as the sampling loop says."""
    model = tiny(gpt)
    T_max = TINY["T_max"]
    idx = random_ids(2, T_max - 2, TINY["V"], seed=1)  # (2, 6): grows past T_max while sampling
    out = model.generate(idx, 6, generator=generator(5))
    expect.shape("generate(idx of (2, T_max - 2), 6)", out, (2, T_max + 4))
    expect.equal("its first T_max - 2 columns", out[:, : T_max - 2], idx, "the prompt")
    g, again = generator(5), idx
    with torch.no_grad():
        for _ in range(6):  # the loop written out: crop, last position, softmax, one draw
            logits, _ = model(again[:, -T_max:])
            probs = torch.softmax(logits[:, -1, :], dim=-1)  # (2, V)
            again = torch.cat((again, torch.multinomial(probs, 1, generator=g)), dim=1)
    assert torch.equal(out, again), f"generate gave {out.tolist()}, the loop {again.tolist()}"


def assert_generate_samples_the_softmax(gpt):
    """Many draws from one context follow softmax(logits / temperature) of its last position."""
    model = tiny(gpt)
    with torch.no_grad():
        model.lm_head.weight.mul_(40)  # peaked logits, so sampling, argmax and temperature differ
        context = random_ids(1, 3, TINY["V"], seed=1)  # (1, 3)
        logits, _ = model(context)
    N = 4000
    for temperature in (1.0, 0.5):
        p = torch.softmax(logits[0, -1] / temperature, dim=-1)  # (V,)
        drawn = model.generate(context.expand(N, 3), 1, temperature, generator(7))[:, -1]  # (N,)
        freq = torch.bincount(drawn, minlength=TINY["V"]) / N  # (V,)
        # five standard errors of a frequency, sqrt(p (1 - p) / N), plus a floor for p ~ 0
        tol = 5 * (p * (1 - p) / N).sqrt() + 1e-3
        assert ((freq - p).abs() <= tol).all(), (
            f"temperature {temperature}: drawn frequencies {freq.tolist()} against softmax "
            f"{p.tolist()}"
        )


# name -> check, in the order of tests/test_checks.py: the first of them a curated bug fails is
# the one that names it (python -m tools.symptoms runs test_checks.py first)
CHECKS = {
    f.__name__.removeprefix("assert_"): f
    for f in (
        assert_parameter_count,
        assert_init_loss_is_ln_V,
        assert_overfits_one_batch,
        assert_positions_matter,
        assert_zeroed_branches_give_the_embedding_back,
        assert_causal_by_perturbation,
        assert_causal_by_gradient,
        assert_loss_is_the_next_token_cross_entropy,
        assert_generate_samples_the_softmax,
        assert_generate_crops_the_context,
    )
}
