"""Step 6 tasks 1-4 and the loop around them: each classic bug has its check (loop_checks.py)."""

import dataclasses
import errno
import os
import re
from pathlib import Path

import pytest
import torch

from common import expect
from common.course import course_step
from common.loader import load_file, load_fresh

checks = load_file(course_step("step-06").folder / "loop_checks.py")


LOOP = {"check_val_from_val_split", "check_first_step_size", "check_resume"}  # the given loop's
CHECKED = {  # the TODO each of the tasks' checks holds (the loop's run on the test's own)
    "check_targets_shifted": "task 1",
    "check_eval_mode": "task 2",
    "check_lr": "task 3",
    "check_zero_grad": "task 4",
    "check_clipping": "task 4",
}
AS_GIVEN = "each batch's x as it comes, (B, T): B sequences of T ids (a model reads along T)"
CORE = {"check_targets_shifted", "check_eval_mode", "check_lr", "check_zero_grad", "check_clipping"}


def _marks(check) -> list:
    """A check of the given loop runs on the test's own TODOs (given); a TODO's trap is core."""
    name = check.__name__
    todo = [pytest.mark.todo(CHECKED[name])] if name in CHECKED else []
    return [pytest.mark.given] if name in LOOP else todo + [pytest.mark.core] * (name in CORE)


@pytest.mark.parametrize(
    "check", [pytest.param(c, id=c.__name__, marks=_marks(c)) for c in checks.CHECKS]
)
def test_check(check, train, tiny, given_todos):
    checks.assert_check_passes(check, given_todos(train) if check.__name__ in LOOP else train, tiny)


@pytest.mark.todo("task 1")
@pytest.mark.core  # its parity: windows of the data, targets one id later
def test_batches_are_windows_of_the_data_at_seeded_starts(train):
    data = torch.arange(50)  # (50,) id == position
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    state = torch.get_rng_state()
    x, y = train.get_batch(data, 64, 6, g1)
    expect.equal("torch's global random state after get_batch", torch.get_rng_state(), state,
                 "untouched: every draw comes from the generator passed in (generator=), so a "
                 "resumed run draws the same batches")  # fmt: skip
    expect.differs("the generator's state after get_batch", g1.get_state(), g2.get_state(),
                   "moved on by the draw: the starts come from the generator passed in, whose "
                   "state a checkpoint keeps (a state put back after the draw, or a generator of "
                   "get_batch's own, leaves it, and a resumed run draws step 0's batches "
                   "again)")  # fmt: skip
    expect.equal("the types of x and y", (type(x), type(y)), (torch.Tensor, torch.Tensor),
                 "one (B, T) tensor each: torch.stack joins the windows")  # fmt: skip
    expect.equal("the dtypes of x and y", (x.dtype, y.dtype), (torch.long, torch.long))
    for name, got in (("x", x), ("y", y)):  # B = 64 windows of 44 starts: starts repeat
        expect.shape(f"get_batch(data, B=64, T=6)'s {name}", got, (64, 6),
                     "B rows, each drawn on its own (a start may come twice), of T ids")  # fmt: skip
    assert not torch.equal(x, y + 1), "x is y one id later: x and y swapped (the pair is x, y)"
    assert x.data_ptr() != y.data_ptr(), checks.ALIASED
    expect.differs("the starts of the batch's rows", x[1:, 0], x[:1, 0].expand(63),
                   "each of the B rows draws its own start: randint's size is (B,)")  # fmt: skip
    again = train.get_batch(data, 64, 6, g2)[0]  # (64, 6)
    reseeded = g1.initial_seed() != 3 or g2.initial_seed() != 3  # .seed() or .manual_seed() ran
    expect.equal("the batch of a second generator seeded alike", again, x, (
        "the same batch: get_batch reseeded the generator it was given (its seed is no longer "
        "3): the starts are drawn from its state as it comes"
        if reseeded
        else "the same batch: the starts come from the generator passed in (generator=), "
        "not from torch's global one or another source of random numbers"
    ))  # fmt: skip
    state = g1.get_state()  # the generator as the next call finds it
    following = train.get_batch(data, 64, 6, g1)[0]  # (64, 6)
    expect.differs("the next batch drawn with the same generator", following, x,
                   "the generator's state after get_batch is the one it had before: a draw moves "
                   "it on (a generator.set_state(...) after the draw puts it back)"
                   if torch.equal(g1.get_state(), state)
                   else "each call draws new starts from the generator it is given, not a new one")  # fmt: skip
    run = [i for i in range(64) if not torch.equal(x[i] - x[i, 0], torch.arange(6))]  # rows
    if run:  # data's id is its position here, so a window reads start, start + 1, ...
        raise AssertionError(
            f"the batch's row {run[0]} is {x[run[0]].tolist()}, not 6 consecutive ids of the text "
            "(0, 1, ..., 49 here): each row is a window of the text as it stands (nothing "
            "shuffled first)"
        )
    expect.at_most("the largest start of 64 windows of T = 6 ids in 50", x[:, 0].max().item(),
                   50 - 7, "a window must fit, its targets (one id later) included")  # fmt: skip
    drawn = train.get_batch(data, 4000, 6, g1)[0][:, 0]  # (4000,): the starts of 4000 windows
    if len(starts := drawn.unique()) < 40:  # whole stretches never drawn, not one end missed
        expect.equal("the distinct starts of 4000 windows of T = 6 ids in 50", len(starts), 44,
                     f"every valid start, 0 to len(data) - T - 1 = 43, can be drawn; these were: "
                     f"{starts.tolist()}")  # fmt: skip
    expect.equal("the smallest start of 4000 windows", drawn.min().item(), 0,
                 "every valid start can be drawn, the first too")  # fmt: skip
    expect.equal("the largest start of 4000 windows of T = 6 ids in 50", drawn.max().item(), 50 - 7,
                 "every valid start can be drawn, the last too: len(data) - T - 1 = 43 (its "
                 "targets end on the last id)")  # fmt: skip
    counts = torch.bincount(drawn, minlength=44)  # (44,) ~91 each, spread ~9.4
    expect.at_least("the draws of start 0 and of start 43, of 4000", counts[[0, -1]], 60,
                    "each start is as likely as any other (~91 of 4000 each): rounding a "
                    "uniform number halves the two ends; randint, or floor")  # fmt: skip


