"""Inverted dropout: the identity in eval mode, the share of zeros, the mean kept, a seeded mask."""

import ast
import inspect
import math
import textwrap

import pytest
import torch

from common import expect
from common.seeding import generator, randn

N = 200_000  # entries per statistical test: the binomial bounds below are then ~0.005 wide


def binomial_bound(p: float, n: int = N) -> float:
    """Six standard deviations of a share of n Bernoulli(p) draws: false alarms ~1e-9."""
    return 6 * math.sqrt(p * (1 - p) / n)


@pytest.mark.todo("task 2")
@pytest.mark.core  # its property
@pytest.mark.parametrize("p", [0.0, 0.3, 1.0])
def test_dropout_is_the_identity_in_eval_mode(layers, p):
    x = randn(4, 8, seed=0)
    got = layers.dropout(x, p, False, generator(0))
    expect.equal(f"dropout(x, p={p}, training=False)", got, x, eval_said(got, x, p))


@pytest.mark.todo("task 2")
def test_dropout_in_eval_mode_gives_x_itself(layers):
    x, g = randn(4, 8, seed=0), generator(0)
    expect.equal("dropout(x, p=0.3, training=False) is x", layers.dropout(x, 0.3, False, g) is x,
                 True, "in eval mode x comes back itself, as nn.Dropout gives it: no copy")  # fmt: skip
    expect.equal("the generator's next draw after dropout in eval mode", torch.rand(3, generator=g),
                 torch.rand(3, generator=generator(0)), "in eval mode no mask is drawn (a draw "
                 "would shift every later mask of the run, at each evaluation)")  # fmt: skip


def eval_said(got, x: torch.Tensor, p: float) -> str:
    """What eval mode did instead of returning x: a mask drawn, or the old scale by 1 - p."""
    if not isinstance(got, torch.Tensor) or got.shape != x.shape:
        return ""
    if p < 1 and torch.allclose(got, x * (1 - p)):
        return "scaled by 1 - p: inverted dropout scales the kept entries in training only"
    if p < 1 and torch.allclose(got, x / (1 - p)):
        return "scaled by 1 / (1 - p): that scale is training's, for the kept entries; in eval x "
        "comes back as it is"
    if p == 1 and not got.any():  # a mask and a scale by 1 - p = 0 both give zeros here
        return "all zeros: training's dropout ran in eval mode"
    return "a mask was drawn in eval mode" if (got == 0).any() else ""


@pytest.mark.todo("task 2")
def test_dropout_at_p_0_is_the_identity_in_training(layers):
    x, g = randn(4, 8, seed=0), generator(0)
    expect.equal("dropout(x, p=0, training=True)", layers.dropout(x, 0.0, True, g), x)
    # x itself: no mask drawn, so every later draw of the generator is what it would have been
    expect.equal("the generator's next draw after dropout at p=0", torch.rand(3, generator=g),
                 torch.rand(3, generator=generator(0)), "at p = 0 x comes back as it is, "
                 "no mask drawn (a draw would shift every later mask of the run)")  # fmt: skip


@pytest.mark.todo("task 2")
def test_dropout_at_p_1_gives_zeros_not_nan(layers):
    x = randn(4, 8, seed=0, dtype=torch.float64)  # float64: zeros in x's dtype, not the default's
    x[0, :2] = torch.tensor([float("inf"), float("nan")])  # dropped too: x * 0 keeps their NaN
    out = layers.dropout(x, 1.0, True, generator(0))  # (4, 8)
    only = torch.isfinite(out[:, 2:]).all() if out.shape == x.shape else False  # x's own inf, NaN
    scale = "1 / (1 - p) is 1 / 0 at p = 1"
    why = "x's inf and NaN are dropped too: zeros made anew, not x times 0" if only else scale
    expect.finite("dropout(x, p=1)", out, why)
    expect.equal("dropout(float64 x, p=1).dtype", out.dtype, x.dtype, "zeros of x's dtype")
    expect.equal("dropout(x, p=1)", out, torch.zeros_like(x), "every entry dropped")
    x = randn(4, 8, seed=0, dtype=torch.float64).requires_grad_(True)
    out = layers.dropout(x, 1.0, True, generator(0))  # (4, 8)
    if out.requires_grad:  # zeros made anew hold no graph: no gradient to go wrong
        out.sum().backward()
        expect.finite("the gradient of dropout(x, p=1) with respect to x", x.grad,
                      "a branch that computes x / (1 - p) and drops it still sends back its "
                      "0 / 0: at p = 1 return zeros before dividing")  # fmt: skip


