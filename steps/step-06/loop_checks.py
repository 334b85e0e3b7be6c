"""Step 6's checks of the training loop, each a function of (train module, model factory) that raises AssertionError naming a classic bug."""

import copy
import inspect
import math
import re
import tempfile
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import torch

from common.course import at
from common.course.bugs import Bug, broken_copy
from common.expect import show


def corpus(n: int = 600, V: int = 8, seed: int = 0) -> torch.Tensor:
    """n ids over V symbols that mostly count up (i -> i + 1): something a tiny model can learn."""
    g = torch.Generator().manual_seed(seed)
    up = torch.where(torch.rand(n, generator=g) < 0.8, 1, torch.randint(V, (n,), generator=g))
    return up.cumsum(0) % V  # (n,) int64


def batch(seed: int, B: int = 4, T: int = 8):
    """x, y (B, T) cut from corpus() by hand, so a check of one task needs no other task."""
    starts = torch.randint(len(corpus()) - T, (B,), generator=torch.Generator().manual_seed(seed))
    windows = torch.stack([corpus()[i : i + T + 1] for i in starts])  # (B, T + 1)
    return windows[:, :-1].contiguous(), windows[:, 1:].contiguous()  # as get_batch's stacks are


def tiny_config(train, **changes):
    """A TrainConfig small enough for a test: a few steps on a few hundred ids."""
    base = train.TrainConfig(
        T=8, B=4, steps=6, warmup=2, eval_every=3, eval_batches=2,
        checkpoint_every=2, val_fraction=0.25, lr=1e-2, min_lr=1e-3,
    )  # fmt: skip
    return replace(base, **changes)


def off(got: float, want: float) -> str:
    """`got` and how far it is from `want`, so that a difference a rounding would hide shows."""
    return f"{got:.6g}, {got - want:+.2g} from"


ALIASED = (
    "x and y are one tensor's memory from its first entry on (y = x, or a view of it): writing "
    "into y wrote into x too; y is cut one id later, as a tensor of its own"
)


def check_targets_shifted(train, make=None):
    """Task 1: y is x one position later, both windows of the data (targets not shifted)."""
    data = torch.arange(100) * 3  # (100,) every id tells where it sits
    x, y = train.get_batch(data, 5, 10, torch.Generator().manual_seed(0))
    for name, got in (("x", x), ("y", y)):  # one at a time: the message names the wrong one
        assert got.shape == (5, 10), f"{name} must be (B, T) = (5, 10), got {tuple(got.shape)}"
    assert x.data_ptr() != y.data_ptr(), ALIASED  # views of one (B, T + 1) tensor start apart
    assert not torch.equal(y, x), "y equals x: targets not shifted (y[:, t] must be x[:, t + 1])"
    assert not torch.equal(x[:, :-1], y[:, 1:]), "x is y one id later: x and y swapped"
    assert torch.equal(y[:, :-1], x[:, 1:]), (
        "y[:, t] must be x[:, t + 1]: each row of y is its row of x one id later, cut at one start"
    )
    assert torch.equal(y[:, -1], x[:, -1] + 3), "the last target is the id after the window"