@pytest.mark.todo("task 1")
def test_get_batch_draws_starts_far_into_a_long_corpus(train):
    data = torch.arange(100_000)  # (100000,) id == position: the run's corpus is ten times longer
    x, y = train.get_batch(data, 8, 6, torch.Generator().manual_seed(0))
    expect.at_least("the largest start of 8 windows in 100,000 ids", x[:, 0].max().item(), 32_768,
                    "starts up to len(data) - T - 1, past what an int16 holds")  # fmt: skip
    expect.equal("y after 8 windows in 100,000 ids", y, x + 1, "each window's next ids")


@pytest.mark.todo("task 1")
@pytest.mark.parametrize("B, T", [(1, 6), (4, 1)])
def test_get_batch_keeps_an_axis_of_one(train, B, T):
    x, y = train.get_batch(torch.arange(50), B, T, torch.Generator().manual_seed(0))
    for name, got in (("x", x), ("y", y)):
        expect.shape(f"get_batch(data, B={B}, T={T})'s {name}", got, (B, T),
                     "(B, T) whatever their sizes: an axis of 1 is kept")  # fmt: skip


@pytest.mark.todo("task 1")
def test_get_batch_draws_only_from_its_generator(train):
    data = torch.arange(50)
    torch.manual_seed(0)
    a = train.get_batch(data, 8, 6, torch.Generator().manual_seed(1))[0]
    torch.manual_seed(1)  # another global state: the batch must not change
    b = train.get_batch(data, 8, 6, torch.Generator().manual_seed(1))[0]
    expect.equal("the batch after another global seed", b, a, "the same batch: only g draws")


@pytest.mark.todo("task 2")
@pytest.mark.core  # its parity: the mean of the batches' losses, each computed here
def test_estimate_loss_is_the_mean_loss_over_the_batches(train, tiny):
    model = tiny(0).eval()
    batches = [checks.batch(seed, B=2 + seed) for seed in range(3)]  # unequal sizes: a plain mean
    with torch.no_grad():
        each = [model(x, y)[1].item() for x, y in batches]
    model.shapes.clear()
    given = list(batches)  # the pairs as they were handed over
    got = train.estimate_loss(model, batches)
    kind = f"{type(got).__module__}'s float: float(...) around it" if isinstance(got, float) else ""
    expect.equal("the type estimate_loss returns", type(got), float,
                 f"a Python float ({kind or '.item()'})")  # fmt: skip
    expect.equal("the batches in the caller's list after estimate_loss", len(batches), 3,
                 "as it was handed over: the caller measures the same list again at every "
                 "estimate (read it; pop() or del empties it)")  # fmt: skip
    expect.equal("the shapes of the ids the model was given", model.shapes,
                 [tuple(x.shape) for x, _ in given], AS_GIVEN)  # fmt: skip
    with torch.no_grad():
        swapped = sum(model(y, x)[1].item() for x, y in given) / 3  # each batch read as (y, x)
    swap = abs(got - swapped) < 1e-6  # the mean of the batches' losses with x and y swapped
    mean = "the batches are (x, y) pairs: yours took them as (y, x)" if swap else "the mean"
    expect.close("estimate_loss", got, sum(each) / 3, 1e-6, f"{mean} of the 3 losses {each}")


@pytest.mark.todo("task 2")
@pytest.mark.core  # its trap: measured in train mode, dropout on
def test_estimate_loss_of_a_model_with_dropout_is_its_eval_mode_loss(train, tiny):
    model = tiny(0, p=0.5).eval()
    batches = [checks.batch(1), checks.batch(2)]
    with torch.no_grad():  # before the student's code runs: nothing it does to the model reaches it
        want = sum(model(x, y)[1].item() for x, y in batches) / 2
    model.train()
    state = torch.get_rng_state()
    got = train.estimate_loss(model, batches)
    if not torch.equal(torch.get_rng_state(), state):  # its bytes would say nothing
        raise AssertionError(
            "torch's global random state changed in estimate_loss: a measurement draws no random "
            "number (no dropout mask in eval mode, no randperm or rand, no seed set): each draw "
            "changes every later training step's dropout masks"
        )
    expect.close("estimate_loss with dropout 0.5", got, want, 1e-6, "dropout off while measuring")


class ForwardFailed(Exception):
    """What Refuses raises: no NotImplementedError (a RuntimeError), so a starter's TODO is not it."""


class Interrupted(BaseException):
    """What a Ctrl-C is to an `except Exception`: a BaseException, as KeyboardInterrupt is (one
    of pytest's own would stop the session)."""


class Refuses(torch.nn.Module):
    """A model whose forward raises in eval mode: an estimate must still give train mode back."""

    def forward(self, x, y):
        raise ForwardFailed("a forward that fails")