@pytest.mark.todo("task 2")
@pytest.mark.parametrize("p", [0.1, 0.123, 0.5, 0.8, 0.995])  # 0.123: no whole percents
def test_dropout_zeros_a_share_p_within_binomial_bounds(layers, p):
    out = layers.dropout(torch.ones(N // 1000, 1000), p, True, generator(1))  # (200, 1000)
    zeros = out == 0  # (200, 1000)
    if zeros.any() and not zeros.all():  # none, or all: the share's failure, below
        for axis, name in ((1, "row"), (0, "column")):  # a mask of (200, 1) or (1, 1000)
            whole = bool((zeros.all(axis) | ~zeros.any(axis)).all())
            expect.equal(f"each {name} dropped or kept whole", whole, False,
                         "each entry draws its own keep: a mask of x's whole shape")  # fmt: skip
    share = (out == 0).float().mean().item()
    kept_p = abs(share - (1 - p)) <= binomial_bound(p)  # the share of zeros is 1 - p's
    why = (
        f"every entry dropped at p={p}: only p = 1 drops them all (p near 1 keeps a few, each "
        "scaled by 1 / (1 - p))"
        if share == 1.0
        else "p is the share dropped, not the share kept"
        if kept_p
        else f"each entry is dropped with probability p, and {share:.4f} were: a draw from fewer "
        "values than torch.rand's rounds p"
        if abs(share - p) < 0.01  # near p, past chance: p rounded
        else "a dropped entry is 0"
    )
    expect.close(f"share of zeros at p={p}", share, p, atol=binomial_bound(p), why=why)


@pytest.mark.todo("task 2")
def test_dropout_of_bfloat16_x_drops_a_share_p(layers):
    out = layers.dropout(torch.ones(N, dtype=torch.bfloat16), 0.99, True, generator(3))  # (N,)
    share = (out == 0).float().mean().item()
    expect.close("share of zeros at p=0.99, x in bfloat16", share, 0.99, atol=binomial_bound(0.99),
                 why="the keep draws in float32: bfloat16 holds too few values in [0, 1) to "
                 "compare with p")  # fmt: skip


@pytest.mark.todo("task 2")
@pytest.mark.core  # its property, and its trap: the 1 / (1 - p) scale forgotten
@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_keeps_the_mean(layers, p):
    # (B, h, T, T) = (5, 4, 100, 100), N entries, as attention weights are dropped; 1.5, not 1: a
    # scale rounded (x // (1 - p)) is then no scale forgotten
    x = torch.full((5, 4, 100, 100), 1.5)
    out = layers.dropout(x, p, True, generator(2))
    expect.shape(f"dropout(x) at p={p}", out, x.shape, "x's shape: a dropped entry is 0, in place")
    kept = out[out != 0]
    unscaled = bool(kept.numel()) and bool((kept == 1.5).all())  # the kept ones left as they were
    alone = bool(kept.numel()) and bool(
        torch.allclose(kept, torch.tensor(1 / (1 - p), dtype=kept.dtype))
    )
    floored = bool(kept.numel()) and bool((kept == 1.5 // (1 - p)).all())  # x // (1 - p)
    why = "each kept entry is scaled by 1 / (1 - p)" + (
        ": nothing was dropped, out is x itself, as in eval mode (did the training branch run?)"
        if unscaled and kept.numel() == N
        else ", yours kept its value"
        if unscaled
        else ": yours is 1 / (1 - p) whatever x, the mask scaled without x"
        if alone
        else f": yours is 1.5 // (1 - p) = {1.5 // (1 - p):g}, floored (// is floor division, "
        "/ divides)"
        if floored
        else ""
    )
    expect.close(f"kept entries of 1.5 at p={p}", kept, torch.full_like(kept, 1.5 / (1 - p)),
                 atol=1e-6, why=why)  # fmt: skip
    # the mean of N entries of 0 or 1 / (1 - p): its spread is the share's, scaled by 1 / (1 - p)
    share = (out == 0).float().mean().item()  # the share dropped
    zeros = out == 0  # (5, 4, 100, 100)
    together = [a for a in range(zeros.dim()) if (zeros.all(a) | ~zeros.any(a)).all()]
    why = (
        "the 1 / (1 - p) scale keeps it"
        if abs(share - p) <= binomial_bound(p) and not together
        else "every entry kept or dropped together: each entry draws its own keep, a mask of "
        "x's whole shape"
        if share in (0.0, 1.0)
        else f"every entry kept or dropped together along axis {together[0]}: each entry draws "
        "its own keep, a mask of x's whole shape"
        if together
        else (
            f"a share p of the entries is dropped, yours dropped {share:.3f}: each is kept with "
            "probability 1 - p"
        )
    )
    expect.close(f"mean of dropout(x) at p={p}, x all 1.5", out.mean().item(), 1.5,
                 atol=1.5 * binomial_bound(p) / (1 - p), why=why)  # fmt: skip


@pytest.mark.todo("task 2")
def test_dropout_keeps_the_shape_and_dtype(layers, dtype):
    x = randn(2, 3, 5, seed=3, dtype=dtype)  # (2, 3, 5)
    given = x.clone()  # x as it came: writing into x is another test's failure
    out = layers.dropout(x, 0.5, True, generator(0))
    expect.shape("dropout(x)", out, x.shape)
    made = float32_made(inspect.getsource(layers.dropout))  # such a tensor promotes x too
    wide = None  # what a float64 x comes back as, asked only once x's dtype is lost: a cast?
    if out.dtype != dtype:
        wide = layers.dropout(randn(2, 3, 5, seed=3, dtype=torch.float64), 0.5, True, generator(0))
        wide = wide.dtype
    expect.equal(f"dropout({str(dtype).removeprefix('torch.')} x).dtype", out.dtype, dtype,
                 f"the dtype of x: dropout returns {out.dtype} whatever x's, a float64 x too, "
                 "which no mask or scale lowers: a cast of what it returns (.float(), .to())"
                 if wide == out.dtype != torch.float64
                 else f"the dtype of x: a float32 tensor in the arithmetic ({made} here) promotes "
                 "x; a Python number (1 / (1 - p), 0.0) or a tensor made in x's dtype keeps it"
                 if made
                 else "the dtype of x: make the mask in x's dtype")  # fmt: skip
    if dtype == torch.float64:  # every digit of x: no float32 on the way
        kept = out != 0
        expect.close("dropout(float64 x)'s kept entries - x / (1 - p)", out[kept],
                     given[kept] / 0.5, 1e-12, "in x's own dtype throughout: a float32 step on the "
                     "way keeps 7 digits of float64's 16")  # fmt: skip


def float32_made(source: str) -> str:
    """The first tensor the source makes with torch's default dtype, float32 (`torch.zeros(1)`,
    a `torch.tensor` scale), or ''; the drawn torch.rand is the mask's, compared into bool."""
    for node in ast.walk(ast.parse(textwrap.dedent(source))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and ast.unparse(node.func.value) == "torch"
            and node.func.attr in {"tensor", "zeros", "ones", "full", "empty", "as_tensor"}
            and not any(k.arg == "dtype" for k in node.keywords)
        ):
            return ast.unparse(node)
    return ""


@pytest.mark.todo("task 2")
def test_dropout_leaves_its_input_unchanged(layers):
    x = randn(4, 64, seed=4)  # (4, 64)
    before = x.clone()  # (4, 64)
    layers.dropout(x, 0.5, True, generator(0))
    changed = int((x != before).sum())
    expect.equal("entries of x changed by dropout(x)", changed, 0,
                 "dropout returns a new tensor: an in-place op (mul_, masked_fill_, x[...] = 0) "
                 "changes the activations the caller still holds")  # fmt: skip


@pytest.mark.todo("task 2")
def test_dropout_passes_the_gradient_to_the_kept_entries(layers):
    leaf = torch.ones(4, 64, requires_grad=True)  # (4, 64)
    x = leaf * 1  # (4, 64) an activation, as in a model: not a leaf (the in-place test is another)
    out = layers.dropout(x, 0.5, True, generator(5))  # (4, 64)
    expect.equal("dropout(x).requires_grad, x requiring grad", out.requires_grad, True,
                 "training backpropagates through dropout: no .detach(), no torch.no_grad()")  # fmt: skip
    out.sum().backward()
    expect.close("x's gradient after dropout(x).sum().backward()", leaf.grad, out.detach(),
                 atol=1e-6, why="a kept entry's gradient is 1 / (1 - p), a dropped one's 0")  # fmt: skip


RESEEDED = (
    "the same mask: dropout reseeded the generator it was given (its seed is no longer 7: "
    "generator.seed() sets a new random one); the mask is drawn from its state as it comes"
)


@pytest.mark.todo("task 2")
def test_dropout_same_seed_same_mask_other_seed_other_mask(layers):
    g = generator(7)
    first = layers.dropout(torch.ones(1000), 0.5, True, g).clone()  # (1000,)
    again = layers.dropout(torch.ones(1000), 0.5, True, generator(7))  # (1000,)
    why = RESEEDED if g.initial_seed() != 7 else "the mask is drawn from the generator passed in"
    expect.equal("masks from generator(7), twice", again, first, why)
    g7, g8 = generator(7), generator(8)
    layers.dropout(torch.ones(1000), 0.5, True, g7)
    other = layers.dropout(torch.ones(1000), 0.5, True, g8)  # (1000,)
    reseeded = torch.equal(g7.get_state(), g8.get_state())  # the seed given is gone
    why = "the same mask from two seeds: " + (
        "dropout seeds the generator it is given; it only draws from it"
        if reseeded
        else "it is drawn from something other than the generator passed in"
    )
    expect.differs("masks from generator(7) and generator(8)", other, first, why)


@pytest.mark.todo("task 2")
def test_dropout_draws_a_new_mask_each_call_and_leaves_torchs_own_generator(layers):
    """The generator moves on with each mask drawn (a layer called twice in one step drops other
    entries), and torch's global generator is neither read nor reseeded."""
    g, state = generator(7), torch.get_rng_state()  # (5056,) uint8: the global generator's
    first = layers.dropout(torch.ones(1000), 0.5, True, g).clone()  # (1000,)
    assert torch.equal(torch.get_rng_state(), state), (
        "torch's global generator changed in dropout: draw from the generator passed in alone "
        "(generator=); torch.manual_seed or a torch.rand(...) without it changes every other "
        "draw of the program"
    )
    second = layers.dropout(torch.ones(1000), 0.5, True, g)  # (1000,)
    expect.differs("the masks of two calls with one generator", second, first,
                   "the second call draws on from where the first left the generator: "
                   "reseeding it (or a copy of it) drops the same entries every call")  # fmt: skip


@pytest.mark.given
@pytest.mark.parametrize(
    ("p", "x", "g", "says"),
    [
        (-0.1, torch.ones(3), generator(0), r"p must be a number in \[0, 1\].*got -0.1"),
        (1.5, torch.ones(3), generator(0), r"p must be a number in \[0, 1\].*got 1.5"),
        (float("nan"), torch.ones(3), generator(0), r"p must be .*got nan"),
        (0.5, torch.ones(3, dtype=torch.int64), generator(0), "float tensor, got torch.int64"),
        (0.5, torch.ones(3), None, "must be a torch.Generator .*got NoneType"),
    ],
)
def test_dropout_refuses_bad_input_naming_what_came(layers, p, x, g, says):
    with pytest.raises(ValueError, match=says):
        layers.dropout(x, p, True, g)