def check_zero_grad(train, make):
    """Task 4: after a step, .grad holds this batch's gradient only (no zero_grad)."""
    model, fresh = make(0), make(0)
    x, y = batch(1)
    for p in model.parameters():
        p.grad = torch.full_like(p, 100.0)  # stale gradients from some earlier step
    opt = torch.optim.SGD(model.parameters(), lr=0.0)  # lr 0: only the gradient is compared
    seen = filled(model)
    train.train_step(model, opt, x, y, grad_clip=1e9)
    fresh(x, y)[1].backward()
    assert not cleared(model, seen), cleared(model, seen)  # not the accumulating bug's words
    norm = torch.cat([p.grad.flatten() for p in model.parameters()]).norm().item()
    assert abs(norm / 1e9 - 1) > 1e-3, (
        "the gradient after train_step has norm 1e9, grad_clip's: it was scaled up to it; a clip "
        "only scales a norm above grad_clip down (torch.nn.utils.clip_grad_norm_)"
    )
    got, want = (torch.cat([p.grad.flatten() for p in m.parameters()]) for m in (model, fresh))
    shrunk = (got.norm() / want.norm()).item()  # a loss over k: 1 / k; a clip: a round norm
    round_norm = abs(float(f"{got.norm():.1g}") - got.norm()) < 1e-4 * got.norm()
    over_k = abs(1 / shrunk - round(1 / shrunk)) < 1e-3 if shrunk else True
    assert not (
        shrunk < 1 - 1e-4
        and round_norm
        and not over_k
        and torch.allclose(got, shrunk * want, atol=1e-6)
    ), (
        f"the gradient after train_step has norm {got.norm():.3g}, this batch's {want.norm():.3g}: "
        "clipped though grad_clip = 1e9 (clip_grad_norm_'s max_norm is grad_clip)"
    )
    for (name, p), q in zip(model.named_parameters(), fresh.parameters(), strict=True):
        assert not torch.allclose(p.grad, q.grad + 100.0, atol=1e-4), (
            f"{name}.grad is this batch's gradient plus the stale one: old gradients accumulated "
            "(optimizer.zero_grad(), called, before the backward pass)"
        )
        assert not (why := scaled(f"{name}.grad", p.grad, q.grad)), why
        assert torch.allclose(p.grad, q.grad, atol=1e-6), (
            f"{name}.grad is not the gradient of this batch's loss (the loss the model returns "
            f"for x and y): it differs by up to {(p.grad - q.grad).abs().max().item():.3g}: "
            "the loss backward() ran on is another"
        )


def scaled(what: str, got: torch.Tensor, want: torch.Tensor) -> str:
    """'' unless `got` is `want` times one number other than 1: then what that says (the
    loss.backward() line, which made it, named)."""
    ratio = ((got * want).sum() / (want * want).sum()).item()  # the least-squares scale
    if not torch.allclose(got, ratio * want, atol=1e-6) or abs(ratio - 1) < 1e-6:
        return ""
    said = f"{what} is {ratio:.3g} times this batch's gradient: loss.backward() ran on a loss"
    if abs(ratio - round(ratio)) < 1e-6 and round(ratio) > 1:  # k backward passes add up to k
        return f"{said} {round(ratio)} times too big, or ran {round(ratio)} times"
    return f"{said} scaled by {ratio:.3g}" + (", or .grad was scaled after it" if ratio < 1 else "")


def filled(model) -> list[bool]:
    """Filled in as train_step runs: for each gradient a backward pass puts in .grad, whether it
    holds anything but zeros (a loss clamped or detached from the weights gives only zeros)."""
    seen = []
    for p in model.parameters():
        p.register_post_accumulate_grad_hook(lambda q: seen.append(bool(q.grad.any())))
    return seen


def cleared(model, seen: list[bool] | None = None) -> str:
    """'' unless every .grad is None or zero after train_step: then what that says (`seen`:
    filled()'s, which tells a backward that made zeros from gradients cleared after it)."""
    grads = [p.grad for p in model.parameters()]
    if seen and not any(seen) and all(g is not None and not g.any() for g in grads):
        return (
            "every gradient the backward pass made was zero: the loss it went back through does "
            "not depend on the weights (clamped, or otherwise cut off from them); grad_clip "
            "bounds the gradient's norm, torch.nn.utils.clip_grad_norm_, not the loss"
        )
    if all(g is None or not g.any() for g in grads):
        if seen == [] and all(g is None for g in grads):  # no hook fired: backward reached none
            return (
                "every .grad is None after train_step: no backward pass filled them, none reached "
                "a weight: loss.backward() never called (written without its ()?), or the loss "
                "that went back is not model(x, y)[1] itself (cut from the graph by .detach(), "
                ".item() or a new tensor)"
            )
        if all(g is None for g in grads):  # zero_grad's default sets None: as if none ran
            return (
                "every .grad is None after train_step: no backward pass filled them "
                "(loss.backward() never called: written without its ()?), or zero_grad ran "
                "after it (zero_grad comes first in a step)"
            )
        return (
            "every .grad is zero after train_step: the gradients were cleared after the "
            "backward pass (zero_grad comes first in a step, before backward)"
        )
    return ""