@pytest.mark.todo("task 2")
def test_estimate_loss_gives_the_mode_back_even_when_a_forward_raises(train):
    model = Refuses().train()
    try:
        got, raised = train.estimate_loss(model, [checks.batch(1)]), False
    except ForwardFailed:
        raised = True  # the forward's error went on to the caller, as it must
    except NotImplementedError:
        raise  # the starter's
    except Exception as other:
        if not isinstance(other.__cause__ or other.__context__, ForwardFailed) or isinstance(
            other, NameError | AttributeError | TypeError
        ):
            raise  # Python's own error on the way out (a name never set): the check says which
        raise AssertionError(
            f"a forward raised ForwardFailed inside estimate_loss, which raised "
            f"{type(other).__name__}({str(other)!r}) in its place: the forward's error goes on to "
            "the caller as it is (try/finally, no except)"
        ) from None
    assert raised, (
        f"a forward raised ForwardFailed inside estimate_loss, which returned {got!r} instead of "
        "raising it: an estimate whose forward fails must fail too (try/finally, no except)"
    )
    expect.equal("model.training after a forward raised", model.training, True, "try/finally")
    model = Refuses().train()
    model.forward = lambda x, y: (_ for _ in ()).throw(Interrupted())  # a Ctrl-C in a forward
    try:
        train.estimate_loss(model, [checks.batch(1)])
    except Interrupted:
        pass
    expect.equal("model.training after a Ctrl-C in a forward (a BaseException, not an Exception)",
                 model.training, True, "a finally runs on every way out; `except Exception` lets a "
                 "Ctrl-C by")  # fmt: skip


@pytest.mark.todo("task 2")
@pytest.mark.core  # its trap: measured with gradients (a graph kept at every estimate)
def test_estimate_loss_builds_no_graph_and_leaves_the_weights_alone(train, tiny):
    model = tiny(0)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    with torch.enable_grad():  # given back as it was, whatever estimate_loss left
        train.estimate_loss(model, [checks.batch(1), checks.batch(2)])
        after = torch.is_grad_enabled()
    expect.equal("gradient tracking after estimate_loss", after, True,
                 "torch.no_grad() as a with block gives it back; set_grad_enabled(False) as a "
                 "statement leaves every later training step without gradients")  # fmt: skip
    expect.equal("the forwards estimate_loss ran", len(model.seen), 2, "one per batch, of the "
                 "model it was given" + (" (not of a copy: a second model in memory)" if not
                 model.seen else ""))  # fmt: skip
    expect.equal("grad enabled in each forward", [s[1] for s in model.seen], [False, False],
                 "torch.no_grad() around the forwards")  # fmt: skip
    for name, p in model.named_parameters():
        expect.equal(f"{name}'s dtype after estimate_loss", p.dtype, before[name].dtype,
                     "untouched: a model cast to measure (model.double()) trains on cast")  # fmt: skip
        expect.equal(f"{name} after estimate_loss", p.detach(), before[name], "untouched")
        expect.equal(f"{name}.grad after estimate_loss", p.grad, None, "no backward pass")
    with torch.no_grad():  # a caller that measures without gradients keeps them off
        train.estimate_loss(model, [checks.batch(1)])
        after = torch.is_grad_enabled()
    expect.equal("gradient tracking after estimate_loss inside a caller's torch.no_grad()", after,
                 False, "as it was before the call: a with block gives back what it found")  # fmt: skip


# nanoGPT's get_lr (warm-up to lr, then a cosine to min_lr) as the reference gives it, recorded
# by python -m tools.recorded --write and held to the reference by tests/test_recorded.py: the
# test needs no reference, so it runs where Step 6 is still open (tools.release)
# BEGIN lr-schedule
LR_AT = {  # (steps, warmup, lr, min_lr) -> {step: the reference's lr_at(step)}
    (1000, 100, 0.003, 0.0003): {
        0: 3e-05, 1: 6e-05, 25: 0.00078, 50: 0.00153,
        75: 0.00228, 99: 0.003, 100: 0.003, 101: 0.002999991775338017,
        125: 0.0029948628424238564, 150: 0.002979490466566481, 175: 0.002953999865490242, 200: 0.0029185850380609763,
        225: 0.0028735155124994774, 250: 0.0028191342951089924, 275: 0.0027558552597901393, 300: 0.0026841599982106203,
        325: 0.002604594154601839, 350: 0.002517763273076828, 375: 0.0024243281890739122, 400: 0.002325,
        425: 0.0022205346533499446, 450: 0.002111727193489653, 475: 0.001999405710888403, 500: 0.0018844250398503562,
        525: 0.0017676602527093388, 550: 0.00165, 575: 0.0015323397472906614, 600: 0.001415574960149644,
        625: 0.0013005942891115968, 650: 0.0011882728065103474, 675: 0.001079465346650056, 700: 0.0009750000000000004,
        725: 0.0008756718109260882, 750: 0.0007822367269231718, 775: 0.0006954058453981609, 800: 0.0006158400017893798,
        825: 0.000544144740209861, 850: 0.00048086570489100773, 875: 0.00042648448750052257, 900: 0.0003814149619390237,
        925: 0.0003460001345097579, 950: 0.00032050953343351916, 975: 0.00030513715757614346, 999: 0.00030000822466198296,
        1000: 0.0003,
    },
    (50, 7, 0.01, 0.001): {
        0: 0.0014285714285714286, 1: 0.002857142857142857, 2: 0.004285714285714286, 3: 0.005714285714285714,
        4: 0.0071428571428571435, 5: 0.008571428571428572, 6: 0.01, 7: 0.010000000000000002,
        8: 0.009987995276485983, 9: 0.009952045156337998, 10: 0.009892341449001675, 11: 0.009809202699587828,
        12: 0.009703072489296468, 13: 0.00957451706871916, 14: 0.009424222336647137, 15: 0.00925299018050445,
        16: 0.009061734197931645, 17: 0.008851474822347018, 18: 0.008623333878492854, 19: 0.008378528597015012,
        20: 0.008118365120010788, 21: 0.007844231532195687, 22: 0.007557590454870874, 23: 0.007259971242205702,
        24: 0.0069529618214715086, 25: 0.006638200220762563, 26: 0.006317365829407465, 27: 0.0059921704377004364,
        28: 0.005664349103759466, 29: 0.005335650896240535, 30: 0.005007829562299566, 31: 0.004682634170592536,
        32: 0.004361799779237436, 33: 0.004047038178528493, 34: 0.003740028757794299, 35: 0.0034424095451291267,
        36: 0.0031557684678043146, 37: 0.0028816348799892135, 38: 0.00262147140298499, 39: 0.0023766661215071476,
        40: 0.002148525177652982, 41: 0.001938265802068357, 42: 0.0017470098194955499, 43: 0.0015757776633528653,
        44: 0.0014254829312808403, 45: 0.0012969275107035344, 46: 0.0011907973004121738, 47: 0.0011076585509983282,
        48: 0.0010479548436620038, 49: 0.0010120047235140175, 50: 0.001,
    },
    (20, 0, 0.0005, 5e-05): {
        0: 0.0005, 1: 0.000497229876633906, 2: 0.0004889877161664096, 3: 0.00047547646794238277,
        4: 0.00045702882373436317, 5: 0.0004340990257669732, 6: 0.0004072516817658065, 7: 0.000377147862441398,
        8: 0.0003445288237343632, 9: 0.000310197754634052, 10: 0.000275, 11: 0.000239802245365948,
        12: 0.00020547117626563684, 13: 0.00017285213755860196, 14: 0.00014274831823419358, 15: 0.00011590097423302682,
        16: 9.297117626563684e-05, 17: 7.452353205761725e-05, 18: 6.101228383359046e-05, 19: 5.277012336609403e-05,
        20: 5e-05,
    },
    (9, 3, 0.002, 0.002): {
        0: 0.0006666666666666666, 1: 0.0013333333333333333, 2: 0.002, 3: 0.002,
        4: 0.002, 5: 0.002, 6: 0.002, 7: 0.002,
        8: 0.002, 9: 0.002,
    },
}  # fmt: skip
# END lr-schedule


