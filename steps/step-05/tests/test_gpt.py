"""Step 5's five tasks: multi-head attention, the MLP, the block, the GPT and generate; and bad input.

Tests marked `given` call only code the starter gives (constructor and input checks).
"""

import math

import pytest
import torch
import torch.nn as nn

from common import expect
from common.loader import reference
from common.seeding import generator, randn, seed_all

B, T, D, H = 2, 8, 32, 4  # x of shape (2, 8, 32); four heads of d_head = 8
V = 16
# Two float32 computations of the same O(1) quantity summed in different orders: 1e-6 is about 8
# rounding units of 1 (2**-23 ~ 1.2e-7). Absolute, so always with rtol=0.
FLOAT32_TOL = 1e-6
# Outputs after two chained d-long projections (heads, then proj), run by other kernels in another
# order, as lab-01's multi-head parity allows: rounding adds up to a few 1e-7 per product.
CHAINED_TOL = 1e-5


def x_of(seed=100, shape=(B, T, D)):
    """A seeded activation (B, T, d)."""
    return randn(*shape, seed=seed)


def mha(gpt, seed=0, d=D, h=H, T_max=T):
    seed_all(seed)
    return gpt.MultiHeadAttention(d, h, T_max)


def ids(shape, seed=1, high=V):
    """Seeded token ids of `shape` in [0, high)."""
    return torch.randint(high, shape, generator=generator(seed))


# --- task 1: multi-head attention ------------------------------------------------------------