def check_clipping(train, make):
    """Task 4: the step is taken with gradients clipped to the norm grad_clip."""
    model, fresh = make(0), make(0)
    x, y = batch(1)
    before = [p.detach().clone() for p in model.parameters()]
    opt = torch.optim.SGD(model.parameters(), lr=1.0)  # the step is minus the clipped gradient
    seen, stepped, zeroed = filled(model), [], []
    opt.register_step_post_hook(lambda *_: stepped.append(1))
    zero_grad = opt.zero_grad  # each call notes how many gradients the backward had made by then
    opt.zero_grad = lambda *a, **k: (zeroed.append(len(seen)), zero_grad(*a, **k))[1]
    train.train_step(model, opt, x, y, grad_clip=1e-3)
    moved = torch.cat(
        [(b - p.detach()).flatten() for b, p in zip(before, model.parameters(), strict=True)]
    )
    grads = [p.grad.flatten() for p in model.parameters() if p.grad is not None]
    left = torch.cat(grads).norm().item() if grads else 0.0  # the norm .grad holds after the step
    by_clip = seen and any(seen) and zeroed and max(zeroed) == 0  # zero_grad ran before backward
    zeros = cleared(model, seen)  # '' unless every .grad is None or zero
    assert moved.any(), "an SGD step of lr 1 did not move the weights: " + (
        (
            "every .grad is zero after train_step: the clip scaled them to 0 "
            "(clip_grad_norm_(parameters, grad_clip): a third argument is its norm_type), after "
            "the backward pass made them (and after the optimizer's zero_grad)"
            if by_clip and zeros
            else zeros
        )
        or (
            ".grad holds a gradient after train_step, so optimizer.step() ran before "
            "loss.backward() made it"
            if stepped
            else "optimizer.step() never ran (a branch that skipped it, a return before it, or "
            "no call): every batch takes its step, on the gradient clipped first"
        )
    )
    rate = opt.param_groups[0]["lr"]
    assert rate == 1.0, (
        f"train_step changed the optimizer's lr, 1.0 before it and {rate:.3g} after: the rate is "
        "the caller's (train() sets lr_at's); the clip rescales the gradient in place and "
        "leaves the lr alone"
    )
    assert stepped, (
        "the weights moved, but the optimizer never stepped: train_step takes its step with "
        "optimizer.step() of the optimizer it is given (a step written by hand, or an optimizer "
        "made inside train_step, leaves that one unstepped)"
    )
    fresh(x, y)[1].backward()
    gradient = torch.cat([p.grad.flatten() for p in fresh.parameters()])  # this batch's, unclipped
    assert abs(moved.norm().item() - 1e-3) < 1e-6, (
        f"an SGD step of lr 1 moved the weights by {off(moved.norm().item(), 1e-3)} grad_clip = 1e-3: "
        + clipped_instead(
            moved, gradient, 1e-3, {n: p.numel() for n, p in fresh.named_parameters()}, left
        )
    )