@pytest.mark.todo("task 3")
@pytest.mark.core  # its parity with nanoGPT's get_lr, at every step recorded
@pytest.mark.parametrize("schedule", list(LR_AT), ids=lambda s: "-".join(map(str, s)))
def test_lr_at_is_nanogpts_schedule_at_every_step(train, schedule):
    steps, warmup, lr, min_lr = schedule
    cfg = train.TrainConfig(steps=steps, warmup=warmup, lr=lr, min_lr=min_lr)
    sizes = f"steps={steps}, warmup={warmup}, lr={lr}, min_lr={min_lr}"
    for step, rate in LR_AT[schedule].items():
        try:
            got = train.lr_at(step, cfg)
        except ZeroDivisionError:
            if warmup:
                raise
            raise AssertionError(  # a branch taken at warmup = 0, not a missing guard
                f"lr_at({step}) with {sizes}: expected {rate}, got a division by warmup = 0: with no "
                "warm-up, no step is in it (step < warmup is never true)"
            ) from None
        kind = type(got).__name__  # a tensor's or numpy's cos computes in their precision
        off = (
            "" if type(got) is float else f"a {kind}, not a float: math.cos, not torch's or numpy's"
        )
        default = train.TrainConfig.warmup
        if (
            abs(got - rate) > 1e-12
            and step < warmup
            and abs(got - lr * (step + 1) / default) < 1e-12
        ):
            off = f"the warm-up divided by TrainConfig's default warmup, {default}, not cfg.warmup"
        elif abs(got - rate) > 1e-12 and step < warmup and (peak := peak_of(got, step, cfg)):
            off = peak
        elif abs(got - rate) > 1e-12 and checks.in_float32(got, rate):
            off = off or checks.in_float32(got, rate).removeprefix(": ")
        elif abs(got - rate) > 1e-12 and got and got in {round(rate, k) for k in range(1, 12)}:
            off = off or "the rate rounded to a few digits: lr_at returns it as computed"
        elif abs(got - rate) > 1e-12:
            off = off or ignored(train, cfg, list(LR_AT[schedule]))
        expect.close(f"lr_at({step}) with {sizes}", got, rate, 1e-12, off)


def peak_of(got: float, step: int, cfg) -> str:
    """The words for a warm-up that climbs to a peak other than cfg.lr, or ''."""
    peak = got * cfg.warmup / (step + 1)  # the rate this warm-up reaches at its end
    if abs(peak - cfg.lr) < 1e-9 * cfg.lr:
        return ""
    default = " (TrainConfig's default lr)" if abs(peak - type(cfg).lr) < 1e-12 else ""
    return f"the warm-up climbs to {peak:g}{default}, not to cfg.lr = {cfg.lr}: the peak is cfg.lr"


def ignored(train, cfg, steps: list[int]) -> str:
    """The words for a size of cfg that lr_at never reads (changing it changes no rate), or ''."""
    rates = [train.lr_at(s, cfg) for s in steps]
    for name in ("warmup", "steps", "lr", "min_lr"):
        other = dataclasses.replace(cfg, **{name: getattr(cfg, name) * 2 + 1})
        if [train.lr_at(s, other) for s in steps] == rates:
            return (
                f"lr_at reads no cfg.{name}: a config of another {name} gives the same rates "
                f"(TrainConfig's default, {getattr(train.TrainConfig, name)}, read instead?)"
            )
    return ""


@pytest.mark.todo("task 3")
def test_lr_at_returns_a_float_that_never_exceeds_the_peak(train):
    steps, warmup, peak, floor = 40, 5, 1e-3, 1e-4  # the bounds as set: lr_at may not move them
    for step in range(steps + 1):
        cfg = train.TrainConfig(steps=steps, warmup=warmup, lr=peak, min_lr=floor)
        rate = train.lr_at(step, cfg)
        expect.equal(f"the type of lr_at({step})", type(rate), float,
                     "a Python float: math's cos, not torch's or numpy's")  # fmt: skip
        expect.at_most(f"lr_at({step})", rate, peak + 1e-15, "the peak is lr")
        expect.at_least(f"lr_at({step})", rate, floor * (step >= warmup), "min_lr floor")