@pytest.mark.todo("task 1")
@pytest.mark.core  # task 1's trap: a plain list
def test_multi_head_attention_holds_h_step_4_heads_and_a_projection(gpt):
    m = mha(gpt)
    expect.equal("heads is an nn.ModuleList", isinstance(m.heads, nn.ModuleList), True)
    expect.equal("len(heads)", len(m.heads), H)
    for i, head in enumerate(m.heads):
        got = (head.d, head.d_head, head.T_max)
        expect.equal(f"head {i}'s (d, d_head, T_max)", got, (D, D // H, T))
    distinct = len({id(head) for head in m.heads})
    expect.equal("distinct heads", distinct, H, "h different heads, not one repeated")
    expect.shape("proj.weight", m.proj.weight, (D, D))
    expect.equal("proj.bias", m.proj.bias, None)
    expect.equal("parameters", sum(p.numel() for p in m.parameters()), 4 * D * D, "4 d^2")
    expect.shape("the output", m(x_of()), (B, T, D))


@pytest.mark.todo("task 1")
@pytest.mark.core  # task 1's trap: the joining axis
def test_output_is_the_projection_of_the_concatenated_heads(gpt):
    m = mha(gpt)
    x = x_of()
    with torch.no_grad():
        parts = [head(x) for head in m.heads]  # h x (B, T, d_head)
        want = torch.cat(parts, dim=-1) @ m.proj.weight.T  # (B, T, d)
        expect.close("the output", m(x), want, FLOAT32_TOL, "proj of the concatenated heads")


@pytest.mark.todo("task 1")
@pytest.mark.core  # task 1's parity
def test_matches_lab_01_multi_head_attention_with_copied_weights(gpt):
    lab = reference("lab-01", "attention")
    ours = mha(gpt)
    theirs = lab.MultiHeadSelfAttention(D, H)
    with torch.no_grad():  # in_proj rows [W_q; W_k; W_v], head i's rows i*d_head..(i+1)*d_head
        w = [
            torch.cat([getattr(h, n).weight for h in ours.heads]) for n in ("query", "key", "value")
        ]
        theirs.in_proj.weight.copy_(torch.cat(w))  # (3d, d)
        theirs.out_proj.weight.copy_(ours.proj.weight)  # (d, d)
        x = x_of()
        want, _ = theirs(x, lab.causal_mask(T))
        got = ours(x)
    expect.close("the output", got, want, CHAINED_TOL, "lab-01's MultiHeadSelfAttention's")


@pytest.mark.todo("task 1")
def test_multi_head_attention_is_causal(gpt):
    m = mha(gpt)
    x = x_of()
    x2 = x.clone()
    x2[:, 5] = randn(B, D, seed=7)
    with torch.no_grad():
        out, out2 = m(x), m(x2)
    why = "positions 0-4 must not see position 5"
    expect.equal("outputs 0-4 once x[:, 5] changed", out2[:, :5], out[:, :5], why)
    moved = (out[:, 5:] - out2[:, 5:]).abs().amax(dim=-1)  # (B, T - 5)
    expect.at_least("max |change| of outputs 5..", moved.min().item(), FLOAT32_TOL, "they see it")


@pytest.mark.given
@pytest.mark.parametrize(
    "d, h, message",
    [
        (30, 4, r"d must be divisible by h, got d=30 and h=4 \(d / h = 7\.5\)"),
        (32, 0, r"h must be a positive int, got 0"),
        (0, 4, r"d must be a positive int, got 0"),
        (32.0, 4, r"d must be a positive int, got 32\.0"),
        (True, 1, r"d must be a positive int, got True"),
    ],
    ids=["30/4", "h=0", "d=0", "float-d", "bool-d"],
)
def test_bad_head_counts_are_refused(gpt, d, h, message):
    for build in (
        lambda: gpt.MultiHeadAttention(d, h, T),
        lambda: gpt.Block(d, h, T),
        lambda: gpt.GPT(V, T, d, h, 1),
    ):
        with pytest.raises(ValueError, match=message):
            build()


@pytest.mark.given
@pytest.mark.parametrize(
    "sizes, message",
    [
        (dict(V=0), r"V must be a positive int, got 0"),
        (dict(T_max=-1), r"T_max must be a positive int, got -1"),
        (dict(n_layer=2.0), r"n_layer must be a positive int, got 2\.0"),
    ],
    ids=["V=0", "T_max=-1", "float-n_layer"],
)
def test_bad_model_sizes_are_refused(gpt, sizes, message):
    with pytest.raises(ValueError, match=message):
        gpt.GPT(**(dict(V=V, T_max=T, d=D, h=H, n_layer=1) | sizes))
    if "T_max" in sizes:
        for build in (gpt.MultiHeadAttention, gpt.Block):
            with pytest.raises(ValueError, match=message):
                build(D, H, sizes["T_max"])


@pytest.mark.given
def test_bad_widths_of_the_mlp_are_refused(gpt):
    with pytest.raises(ValueError, match=r"d must be a positive int, got 0"):
        gpt.FeedForward(0)


# --- task 2: the feed-forward network --------------------------------------------------------


@pytest.mark.todo("task 2")
@pytest.mark.core  # task 2's trap: another hidden width
def test_feedforward_widens_fourfold_with_biases(gpt):
    seed_all(0)
    mlp = gpt.FeedForward(D)
    expect.shape("fc.weight", mlp.fc.weight, (4 * D, D))
    expect.shape("fc.bias", mlp.fc.bias, (4 * D,))
    expect.shape("proj.weight", mlp.proj.weight, (D, 4 * D))
    expect.shape("proj.bias", mlp.proj.bias, (D,))
    total = sum(p.numel() for p in mlp.parameters())
    expect.equal("parameters", total, 8 * D * D + 5 * D, "8 d^2 + 5 d")


@pytest.mark.todo("task 2")
@pytest.mark.core  # task 2's parity, and its trap: a ReLU
def test_feedforward_is_proj_of_exact_gelu_of_fc(gpt):
    seed_all(0)
    mlp = gpt.FeedForward(D)
    x = x_of()
    with torch.no_grad():
        u = x @ mlp.fc.weight.T + mlp.fc.bias  # (B, T, 4d)
        gelu = u * 0.5 * (1 + torch.erf(u / math.sqrt(2)))  # u * Phi(u), Phi the normal CDF
        want = gelu @ mlp.proj.weight.T + mlp.proj.bias  # (B, T, d)
        expect.close("the MLP's output", mlp(x), want, FLOAT32_TOL, "proj(GELU(fc(x)))")
        relu = u.clamp(min=0) @ mlp.proj.weight.T + mlp.proj.bias
        gap = (relu - want).abs().max().item()
        expect.at_least("max |ReLU's - GELU's|", gap, 1e-3, "this input tells GELU from ReLU")


@pytest.mark.todo("task 2")
def test_feedforward_acts_on_each_position_alone(gpt):
    seed_all(0)
    mlp = gpt.FeedForward(D)
    x = x_of()
    with torch.no_grad():
        whole = mlp(x)
        for t in range(T):
            alone = mlp(x[:, t : t + 1])
            expect.close(f"the MLP of position {t} alone", alone, whole[:, t : t + 1], 1e-6)


# --- task 3: the block -----------------------------------------------------------------------


def block(gpt, seed=0):
    seed_all(seed)
    return gpt.Block(D, H, T)


@pytest.mark.todo("task 3")
@pytest.mark.core  # task 3's trap: one LayerNorm shared
def test_block_holds_two_layernorms_attention_and_mlp(gpt):
    b = block(gpt)
    children = [name for name, _ in b.named_children()]
    expect.equal("the block's children", children, ["ln1", "attn", "ln2", "mlp"])
    norms = [isinstance(child, nn.LayerNorm) for child in (b.ln1, b.ln2)]
    expect.equal("ln1 and ln2 are nn.LayerNorms", norms, [True, True])
    expect.equal("ln1 is ln2", b.ln1 is b.ln2, False, "two LayerNorms")
    shapes = (b.ln1.normalized_shape, b.ln2.normalized_shape)
    expect.equal("the normalized shapes", shapes, ((D,), (D,)))
    expect.equal("attn is a MultiHeadAttention", isinstance(b.attn, gpt.MultiHeadAttention), True)
    expect.equal("attn's heads", len(b.attn.heads), H)
    expect.equal("mlp is a FeedForward", isinstance(b.mlp, gpt.FeedForward), True)


@pytest.mark.todo("task 3")
@pytest.mark.core  # task 3's parity
def test_block_is_pre_layernorm_residual(gpt):
    b = block(gpt)
    with torch.no_grad():  # distinct gains and biases, so swapping ln1 and ln2 shows
        for i, ln in enumerate((b.ln1, b.ln2)):
            ln.weight.copy_(randn(D, seed=10 + i))
            ln.bias.copy_(randn(D, seed=20 + i))
        x = x_of()
        h = x + b.attn(b.ln1(x))
        want = h + b.mlp(b.ln2(h))
        expect.close("the block's output", b(x), want, FLOAT32_TOL, "pre-LN residual")


@pytest.mark.todo("task 3")
@pytest.mark.core  # task 3's property
def test_block_with_zeroed_branches_is_the_identity(gpt):
    b = block(gpt)
    x = x_of()
    with torch.no_grad():
        # the branches do something before they are zeroed
        expect.at_least("max |block(x) - x|", (b(x) - x).abs().max().item(), 1e-3)
        b.attn.proj.weight.zero_()
        b.mlp.proj.weight.zero_()
        b.mlp.proj.bias.zero_()
        expect.equal("the block's output, branches zeroed", b(x), x, "x + 0 must be x bit for bit")


# --- task 4: the GPT -------------------------------------------------------------------------


def model(gpt, seed=0, **sizes):
    seed_all(seed)
    return gpt.GPT(**(dict(V=V, T_max=T, d=D, h=H, n_layer=2) | sizes))


@pytest.mark.todo("task 4")
def test_gpt_holds_embeddings_blocks_final_norm_and_head(gpt):
    m = model(gpt, n_layer=3)
    expect.shape("tok_emb.weight", m.tok_emb.weight, (V, D))
    expect.shape("pos_emb.weight", m.pos_emb.weight, (T, D))
    expect.equal("blocks is an nn.Sequential", isinstance(m.blocks, nn.Sequential), True)
    expect.equal("blocks that are a Block", sum(isinstance(b, gpt.Block) for b in m.blocks), 3)
    expect.equal("distinct blocks", len({id(b) for b in m.blocks}), 3, "n_layer different blocks")
    expect.equal("ln_f is an nn.LayerNorm", isinstance(m.ln_f, nn.LayerNorm), True)
    expect.equal("ln_f.normalized_shape", m.ln_f.normalized_shape, (D,))
    expect.shape("lm_head.weight", m.lm_head.weight, (V, D))
    expect.equal("lm_head.bias", m.lm_head.bias, None)
    sizes = (m.V, m.T_max, m.d, m.h, m.n_layer)
    expect.equal("(V, T_max, d, h, n_layer)", sizes, (V, T, D, H, 3))


@pytest.mark.todo("task 4")
def test_weights_start_small_biases_zero_and_layernorms_at_identity(gpt):
    m = model(gpt, d=64, n_layer=2)
    for name, p in m.named_parameters():
        if "ln" in name:  # LayerNorm: gain 1, bias 0
            want = torch.ones_like(p) if name.endswith("weight") else torch.zeros_like(p)
            expect.equal(name, p.detach(), want, "a LayerNorm starts at the identity")
        elif name.endswith("bias"):
            expect.equal(name, p.detach(), torch.zeros_like(p), "biases start at 0")
        else:  # N(0, 0.02): thousands of draws give a std within a few percent
            expect.close(f"{name}'s std", p.std().item(), 0.02, 0.004, "N(0, 0.02)")
            expect.close(f"{name}'s mean", p.mean().item(), 0.0, 0.005, "N(0, 0.02)")


@pytest.mark.todo("task 4")
def test_forward_gives_logits_and_no_loss_without_targets(gpt):
    m = model(gpt)
    logits, loss = m(ids((B, T)))
    expect.shape("the logits", logits, (B, T, V))
    expect.equal("the logits' dtype", logits.dtype, torch.float32)
    expect.equal("the loss without targets", loss, None)


@pytest.mark.todo("task 4")
@pytest.mark.core  # task 4's parity
def test_logits_follow_algorithm_10(gpt):
    m = model(gpt)
    idx = ids((B, T))
    with torch.no_grad():
        x = m.tok_emb.weight[idx] + m.pos_emb.weight[:T]  # (B, T, d) e_t = W_e[x_t] + W_p[t]
        for b in m.blocks:
            x = b(x)
        want = m.ln_f(x) @ m.lm_head.weight.T  # (B, T, V)
        logits, _ = m(idx)
    expect.close("the logits", logits, want, FLOAT32_TOL, "algorithm 10's")


@pytest.mark.todo("task 4")
def test_a_shorter_sequence_gives_the_same_prefix(gpt):
    m = model(gpt)
    idx = ids((B, T))
    with torch.no_grad():
        full, _ = m(idx)
        short, _ = m(idx[:, :5])
    expect.shape("the logits of a 5-token idx", short, (B, 5, V))
    expect.close(
        "the logits of idx[:, :5]", short, full[:, :5], FLOAT32_TOL, "the first 5 of idx's"
    )


@pytest.mark.todo("task 4")
def test_loss_is_a_number_with_a_gradient_for_every_parameter(gpt):
    m = model(gpt)
    idx = ids((B, T + 1))
    _, loss = m(idx[:, :-1], idx[:, 1:])  # targets a slice: not contiguous
    expect.equal("the loss's dims", loss.dim(), 0, "a single number")
    expect.equal("the loss's dtype", loss.dtype, torch.float32)
    loss.backward()
    for name, p in m.named_parameters():
        reach = 0.0 if p.grad is None else p.grad.abs().sum().item()
        expect.between(f"sum |{name}.grad|", reach, 0, math.inf, f"no gradient reaches {name}")


@pytest.mark.todo("task 4")
def test_int32_ids_give_the_same_logits_as_int64(gpt):
    m = model(gpt)
    idx = ids((B, T))
    with torch.no_grad():
        int32 = m(idx.to(torch.int32))[0]
        expect.equal("the logits of int32 ids", int32, m(idx)[0], "those of the same int64 ids")


@pytest.mark.todo("task 5")
def test_forward_and_generate_refuse_bad_input(gpt):
    m = model(gpt)
    with pytest.raises(ValueError, match=r"sequence length T=9 exceeds T_max=8"):
        m(ids((1, T + 1)))
    with pytest.raises(ValueError, match=r"targets must have the shape of idx"):
        m(ids((1, 4)), ids((1, 5)))
    with pytest.raises(ValueError, match=r"idx must be token ids in \[0, 16\)"):
        m.generate(ids((1, 4), high=V + 1) + V, 1)
    with pytest.raises(ValueError, match=r"temperature must be a finite number > 0, got 0"):
        m.generate(ids((1, 4)), 1, temperature=0)
    long = ids((1, T + 4))  # (1, T_max + 4): generate crops it, so forward sees the last T_max
    long[0, 0] = V  # out of the vocabulary, where only generate's own check can see it
    with pytest.raises(ValueError, match=r"idx must be token ids in \[0, 16\), got values from"):
        m.generate(long, 1)


# --- task 5: generate ------------------------------------------------------------------------


@pytest.mark.todo("task 5")
def test_generate_appends_tokens_to_the_prompt(gpt):
    m = model(gpt)
    idx = ids((3, 2))
    out = m.generate(idx, 5, generator=generator(0))
    expect.shape("generate(idx of (3, 2), 5)", out, (3, 7))
    expect.equal("its dtype", out.dtype, torch.int64)
    expect.equal("its first 2 columns", out[:, :2], idx, "the prompt")
    expect.at_least("its ids", out, 0)
    expect.at_most("its ids", out, V - 1)
    expect.equal("generate(idx, 0)", m.generate(idx, 0), idx, "the prompt itself")
    expect.equal("its requires_grad", out.requires_grad, False)


@pytest.mark.todo("task 5")
@pytest.mark.core  # task 5's property
def test_generate_is_deterministic_for_a_generator(gpt):
    m = model(gpt)
    idx = ids((2, 1))
    a = m.generate(idx, 20, generator=generator(3))
    b = m.generate(idx, 20, generator=generator(3))
    c = m.generate(idx, 20, generator=generator(4))
    expect.equal("ids of generator(3), twice", b, a, "the same generator state, the same ids")
    expect.differs("ids of generator(4)", c, a, "another seed should give other ids")


@pytest.mark.todo("task 5")
def test_generate_samples_at_temperature_1_by_default(gpt):
    m = model(gpt)
    with torch.no_grad():
        m.lm_head.weight.mul_(5)  # logits far enough apart that a temperature shows
    idx = ids((4, 3))
    default = m.generate(idx, 20, generator=generator(5))
    at_1 = m.generate(idx, 20, temperature=1.0, generator=generator(5))
    expect.equal("the ids of the default temperature", default, at_1, "those of temperature=1.0")


@pytest.mark.todo("task 5")
def test_a_tiny_temperature_picks_the_most_likely_token(gpt):
    m = model(gpt)
    with torch.no_grad():
        m.lm_head.weight.mul_(40)  # distinct, peaked logits
        idx = ids((4, 3))
        logits, _ = m(idx)
    out = m.generate(idx, 1, temperature=1e-3, generator=generator(0))
    expect.equal(
        "the id sampled at temperature 1e-3",
        out[:, -1],
        logits[:, -1].argmax(dim=-1),
        "the likeliest",
    )


# --- the given input checks, called directly -------------------------------------------------


@pytest.mark.given
@pytest.mark.parametrize(
    "idx, message",
    [
        (
            torch.zeros(1, 4),
            r"idx must be a tensor of integer token ids \(torch\.long\), got dtype torch\.float32",
        ),
        ([[1, 2]], r"idx must be a tensor of integer token ids \(torch\.long\), got list"),
        (torch.zeros(1, 4, dtype=torch.bool), r"got dtype torch\.bool"),
        (torch.zeros(1, 4, dtype=torch.uint8), r"got dtype torch\.uint8"),
        (
            torch.zeros(4, dtype=torch.long),
            r"idx must have shape \(B, T\) with B, T >= 1, got \(4,\)",
        ),
        (torch.zeros(1, 1, 4, dtype=torch.long), r"got \(1, 1, 4\)"),
        (torch.zeros(1, 0, dtype=torch.long), r"got \(1, 0\)"),
        (torch.zeros(0, 3, dtype=torch.long), r"got \(0, 3\)"),
        (torch.tensor([[0, V]]), r"idx must be token ids in \[0, 16\), got values from 0 to 16"),
        (torch.tensor([[-1, 3]]), r"got values from -1 to 3"),
    ],
    ids=["float", "list", "bool", "uint8", "1-D", "3-D", "T=0", "B=0", "V", "negative"],
)
def test_bad_ids_are_refused(gpt, idx, message):
    with pytest.raises(ValueError, match=message):
        gpt.check_ids(idx, V)
    with pytest.raises(ValueError, match=message):
        gpt.check_input(idx, None, V, T)


@pytest.mark.given
def test_good_ids_pass_the_checks(gpt):
    for dtype in (torch.int64, torch.int32):
        idx = torch.tensor([[0, V - 1, 3]], dtype=dtype)
        assert gpt.check_ids(idx, V) is None
        assert gpt.check_input(idx, idx.clone(), V, 3) is None


@pytest.mark.given
def test_a_sequence_longer_than_T_max_is_refused(gpt):
    with pytest.raises(
        ValueError, match=r"sequence length T=9 exceeds T_max=8; keep the last T_max tokens"
    ):
        gpt.check_input(torch.zeros(1, 9, dtype=torch.long), None, V, 8)


@pytest.mark.given
@pytest.mark.parametrize(
    "targets, message",
    [
        (
            torch.zeros(1, 3, dtype=torch.long),
            r"targets must have the shape of idx, \(1, 4\), got \(1, 3\)",
        ),
        (torch.zeros(4, dtype=torch.long), r"got \(4,\)"),
        ([0, 1, 2, 3], r"got \[0, 1, 2, 3\]"),
        (torch.zeros(1, 4), r"targets must be a tensor of integer token ids"),
        (
            torch.full((1, 4), V),
            r"targets must be token ids in \[0, 16\), got values from 16 to 16",
        ),
    ],
    ids=["shorter", "1-D", "list", "float", "out-of-range"],
)
def test_bad_targets_are_refused(gpt, targets, message):
    with pytest.raises(ValueError, match=message):
        gpt.check_input(torch.zeros(1, 4, dtype=torch.long), targets, V, T)


@pytest.mark.given
@pytest.mark.parametrize(
    "args, message",
    [
        ((-1, 1.0, None), r"max_new_tokens must be an int >= 0, got -1"),
        ((2.0, 1.0, None), r"max_new_tokens must be an int >= 0, got 2\.0"),
        ((True, 1.0, None), r"max_new_tokens must be an int >= 0, got True"),
        ((1, 0, None), r"temperature must be a finite number > 0, got 0"),
        ((1, -0.5, None), r"temperature must be a finite number > 0, got -0\.5"),
        ((1, math.inf, None), r"temperature must be a finite number > 0, got inf"),
        ((1, math.nan, None), r"temperature must be a finite number > 0, got nan"),
        ((1, "1", None), r"temperature must be a number > 0, got '1'"),
        ((1, True, None), r"temperature must be a number > 0, got True"),
        ((1, 1e-45, None), r"temperature must be at least 1e-06, got 1e-45: below that, logits"),
        ((1, 5e-7, None), r"temperature must be at least 1e-06, got 5e-07"),
        ((1, 1.0, 7), r"generator must be a torch\.Generator or None, got 7"),
    ],
    ids=["n=-1", "n=2.0", "n=True", "t=0", "t<0", "t=inf", "t=nan", "t=str", "t=True", "t=1e-45"]
    + ["t=5e-7", "gen=7"],
)
def test_bad_sampling_settings_are_refused(gpt, args, message):
    with pytest.raises(ValueError, match=message):
        gpt.check_sampling(*args)


@pytest.mark.given
def test_good_sampling_settings_pass(gpt):
    for args in ((0, 1.0, None), (5, 2, generator(0)), (1, 1e-3, None), (1, 1e-6, None)):
        assert gpt.check_sampling(*args) is None


@pytest.mark.todo("task 5")
def test_the_smallest_temperature_samples_and_a_smaller_one_could_not(gpt):
    m = model(gpt)
    with torch.no_grad():
        m.lm_head.weight.mul_(40)  # distinct, peaked logits
        idx = ids((4, 3))
        last = m(idx)[0][:, -1]  # (4, V)
    out = m.generate(idx, 1, temperature=gpt.MIN_TEMPERATURE, generator=generator(0))
    assert torch.equal(out[:, -1], last.argmax(dim=-1)), "1e-6 samples: the likeliest id"
    assert torch.isnan(torch.softmax(last / 1e-45, dim=-1)).any(), "why 1e-45 is refused"


@pytest.mark.given
@pytest.mark.parametrize(
    "idx, fix",
    [
        (torch.zeros(4, dtype=torch.long), r"; one sequence .* idx\[None\]; .* idx\[:, -1:\]$"),
        (torch.zeros(0, dtype=torch.long), r"; a prompt needs at least one id: start from one"),
        (torch.zeros(1, 0, dtype=torch.long), r"; a prompt needs at least one id"),
        (torch.zeros(1, 1, 4, dtype=torch.long), r"it has 3 axes: .* idx\.flatten\(0, -2\)$"),
        (torch.tensor(3), r"one id is a \(1, 1\) prompt: idx\.view\(1, 1\)$"),
    ],
    ids=["1-D", "empty", "T=0", "3-D", "0-D"],
)
def test_a_prompt_of_the_wrong_shape_is_told_its_own_fix(gpt, idx, fix):
    with pytest.raises(ValueError, match=fix) as info:
        gpt.check_ids(idx, V)
    assert ("idx[None]" in str(info.value)) == (idx.dim() == 1 and len(idx) > 0)


@pytest.mark.given
def test_prompts_given_as_lists_are_told_how_to_make_a_batch(gpt):
    with pytest.raises(ValueError, match=r"a list of prompts of lengths \[2, 3\]: .*on its own"):
        gpt.check_ids([[1, 2], [1, 2, 3]], V)  # torch.tensor of these raises torch's own error
    with pytest.raises(ValueError, match=r"got list; .* then torch\.tensor\(\[ids\]\), the"):
        gpt.check_ids([1, 2, 3], V)
    with pytest.raises(ValueError, match=r"got tuple; .* then torch\.tensor\(ids\)$"):
        gpt.check_ids(([1, 2], [3, 4]), V)


@pytest.mark.given
def test_the_parameter_formula_by_hand(gpt):
    # 2 V d + T_max d + n_layer (12 d^2 + 9 d) + 2 d at V=62, T_max=64, d=64, n_layer=4
    expect.equal("7936 + 4096 + 4 * 49728 + 128", 7936 + 4096 + 4 * 49728 + 128, 211072)
    expect.equal("n_params(62, 64, 64, 4)", gpt.n_params(62, 64, 64, 4), 211072)
    expect.equal("n_params(1, 1, 1, 1)", gpt.n_params(1, 1, 1, 1), 2 + 1 + 21 + 2)