def clipped_instead(
    moved: torch.Tensor, gradient: torch.Tensor, clip: float, sizes: dict[str, int], left: float
) -> str:
    """What the step took instead of `gradient` scaled to norm `clip` (`sizes`: each parameter's
    name -> its number of entries; `left`: the norm .grad holds after the step): the bug's own
    words, so a symptom row (the order of the calls) follows only the failure that is its bug."""
    if torch.allclose(moved, gradient, atol=1e-6):  # SGD's lr 1: the step is the gradient taken
        if abs(left - clip) < 1e-6:  # .grad was clipped, but after the step took it
            return (
                "the step took the unclipped gradient, and .grad holds it clipped after the step: "
                "clip_grad_norm_ between backward() and step()"
            )
        return (
            "the step took the unclipped gradient, and .grad is unclipped after train_step too: "
            "nothing rescaled the parameters' .grad between backward() and step() "
            "(clip_grad_norm_ takes model.parameters(), after loss.backward() filled their "
            ".grad, and rescales it in place)"
        )
    if torch.allclose(moved, gradient.clamp(-clip, clip), atol=1e-6):
        return (
            "the step took the gradient with each entry cut to within grad_clip (clip_grad_value_): "
            "grad_clip bounds the gradient's norm, torch.nn.utils.clip_grad_norm_"
        )
    if torch.allclose(moved, gradient / clip, rtol=1e-4, atol=1e-6):
        return (
            "the step took the gradient divided by grad_clip: clip_grad_norm_ rescales it to the "
            "norm grad_clip (and leaves a smaller one alone)"
        )
    clipped = gradient * (clip / gradient.norm())  # the step it should have taken
    if torch.allclose(moved, 2 * clipped, atol=1e-6):
        return "it is twice the clipped step: optimizer.step() ran twice in one train_step"
    norm = moved.norm().item()
    parts = gradient.split(list(sizes.values()))  # each parameter's own gradient
    alone = [g * min(1.0, clip / g.norm().item()) for g in parts]
    if sizes and torch.allclose(moved, torch.cat(alone), atol=1e-6):
        return (
            "the step took each parameter's gradient cut to grad_clip on its own: one total norm, "
            "of all of them as one vector (clip_grad_norm_ of model.parameters() at once)"
        )
    whole = [name for name, m, g in zip(sizes, moved.split(list(sizes.values())), parts, strict=True)
             if g.any() and torch.allclose(m, g, atol=1e-6)]  # fmt: skip
    if sizes and 0 < len(whole) < len(sizes):
        return (
            f"{whole[0]} moved by its whole gradient, unclipped, and the others by less: it was "
            "left out of the clip (clip_grad_norm_ takes model.parameters(), every one of them)"
        )
    if torch.allclose(moved, gradient * (clip / gradient.norm(p=1)), atol=1e-6):
        return (
            "the step took the gradient cut to an L1 norm of grad_clip (clip_grad_norm_'s "
            "norm_type is 2, the default)"
        )
    if abs(moved.abs().max().item() / clip - 1) < 1e-4 and moved.abs().max() < 0.999 * norm:
        return (
            "its largest entry is grad_clip: the gradient cut by its largest entry "
            "(norm_type=inf); the norm clip_grad_norm_ cuts is the L2 one, its default"
        )
    cut = norm < 0.999 * gradient.norm().item()  # scaled down, to some norm of its own
    if cut and torch.allclose(moved, gradient * (norm / gradient.norm()), atol=1e-6):
        return (
            f"the step took the gradient cut to the norm {norm:.3g} (clip_grad_norm_'s max_norm "
            "is grad_clip)"
        )
    return "expected the gradient scaled down to the norm grad_clip"


def check_eval_mode(train, make):
    """Task 2: the estimate runs in eval mode without gradients, and leaves the mode it found."""
    model = make(0, p=0.5)
    model.train()
    model.emb.weight.requires_grad_(False)  # the caller's frozen weight: frozen it stays
    batches = [batch(1), batch(2)]
    model.seen.clear()
    model.frozen.clear()
    modes, train_ = [], model.train  # the modes handed model.train(...) after a forward
    model.train = lambda mode=True: (model.seen and modes.append(mode), train_(mode))[1]
    first = train.estimate_loss(model, batches)
    del model.train  # the class's method again
    assert model.seen, "estimate_loss never ran the model: the loss of each batch is model(x, y)[1]"
    frozen = [n for n, p in model.named_parameters() if not p.requires_grad and n != "emb.weight"]
    assert not frozen, (
        f"after estimate_loss {frozen[0]} (and {len(frozen) - 1} more) no longer requires grad: "
        "the weights are frozen (requires_grad_(False)) for every later step; `with torch.no_grad():` "
        "switches gradients off for its block alone"
    )
    off = not any(getattr(model, "dropping", [True]))  # its dropout was in eval mode throughout
    assert all(not seen[0] for seen in model.seen), (
        "estimate_loss ran the model with model.training True, its dropout off: the submodules "
        "alone were switched; model.eval() switches the model and every submodule"
        if off
        else "estimate_loss ran the model in train mode: call model.eval() first (dropout stays on)"
    )
    source = inspect.getsource(train.estimate_loss)
    assert all(not seen[1] for seen in model.seen), (
        "estimate_loss ran its forwards with gradients on, the weights frozen instead "
        "(requires_grad_(False), the caller's choice): the forwards go inside a "
        "`with torch.no_grad():` block, which records no graph and changes no weight"
        if max(model.frozen) > 1  # more than the caller's one frozen weight
        else "estimate_loss built a graph: the forwards go inside a `with torch.no_grad():` block"
        + (
            " (the call alone, as a statement, switches nothing off)"
            if not re.search(r"^\s*with\b", source, re.M)  # no with block at all
            else ""
        )
    )
    assert not model.emb.weight.requires_grad, (
        "after estimate_loss the caller's frozen emb.weight requires grad again: which weights "
        "train is the caller's choice, and estimate_loss changes none (requires_grad_(True) "
        "unfreezes every one; `with torch.no_grad():` needs nothing put back)"
    )
    still = [name for name, m in model.named_modules() if not m.training]
    assert model.training <= (not still), (
        f"after estimate_loss {still[0]} is still in eval mode, though model.training is True: "
        "model.train(mode) sets the mode of every submodule; model.training = ... the top's flag alone"
    )
    assert model.training or modes[-1:] != [False], (
        "the model's mode after estimate_loss: expected train mode (it was in train mode "
        "before), got eval mode: model.train(False) ran after the forwards, where the mode "
        "saved before model.eval() was train mode (model.train(True))"
    )
    finally_ = "finally" in source  # its restore is there, and wrong
    assert model.training, (
        "the model's mode after estimate_loss: expected train mode (it was in train mode "
        "before), got eval mode: "
        + (
            "its finally gives back another mode than the one it found; the mode saved before "
            "the switch, whichever it was, is the one to give back"
            if finally_
            else "put it back in the mode it was in, in a finally (it runs on every way out; an "
            "except only on an error)"
        )
    )
    assert isinstance(first, float), (
        f"the type estimate_loss returns: expected float, got {show(type(first))}: "
        "a Python float (.item() of each loss)"
    )
    assert first == train.estimate_loss(model, batches), (
        "the same batches must give the same float: dropout on, or randomness in the estimate?"
    )
    # the mean itself is its own test's (test_estimate_loss_is_the_mean_loss_over_the_batches)
    model.eval()  # a caller measuring a model it had put in eval mode expects eval mode back
    train.estimate_loss(model, batches)
    assert not model.training, (
        "the model's mode after estimate_loss: expected eval mode (it was in eval mode before), "
        "got train mode: put it back in the mode it was in, not always in train mode"
    )