@pytest.mark.todo("task 3")
def test_lr_at_reads_the_sizes_from_its_config_not_the_defaults(train):
    cfg = train.TrainConfig(steps=10, warmup=2, lr=0.5, min_lr=0.05)
    got = [train.lr_at(s, cfg) for s in (0, 1, 2, 10)]
    expect.close("lr_at at steps 0, 1, 2 and 10", torch.tensor(got, dtype=torch.float64),
                 torch.tensor([0.25, 0.5, 0.5, 0.05], dtype=torch.float64), 1e-12,
                 ignored(train, cfg, [0, 1, 2, 10]) or "lr / 2, lr, lr, then min_lr")  # fmt: skip


@pytest.mark.todo("task 4")
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_train_step_trains_in_the_mode_it_is_given(train, tiny, training):
    model, (x, y) = tiny(0, p=0.5).train(training), checks.batch(0)
    modes = []  # model.training at each forward train_step runs
    model.register_forward_pre_hook(lambda module, args: modes.append(module.training))
    train.train_step(model, torch.optim.SGD(model.parameters(), lr=1e-2), x, y, grad_clip=1.0)
    expect.equal("the forward passes train_step ran", len(modes), 1, "one: model(x, y) gives the "
                 "loss that is backpropagated and returned (another forward draws other dropout "
                 "masks and costs a second pass)")  # fmt: skip
    why = "the mode it is given: train_step sets none (model.eval() is estimate_loss's alone)"
    expect.equal("the model's mode at train_step's forward pass", modes, [training], why)
    expect.equal("model.training after train_step", model.training, training, "as it was given")


@pytest.mark.todo("task 4")
def test_train_step_returns_the_loss_before_the_step(train, tiny):
    model = tiny(0)
    x, y = checks.batch(0)
    with torch.no_grad():
        before = model(x, y)[1].item()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.shapes.clear()
    state = torch.get_rng_state()
    loss = train.train_step(model, opt, x, y, grad_clip=1.0)
    expect.equal("torch's global random state after train_step", torch.get_rng_state(), state,
                 "untouched by a model without dropout: train_step sets no seed (one set there "
                 "gives every step the same dropout masks)")  # fmt: skip
    expect.equal("the shapes of the ids the model was given", sorted(set(model.shapes)),
                 [tuple(x.shape)], AS_GIVEN)  # fmt: skip
    called = "a method, not the number it gives: .item without its ()" if callable(loss) else ""
    expect.equal("the type train_step returns", type(loss), float, called or "the loss's number")
    ratio = loss / before  # a loss divided (by B) or multiplied on its way back: a whole k
    k = max(ratio, 1 / ratio) if ratio > 0 else 0  # (a step's change is no such number)
    scaled = (
        f": it is {ratio:.3g} times it, a scaled loss"
        if k > 1.5 and abs(k - round(k)) < 1e-3
        else ""
    )
    expect.close("train_step's loss", loss, before, 1e-6, "the loss before the step" + scaled)
    with torch.no_grad():
        assert model(x, y)[1].item() < before, "one step on a batch lowers that batch's loss"


@pytest.mark.todo("task 4")
@pytest.mark.parametrize("seed", [11, 12])
def test_train_step_draws_dropouts_masks_where_the_run_left_torchs_generator(train, tiny, seed):
    """The mask of train_step's forward is the one torch's global generator gives next: no seed
    set inside, even one put back after (every step would drop the same entries)."""
    x, y = checks.batch(0)
    fresh = tiny(0, p=0.5)  # tiny seeds torch as it builds: the run's seed is set after
    torch.manual_seed(seed)
    with torch.no_grad():
        want = fresh(x, y)[1].item()  # the loss under the mask the run's generator draws next
    model = tiny(0, p=0.5)
    torch.manual_seed(seed)
    got = train.train_step(model, torch.optim.SGD(model.parameters(), lr=1e-2), x, y, 1.0)
    expect.equal("the forward passes train_step ran", len(model.seen), 1, "one: model(x, y) "
                 "gives the loss that is backpropagated and returned (another forward draws "
                 "another dropout mask)")  # fmt: skip
    expect.equal("the model's mode at train_step's forward pass", model.seen[0][0], True,
                 "train, as it was given: dropout draws its mask in train mode alone, and "
                 "train_step sets no mode (model.eval() is estimate_loss's)")  # fmt: skip
    expect.equal("the shapes of the ids the model was given", sorted(set(model.shapes)),
                 [tuple(x.shape)], AS_GIVEN)  # fmt: skip
    expect.close(f"train_step's loss after torch.manual_seed({seed})", got, want, 1e-6,
                 "model(x, y)'s loss in train mode, under the dropout mask torch's generator "
                 "draws next: a seed set in train_step (even one put back after) draws "
                 "another")  # fmt: skip