def check_val_from_val_split(train, make):
    """The loop: validation batches come from the held-out end of the text, never from training."""
    cfg = tiny_config(train, steps=3, eval_every=1)
    data = torch.cat([corpus(300, V=4), 4 + corpus(100, V=4, seed=1)])  # (400,) train 0-3, val 4-7
    model = make(0)
    train.train(model, {}, cfg, data, progress=False)
    measured = [lo for _, grad, lo, _ in model.seen if not grad]  # the estimates' forwards
    trained = [hi for _, grad, _, hi in model.seen if grad]  # the training steps' forwards
    assert measured and min(measured) >= 4, "the validation estimate saw training text (ids 0-3)"
    assert trained and max(trained) <= 3, "a training step saw the held-out text (ids 4-7)"


FLOOR = (
    "it climbs to min_lr, the floor of the cosine"  # the warm-up bug's words (its says in bugs.py)
)


# what a small miss of an exact end is not: float64 rounds numbers of this size by about 1e-19
NOT_ROUNDING = (
    ", more than float64's rounding (about 1e-19 here): cos(math.pi * 1) is -1 to the last digit "
    "(a π of fewer digits, or a fraction that ends short of 1?)"
)


def in_float32(got: float, want: float) -> str:
    """'' unless `got` misses `want` by about float32's rounding (7 digits): then that, in words."""
    if not 1e-9 < abs(got - want) / abs(want) < 1e-6:
        return ""
    return (
        ": about float32's rounding (7 digits), far more than float64's: did the rate pass "
        "through a float32 tensor (torch.tensor's default dtype)?"
    )