@pytest.mark.todo("task 4")
def test_train_step_moves_the_weights_by_the_optimizers_own_step(train, tiny):
    """AdamW's step, not one written by hand: Adam's moments and weight decay act (an SGD step at
    AdamW's learning rate trains far slower; the check's SGD optimizers cannot tell them apart)."""
    model, fresh = tiny(0), tiny(0)
    x, y = checks.batch(0)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    train.train_step(model, opt, x, y, grad_clip=1.0)
    ref = torch.optim.AdamW(fresh.parameters(), lr=1e-2)
    fresh(x, y)[1].backward()
    torch.nn.utils.clip_grad_norm_(fresh.parameters(), 1.0)
    ref.step()  # the step train_step should have taken
    got = torch.cat([p.detach().flatten() for p in model.parameters()])  # (n_params,)
    want = torch.cat([p.detach().flatten() for p in fresh.parameters()])  # (n_params,)
    took = sorted({int(s["step"]) for s in opt.state.values() if "step" in s})  # per parameter
    expect.equal("the steps the optimizer handed to train_step took", took, [1],
                 "one optimizer.step() of that optimizer: the optimizer never stepped if the "
                 "weights moved by a step written by hand, or by an optimizer made inside "
                 "train_step (its moments start again at every call)")  # fmt: skip
    decay = 1 - 1e-2 * ref.param_groups[0]["weight_decay"]  # what AdamW shrinks weights by
    why = (
        f"every weight came out {decay} = 1 - lr * weight_decay times AdamW's: the weights "
        "decayed once more by hand (AdamW decays them itself)"
        if torch.allclose(got, want * decay, atol=1e-7)
        else "one optimizer.step() on the clipped gradient: it applies AdamW's update"
    )
    expect.close("the weights after train_step with AdamW", got, want, 1e-6, why)
    x, y = checks.batch(1)  # a second call: its step reads the moments the first one kept
    train.train_step(model, opt, x, y, grad_clip=1.0)
    ref.zero_grad()
    fresh(x, y)[1].backward()
    torch.nn.utils.clip_grad_norm_(fresh.parameters(), 1.0)
    ref.step()
    took = sorted({int(s["step"]) for s in opt.state.values() if "step" in s})  # per parameter
    expect.equal("the steps the optimizer took after a second train_step", took, [2],
                 "its state kept from call to call: Adam's moments and step count start again "
                 "if train_step empties optimizer.state or makes an optimizer")  # fmt: skip
    got = torch.cat([p.detach().flatten() for p in model.parameters()])  # (n_params,)
    want = torch.cat([p.detach().flatten() for p in fresh.parameters()])  # (n_params,)
    expect.close("the weights after two train_steps with AdamW", got, want, 1e-6,
                 "two optimizer.step() calls of one optimizer, each on its clipped gradient")  # fmt: skip


@pytest.mark.todo("task 4")
def test_train_step_leaves_a_frozen_weight_frozen(train, tiny):
    model = tiny(0)
    model.emb.weight.requires_grad_(False)  # a caller's frozen embedding
    before = model.emb.weight.detach().clone()
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    train.train_step(model, opt, *checks.batch(1), 1.0)
    expect.equal("emb.weight.requires_grad after train_step", model.emb.weight.requires_grad,
                 False, "as the caller set it: train_step changes no setting of the model")  # fmt: skip
    expect.equal("the frozen emb.weight's .grad after train_step", model.emb.weight.grad, None,
                 "a frozen weight gets no .grad: a zero one is still stepped (weight decay moves "
                 "it), so .grad is emptied by optimizer.zero_grad(), never filled by hand")  # fmt: skip
    expect.equal("the frozen emb.weight after train_step", model.emb.weight.detach(), before,
                 "untouched: no gradient, no step")  # fmt: skip


@pytest.mark.todo("task 4")
def test_train_step_clips_a_large_gradient_of_a_small_loss(train, tiny):
    model = tiny(0)
    with torch.no_grad():  # large features that no logit reads yet: loss log V, a huge gradient
        model.emb.weight.mul_(1000)
        model.out.weight.zero_()
    x, y = checks.batch(1)
    before = [p.detach().clone() for p in model.parameters()]
    loss = train.train_step(model, torch.optim.SGD(model.parameters(), lr=1.0), x, y, 10.0)
    moved = torch.cat(
        [(b - p.detach()).flatten() for b, p in zip(before, model.parameters(), strict=True)]
    )
    expect.close(f"the norm of an SGD step of lr 1 after a loss of {loss:.3g}, grad_clip = 10",
                 moved.norm().item(), 10.0, 1e-3,
                 "the gradient's norm (far above 10) cut to 10: clipping looks at the gradient, "
                 "on every step, whatever the loss")  # fmt: skip


@pytest.mark.todo("task 4")
def test_training_lowers_the_validation_loss(train, tiny):
    cfg = checks.tiny_config(train, steps=60, eval_every=20, lr=3e-2, min_lr=3e-3, warmup=5)
    out = train.train(tiny(0), {}, cfg, checks.corpus(800), progress=False)
    val = out["losses"]["val"]
    expect.equal("the steps of the validation estimates", [s for s, _ in val], [0, 20, 40, 60])
    assert val[-1][1] < val[0][1] - 0.5, f"60 steps should learn the counting pattern: {val}"
    expect.equal("the training losses recorded", len(out["losses"]["train"]), 60, "one per step")


@pytest.mark.given  # the loop and the checkpoints, run on the test's own TODOs
def test_each_step_trains_at_the_rate_lr_at_gives(loop, tiny, monkeypatch):
    """train() sets the schedule's rate before every step (a mutant that dropped it passed)."""
    cfg = checks.tiny_config(loop, steps=12, eval_every=6, lr=3e-2, min_lr=3e-3, warmup=3)
    seen, real = [], loop.train_step

    def recording(model, optimizer, x, y, grad_clip):
        seen.append(optimizer.param_groups[0]["lr"])  # the rate this step is taken at
        return real(model, optimizer, x, y, grad_clip)

    monkeypatch.setattr(loop, "train_step", recording)
    loop.train(tiny(0), {}, cfg, checks.corpus(800), progress=False)
    expect.equal(
        "the rate of each step", seen, [loop.lr_at(step, cfg) for step in range(cfg.steps)]
    )


@pytest.mark.given
def test_bad_sizes_are_refused(train):
    data = torch.arange(20)
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="the context T = 20 is longer than the corpus split"):
        train.get_batch(data, 2, 20, g)
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match=r"B \(the batch size\) must be an integer >= 1"):
            train.get_batch(data, bad, 4, g)
    with pytest.raises(ValueError, match="1-D tensor of int64"):
        train.get_batch(data.float(), 2, 4, g)


@pytest.mark.given
def test_a_context_longer_than_the_validation_split_is_refused(train, tiny):
    cfg = checks.tiny_config(train, T=120, val_fraction=0.1)
    with pytest.raises(
        ValueError, match="context T = 120 is longer than the corpus split: its 60 ids"
    ):
        train.train(tiny(0), {}, cfg, checks.corpus(600), progress=False)
    with pytest.raises(ValueError, match="B must be an integer >= 1, got 0"):
        train.train(tiny(0), {}, dataclasses.replace(cfg, B=0), checks.corpus(), progress=False)


@pytest.mark.given  # the loop and the checkpoints, run on the test's own TODOs
def test_a_checkpoint_of_another_config_is_refused(loop, tiny, tmp_path):
    cfg = checks.tiny_config(loop, steps=2, warmup=1)
    path = tmp_path / "ckpt.pt"
    loop.train(tiny(0), {"V": 8}, cfg, checks.corpus(), path, progress=False)
    with pytest.raises(ValueError, match=r"another config.*'train.lr': \(0.01, 0.02\)"):
        loop.train(
            tiny(0),
            {"V": 8},
            dataclasses.replace(cfg, lr=0.02),
            checks.corpus(),
            path,
            progress=False,
        )
    with pytest.raises(ValueError, match=r"'model.V': \(8, 9\)"):
        loop.train(tiny(0), {"V": 9}, cfg, checks.corpus(), path, progress=False)


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "not a checkpoint"])
@pytest.mark.given  # the loop and the checkpoints, run on the test's own TODOs
def test_a_corrupt_or_partial_checkpoint_is_refused_with_its_path(loop, tiny, tmp_path, damage):
    cfg = checks.tiny_config(loop, steps=2, warmup=1)
    path = tmp_path / "ckpt.pt"
    loop.train(tiny(0), {}, cfg, checks.corpus(), path, progress=False)
    raw = path.read_bytes()
    if damage == "not a checkpoint":
        torch.save({"weights": torch.zeros(3)}, path)
    else:
        path.write_bytes(
            {"truncated": raw[: len(raw) // 2], "garbage": b"\x00 not torch" * 9, "empty": b""}[
                damage
            ]
        )
    model = tiny(5)
    before = [p.clone() for p in model.parameters()]
    with pytest.raises(
        ValueError, match=rf"{path}.*(not a readable checkpoint|not a step-06 checkpoint)"
    ) as info:
        loop.train(model, {}, cfg, checks.corpus(), path, progress=False)
    assert "\n" not in str(info.value) and f"delete {path} to train from step 0" in str(info.value)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True)), (
        "never used"
    )