def check_lr(train, make=None):
    """Task 3: the schedule peaks at cfg.lr and reaches cfg.min_lr at step = steps (a learning rate off by 10x)."""
    # min_lr / lr is not warmup / steps: a warm-up over steps, not warmup, does not end at min_lr
    cfg = train.TrainConfig(steps=1000, warmup=100, lr=3e-3, min_lr=2e-4)
    lrs = [train.lr_at(s, cfg) for s in range(cfg.steps + 1)]
    kind = next((type(r) for r in lrs if type(r) is not float), float)  # torch's, numpy's cos
    assert kind is float, f"lr_at returned a {kind.__module__}.{kind.__name__}, not a float: " + (
        "a comma after a return's value makes a tuple (return a, is (a,))"
        if kind is tuple
        else "math's cos, not torch's or numpy's (they compute in their own precision)"
    )
    assert abs(max(lrs) - cfg.lr) < 1e-12, (
        f"the peak learning rate is {off(max(lrs), cfg.lr)} lr = {cfg.lr}"
        + in_float32(max(lrs), cfg.lr)
    )
    last = train.lr_at(cfg.warmup - 1, cfg)
    assert abs(last - cfg.lr) < 1e-12, (
        f"lr_at(warmup - 1), the last warm-up step, is {off(last, cfg.lr)} lr = {cfg.lr}: "
        "warm-up ends at exactly lr"
        + (f": {FLOOR}, not to lr" if abs(last - cfg.min_lr) < 1e-12 else "")
        + (  # a hair under the peak: the cosine's top, one step early
            ": step warmup - 1 took the cosine's branch (step < warmup is the warm-up's test)"
            if 0 < cfg.lr - last < 1e-6
            else ""
        )
    )
    start = train.lr_at(cfg.warmup, cfg)
    one_on = (
        cfg.min_lr + (cfg.lr - cfg.min_lr) * (1 + math.cos(math.pi / (cfg.steps - cfg.warmup))) / 2
    )
    assert abs(start - cfg.lr) < 1e-12, (
        f"lr_at(warmup) is {off(start, cfg.lr)} lr = {cfg.lr}: the cosine starts at lr"
        + in_float32(start, cfg.lr)
        + (  # the rate of step warmup + 1: more than rounding, one step along the cosine
            ", and this is step warmup + 1's rate: the step counted one on (step + 1?)"
            if abs(start - one_on) < 1e-12
            else ""
        )
    )
    default = train.TrainConfig.min_lr  # the class's own, where cfg.min_lr was meant
    assert abs(lrs[-1] - cfg.min_lr) < 1e-12, (
        f"lr_at(steps) is {off(lrs[-1], cfg.min_lr)} min_lr = {cfg.min_lr}: the cosine ends there"
        + NOT_ROUNDING * (abs(lrs[-1] - cfg.min_lr) < 1e-6)
        + (
            f" ({default:g} is TrainConfig's default min_lr: the schedule reads cfg.min_lr)"
            if isinstance(default, float) and abs(lrs[-1] - default) < 1e-12
            else ""
        )
    )
    first = cfg.lr / cfg.warmup  # step 0 gets one warmup-th of the peak
    from_floor = cfg.min_lr + (cfg.lr - cfg.min_lr) / cfg.warmup
    assert abs(lrs[0] - first) < 1e-12, (
        f"lr_at(0) is {off(lrs[0], first)} lr / warmup = {first:g}: warm-up climbs from 0, "
        "lr * (step + 1) / warmup"
        + (", not from min_lr" if abs(lrs[0] - from_floor) < 1e-12 else "")
    )
    mid = train.lr_at(cfg.warmup + (cfg.steps - cfg.warmup) // 2, cfg)
    half = (cfg.lr + cfg.min_lr) / 2
    assert abs(mid - half) < 1e-9, (
        f"halfway down the cosine the rate is {off(mid, half)} the mean of lr and min_lr, {half:g}"
    )
    for s in range(cfg.steps):  # up during warm-up, then down
        rising = s < cfg.warmup
        step = lrs[s + 1] - lrs[s]
        assert step >= -1e-15 if rising else step <= 1e-15, (
            f"lr_at({s + 1}) - lr_at({s}) is {step:.3g}: expected "
            + ("no fall during warm-up" if rising else "no rise along the cosine")
        )


def check_first_step_size(train, make):
    """The loop: Adam's first step moves each weight by about the learning rate of step 0."""
    cfg = tiny_config(train, steps=1, warmup=0, weight_decay=0.0, lr=1e-2, min_lr=1e-3)
    model = make(0)
    before = copy.deepcopy(model.out.weight.detach())
    train.train(model, {}, cfg, corpus(), progress=False)
    step = (model.out.weight.detach() - before).abs().max().item()  # Adam: ~ lr * g / |g| = lr
    assert 0.5 * cfg.lr < step < 1.5 * cfg.lr, (
        f"the first step moved a weight by {step:.2g}; Adam moves it by about lr = {cfg.lr}"
    )


def run_pair(train, make, cfg, data, stop_at: int):
    """(uninterrupted, stopped at stop_at then resumed): each the model and the losses returned;
    and whether the resumed model's first forward ran with the weights its checkpoint saved."""
    with tempfile.TemporaryDirectory() as tmp:
        whole = make(0)
        out_whole = train.train(whole, {"V": 8}, cfg, data, Path(tmp) / "a.pt", progress=False)
        stopped = make(0)

        def stop(step):
            if step == stop_at:
                raise KeyboardInterrupt

        try:
            train.train(
                stopped, {"V": 8}, cfg, data, Path(tmp) / "b.pt", progress=False, on_step=stop
            )
        except KeyboardInterrupt:
            pass
        saved = torch.load(Path(tmp) / "b.pt", weights_only=True)["model"]
        resumed = make(1)  # other weights: the checkpoint must replace them all
        first = []  # the weights of the resumed model's first forward

        def weights(module, args):
            if not first:
                first.append({k: v.detach().clone() for k, v in module.state_dict().items()})

        hook = resumed.register_forward_pre_hook(weights)
        out_resumed = train.train(resumed, {"V": 8}, cfg, data, Path(tmp) / "b.pt", progress=False)
        hook.remove()
    loaded = bool(first) and all(torch.equal(first[0][k], v) for k, v in saved.items())
    return (whole, out_whole), (resumed, out_resumed), loaded


def check_resume(train, make):
    """The loop: killed and resumed, a run ends with exactly the weights and losses of one never stopped."""
    cfg = tiny_config(train, steps=8, checkpoint_every=2, eval_every=3)
    with_dropout = lambda seed: make(seed, p=0.3)  # noqa: E731 (the global generator matters too)
    stop_at = 5
    (whole, a), (resumed, b), loaded = run_pair(train, with_dropout, cfg, corpus(), stop_at)
    assert loaded, "the resumed model ran without the checkpoint's weights: they were not restored"
    ran, again = a["losses"]["train"], b["losses"]["train"]
    resumed_at = stop_at // cfg.checkpoint_every * cfg.checkpoint_every  # the last step saved
    extra = len(again) - len(ran)
    assert extra != resumed_at, (
        f"the resumed run recorded {len(again)} training losses, the uninterrupted one {len(ran)}: "
        "the step counter started again at 0 (a resume restores the step from the checkpoint)"
    )
    assert extra == 0, (
        f"the resumed run recorded {len(again)} training losses, the uninterrupted one {len(ran)}: "
        "the step a checkpoint records is not the number of losses it holds (saved before the "
        "step counter moved on?)"
    )
    first = next((i for i, (x, y) in enumerate(zip(ran, again, strict=True)) if x != y), None)
    assert first != resumed_at, (
        f"the first step after resuming (step {resumed_at}) already had another loss, "
        f"{again[first]:.6g} for {ran[first]:.6g}: its batch or dropout mask differed, so a "
        "generator's state was not restored (the batches' generator, torch's global one)"
    )
    for (name, p), q in zip(whole.state_dict().items(), resumed.state_dict().values(), strict=True):
        assert torch.equal(p, q), (
            f"{name} differs after resuming, though step {resumed_at}'s loss matched: the "
            "optimiser's state was not restored (Adam's moments)"
            if first is not None and first > resumed_at
            else f"{name} differs after resuming: optimiser or generator state lost?"
        )
    assert a["losses"] == b["losses"], (
        "the resumed run's losses differ from the uninterrupted run's"
    )


CHECKS = [  # in the order of the tasks, then the loop's own
    check_targets_shifted,
    check_eval_mode,
    check_lr,
    check_zero_grad,
    check_clipping,
    check_val_from_val_split,
    check_first_step_size,
    check_resume,
]


def assert_check_passes(check, train, make) -> None:
    """Run one check on `train`: its own asserts (each with the bug's name) decide."""
    check(train, make)


# --- a curated bug of bugs.py in a copy of the reference -------------------------------------

SOLUTION = at(Path(__file__).resolve().parent).solution  # its train.py has the lines


def reference_with(bug: Bug) -> ModuleType:
    """A fresh copy of the reference training module with `bug`'s line in place of the right one."""
    return broken_copy(SOLUTION, "train", bug)


def first_failing(train, make) -> str | None:
    """The name of the first check in CHECKS that fails on `train`, or None."""
    for check in CHECKS:
        try:
            check(train, make)
        except AssertionError:
            return check.__name__
    return None