@pytest.mark.given
def test_a_save_interrupted_by_ctrl_c_leaves_the_last_checkpoint(train, tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    train.save_checkpoint(path, {"step": 1})
    real_save = torch.save

    def interrupted(obj, f):
        real_save(obj, f)
        f.truncate(10)  # half written, then Ctrl-C
        raise KeyboardInterrupt

    monkeypatch.setattr(torch, "save", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train.save_checkpoint(path, {"step": 2})
    monkeypatch.undo()
    assert torch.load(path, weights_only=True) == {"step": 1}, "the old checkpoint is intact"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.pt"], "no temporary file is left"


@pytest.mark.given  # the loop and the checkpoints, run on the test's own TODOs
def test_ctrl_c_mid_run_says_where_the_next_run_resumes(loop, tiny, tmp_path):
    cfg = checks.tiny_config(loop)  # a checkpoint every 2 steps
    path: Path = tmp_path / "ckpt.pt"

    def stop(step):
        if step == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as info:
        loop.train(tiny(0), {}, cfg, checks.corpus(), path, progress=False, on_step=stop)
    said = (
        f"stopped at step 3 (Ctrl-C); run the same command again to resume from {path} at "
        "step 2: the 1 step since is trained again"
    )
    expect.equal("the Ctrl-C message", str(info.value), said)
    assert torch.load(path, weights_only=True)["step"] == 2, "the last checkpoint, step 2"
    with pytest.raises(KeyboardInterrupt, match="before the first checkpoint .*starts from step 0"):
        loop.train(tiny(0), {}, cfg, checks.corpus(), tmp_path / "new.pt", progress=False,
                    on_step=lambda step: stop(step + 2))  # fmt: skip


# --- the run tells the truth: whose code, what happened (given code: the loop, the checkpoints) --


def nan_at(train, monkeypatch, call: int, weights: bool = False):
    """Make train_step's `call`-th call (1-based) return NaN, or leave NaN in the weights."""
    real, calls = train.train_step, []

    def step(model, optimizer, x, y, grad_clip):
        calls.append(1)
        loss = real(model, optimizer, x, y, grad_clip)
        if len(calls) == call and weights:
            with torch.no_grad():
                next(model.parameters())[0] = float("nan")
        return float("nan") if len(calls) == call and not weights else loss

    monkeypatch.setattr(train, "train_step", step)


@pytest.mark.given  # the loop and the checkpoints, run on the test's own TODOs
def test_a_nan_loss_stops_the_run_at_once_and_no_checkpoint_holds_it(
    loop, tiny, tmp_path, monkeypatch
):
    cfg = checks.tiny_config(loop)  # a checkpoint every 2 steps
    path = tmp_path / "ckpt.pt"
    nan_at(loop, monkeypatch, call=4)  # step 3's loss: after the checkpoint of step 2
    with pytest.raises(FloatingPointError) as info:
        loop.train(tiny(0), {}, cfg, checks.corpus(), path, progress=False)
    message = str(info.value)
    assert message.startswith("training stopped at step 3: its training loss is nan, not a finite")
    assert "learning rate too high" in message and "train_step" in message and "\n" not in message
    assert f"{path} keeps step 2" in message
    state = torch.load(path, weights_only=True)
    expect.equal("the checkpoint's step", state["step"], 2)
    for name, t in state["model"].items():
        expect.finite(f"the checkpoint's {name}", t)


@pytest.mark.given  # the loop and the checkpoints, run on the test's own TODOs
def test_nan_weights_are_never_saved(loop, tiny, tmp_path, monkeypatch):
    cfg = checks.tiny_config(loop)
    path = tmp_path / "ckpt.pt"
    nan_at(loop, monkeypatch, call=2, weights=True)  # a finite loss, then NaN weights, then a save
    with pytest.raises(
        FloatingPointError,
        match="step 2: the weights hold NaN or inf after it.*no checkpoint was written",
    ):
        loop.train(tiny(0), {}, cfg, checks.corpus(), path, progress=False)
    assert not path.exists()


@pytest.mark.given  # the loop and the checkpoints, run on the test's own TODOs
def test_a_checkpoint_that_is_not_finite_is_never_resumed(loop, tiny, tmp_path):
    cfg = checks.tiny_config(loop, steps=2, warmup=1)
    path = tmp_path / "ckpt.pt"
    loop.train(tiny(0), {}, cfg, checks.corpus(), path, progress=False)
    state = torch.load(path, weights_only=True)
    next(iter(state["model"].values()))[0] = float("nan")  # as an older run that diverged left it
    torch.save(state, path)
    with pytest.raises(
        loop.CheckpointError,
        match=rf"{path} holds weights .* not finite .*delete {path} to train from step 0",
    ):
        loop.train(tiny(0), {}, cfg, checks.corpus(), path, progress=False)


def copy_of(train, tmp_path: Path, folder: str, extra: str = ""):
    """A fresh copy of the training module under test, in tmp_path/<folder>/train.py (+ `extra`)."""
    (tmp_path / folder).mkdir(parents=True)
    source = Path(train.__file__).read_text(encoding="utf-8")
    (tmp_path / folder / "train.py").write_text(source + extra, encoding="utf-8")
    return load_fresh(tmp_path / folder, "train")


@pytest.mark.given  # the loop and the checkpoints, run on the test's own TODOs
def test_a_checkpoint_records_whose_code_trained_it_and_other_code_never_resumes_it(
    loop, tiny, tmp_path, given_todos
):
    cfg = checks.tiny_config(loop, steps=2, warmup=1)
    path = tmp_path / "ckpt.pt"
    loop.train(tiny(0), {}, cfg, checks.corpus(), path, progress=False)
    impl = Path(loop.__file__).parent.name  # solution or starter
    code = torch.load(path, weights_only=True)["code"]
    expect.equal("the checkpoint's code", code, loop.code_identity())
    other = given_todos(copy_of(loop, tmp_path, "starter" if impl == "solution" else "solution"))
    with pytest.raises(
        other.OtherCode,
        match=rf"{path} was trained by .*\({impl}/train.py\), not by the code running now",
    ):
        other.train(
            tiny(0), {}, dataclasses.replace(cfg, steps=4), checks.corpus(), path, progress=False
        )
    edited = given_todos(copy_of(loop, tmp_path / "edited", impl, extra="# an edit\n"))
    with pytest.raises(edited.OtherCode, match=f"trained by an earlier version of {impl}/train.py"):
        edited.train(
            tiny(0), {}, dataclasses.replace(cfg, steps=4), checks.corpus(), path, progress=False
        )


@pytest.mark.given  # the loop and the checkpoints, run on the test's own TODOs
def test_an_old_format_checkpoint_names_the_fix(loop, tiny, tmp_path):
    cfg = checks.tiny_config(loop, steps=2, warmup=1)
    path = tmp_path / "ckpt.pt"
    torch.save({"format": 1, "config": {}, "model": {}, "step": 1}, path)  # format 1: no code key
    with pytest.raises(loop.CheckpointError) as info:
        loop.train(tiny(0), {}, cfg, checks.corpus(), path, progress=False)
    said = (
        f"{path} is a checkpoint of format 1, it lacks code, generator, losses, optimizer, rng "
        f"(this code reads format {loop.CHECKPOINT_FORMAT}, written by an older version of the "
        f"course); it was not used: delete {path} to train from step 0"
    )
    expect.equal("the message", str(info.value), said)


@pytest.mark.given  # the loop and the checkpoints, run on the test's own TODOs
def test_stale_temporary_files_of_a_killed_save_are_removed_at_the_start(loop, tiny, tmp_path):
    path = tmp_path / "ckpt.pt"
    stale = tmp_path / ".ckpt.pt.k1ll3d.tmp"  # what a kill -9 during save_checkpoint leaves
    stale.write_bytes(b"half a checkpoint")
    other = tmp_path / ".notes.pt.abc.tmp"  # another file's: not ours to delete
    other.write_bytes(b"")
    loop.train(
        tiny(0),
        {},
        checks.tiny_config(loop, steps=2, warmup=1),
        checks.corpus(),
        path,
        progress=False,
    )
    left = sorted(p.name for p in tmp_path.iterdir())
    expect.equal("the files left", left, [".notes.pt.abc.tmp", "ckpt.pt"], "the stale one removed")


@pytest.mark.given  # the loop and the checkpoints, run on the test's own TODOs
def test_a_full_disk_is_one_line_naming_the_disk(loop, tiny, tmp_path, monkeypatch):
    cfg = checks.tiny_config(loop, steps=4, warmup=1)
    path = tmp_path / "ckpt.pt"

    def stop(step):
        if step == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):  # a checkpoint of step 2, then resumed on a full disk
        loop.train(tiny(0), {}, cfg, checks.corpus(), path, progress=False, on_step=stop)

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(loop.CheckpointError) as info:
        loop.train(tiny(0), {}, cfg, checks.corpus(), path, progress=False)
    monkeypatch.undo()
    message = str(info.value)
    assert re.fullmatch(
        rf"the disk \S+ is full \([\d.]+ [kMG]B free; the checkpoint needs [\d.]+ [kMG]B\): free some space on it, or train into a folder on another disk with --out DIR; {re.escape(str(path))} is as it was",
        message,
    ), message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.pt"], "no temporary file is left"
    assert torch.load(path, weights_only=True)["step"] == 2, "the last checkpoint is intact"
