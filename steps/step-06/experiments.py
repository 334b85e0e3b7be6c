"""Step 6's experiments and the blocks its run prints: train the Step 5 GPT with your loop, time it, read its heads, find an induction circuit."""

import math
import os
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch

from common.docs import markdown_table
from common.envreport import machine
from common.loader import load_file, reference
from common.run.experiment import Context, Stop
from common.run.figures import out_dir
from common.run.timing import matmul_peak, seconds, torch_threads
from common.seeding import seed_all
from common.text import encoded, sample

STEP = "step-06"
HERE = Path(__file__).resolve().parent
heads = load_file(HERE / "heads.py")
STEP4_TEXT = 64  # Step 4's 4.3 pictures: the first 64 characters of the corpus


@dataclass(frozen=True)
class ModelConfig:
    """The Step 5 GPT's sizes: GPT(V, T_max, d, h, n_layer)."""

    d: int = 128
    h: int = 4
    n_layer: int = 4
    T_max: int = 64


QUICK_MODEL = ModelConfig(d=32, h=2, n_layer=2, T_max=64)  # --quick: a model trained in seconds


def configs(train, quick: bool):
    """(model config, training config): the default run, or the --quick one for tests and CI."""
    if quick:
        return QUICK_MODEL, train.TrainConfig(
            T=64, B=16, steps=120, warmup=10, eval_every=40, eval_batches=4, checkpoint_every=40
        )
    return ModelConfig(), train.TrainConfig(steps=600, warmup=60, eval_every=50)


def gpt_module():
    """Step 5's reference GPT, through the one route to an earlier step's code."""
    return reference("step-05", "gpt")


def corpus():
    """The Step 3 text as int64 ids (cached: do not modify), its vocabulary size, the data module."""
    data = reference("step-03", "data")
    return *encoded(data), data


def build(mcfg: ModelConfig, V: int, seed: int):
    """A freshly initialised GPT from `seed`."""
    seed_all(seed)
    return gpt_module().GPT(V, mcfg.T_max, mcfg.d, mcfg.h, mcfg.n_layer)


def n_params(model) -> int:
    return sum(p.numel() for p in model.parameters())


def initial_losses(train, quick: bool) -> dict:
    """The untrained model's validation loss against ln V: deterministic, checked by the docs test."""
    mcfg, cfg = configs(train, quick)
    ids, V, _ = corpus()
    model = build(mcfg, V, cfg.seed)
    _, val = train.split(ids, cfg.val_fraction)
    loss = train.estimate_loss(model, train.fixed_batches(val, cfg, seed=cfg.seed + 1))
    return dict(V=V, ln_V=math.log(V), loss=loss, N=n_params(model), model=mcfg, cfg=cfg)


def resume_point(train, checkpoint: Path, config: dict) -> int:
    """The step this run starts from; a checkpoint of other code is kept aside, never resumed."""
    # Other code is your train.py edited since the checkpoint was saved, or the other
    # implementation's file copied here: the file is renamed <name>.old.pt and the run starts from
    # step 0 with the code it runs now. Every other refusal stops the run (CheckpointError).
    if not checkpoint.exists():
        return 0
    try:
        step = train.load_checkpoint(checkpoint, config)["step"]
    except train.OtherCode as exc:
        kept = checkpoint.with_suffix(".old" + checkpoint.suffix)
        replaced = " (replacing the one kept before)" if kept.exists() else ""
        os.replace(checkpoint, kept)
        why = str(exc).split(";")[0]  # "<file> was trained by ..., not by the code running now"
        print(f"{why}: kept as {kept}{replaced}; training from step 0 with this code")
        return 0
    print(f"resuming {checkpoint} at step {step} (delete it to train from step 0)")
    return step


def shakespeare(
    train, quick: bool, checkpoint: Path, threads: int = 1, progress: bool = True
) -> dict:
    """Train the GPT with your loop (resuming from `checkpoint` if it exists), then sample and time it."""
    mcfg, cfg = configs(train, quick)
    ids, V, data = corpus()
    model = build(mcfg, V, cfg.seed)
    before = sample(model, data)
    resumed_at = resume_point(train, checkpoint, train.run_config(cfg, asdict(mcfg)))
    with torch_threads(threads):  # small matrices: one thread, undisturbed by other programs
        peak = matmul_peak(threads)
        start = time.perf_counter()
        result = train.train(model, asdict(mcfg), cfg, ids, checkpoint, progress=progress)
        wall = time.perf_counter() - start
    tokens = (result["step"] - resumed_at) * cfg.B * cfg.T  # trained by this process
    # None when no step ran (a finished run again): no rate to report, not a NaN to print
    tokens_per_s = tokens / result["seconds"] if tokens else None  # over the loop's wall clock
    tokens_per_cpu_s = tokens / result["cpu_seconds"] if tokens else None
    N = n_params(model)
    return dict(
        model=model,
        mcfg=mcfg,
        cfg=cfg,
        N=N,
        V=V,
        losses=result["losses"],
        seconds=result["seconds"],  # the loop's: what the rates are over
        # train() before its loop: the optimiser (its first one imports torch's compiler), the
        # validation batches, a checkpoint read; a --quick run's loop is a few seconds, so it shows
        set_up_seconds=wall - result["seconds"],
        resumed_at=resumed_at,
        steps_run=result["step"] - resumed_at,
        tokens_per_s=tokens_per_s,
        tokens_per_cpu_s=tokens_per_cpu_s,
        cpu_seconds=result["cpu_seconds"],
        peak=peak,
        # both per CPU-second: waiting for a core cancels
        mfu=6 * N * tokens_per_cpu_s / peak if tokens else None,
        threads=threads,
        before=before,
        after=sample(model, data),
        checkpoint=checkpoint,
        machine=machine(threads),
        quick=quick,
    )


def trained_heads(model, mcfg: ModelConfig) -> dict:
    """Every head of the trained model on Step 4's 64 characters: attention, scores and label."""
    _, _, data = corpus()
    text = data.load_text()[:STEP4_TEXT]
    idx = torch.tensor([data.encode(text)])  # (1, 64)
    return dict(text=text, rows=heads.trained_heads(model, idx, mcfg.h))


def untrained_family() -> dict:
    """Step 4's untrained family (its 4.3 table b2), seed 0: Step 4's own code and pattern names."""
    # Step 4's settings, its head on the first 64 characters, and its pattern names
    step4 = reference("step-04", "experiments")
    rows = step4.family(reference("step-04", "head"), seeds=(0,))["rows"]
    return dict(rows=[dict(setting=r["setting"], pattern=r["pattern"], A=r["A"]) for r in rows])


def induction_run(train, seeds=(0,), quick: bool = False) -> list[dict]:
    """The induction experiment for each seed, trained with your train_step (--quick: 200 steps)."""
    induction = load_file(HERE / "induction.py")
    cfg = induction.InductionConfig(steps=200) if quick else induction.InductionConfig()
    runs = [induction.experiment(train.train_step, replace(cfg, seed=s)) for s in seeds]
    return [dict(r, quick=quick) for r in runs]  # a --quick run draws and claims no target


# The targets, checked on every run (the README's appendix says over which seeds)
TARGET_VAL = 2.0  # validation loss of the default run
TARGET_REPEAT = 0.5  # induction: repeat-half loss below this
TARGET_ONE_LAYER = 2.0  # the one-layer baseline stays above this
TARGET_PREFIX = load_file(
    HERE / "plots.py"
).INDUCTION  # some head's prefix-matching score above this
TARGET_ABLATED = 2.0  # the repeat loss with the previous-token heads zeroed rises above this


def config_block(r) -> str:
    """The two configurations, their parameter counts and FLOPs per token: sizes only."""
    rows = []
    for quick in (False, True):
        init = r["inits"][quick]
        m, c = init["model"], init["cfg"]
        rows.append(
            ["--quick" if quick else "default", f"{m.d}", m.h, m.n_layer, c.T, c.B, c.steps]
            + [f"{c.lr:g}", f"{init['N']:,}", f"{6 * init['N']:,}", f"{init['loss']:.3f}"]
        )
    header = ["run", "d", "h", "n_layer", "T", "B", "steps", "peak lr", "parameters N"]
    header += ["6N FLOPs per token", "validation loss at init"]
    V = init["V"]
    return (
        markdown_table(header, rows)
        + f"\nln V = ln {V} = {math.log(V):.3f}: the loss of a uniform guess.\n"
    )


def labels_block(heads) -> str:
    """The label rules and the Step 4 pattern each label grew out of."""
    rule = {
        "previous-token": f"previous >= {heads.PREVIOUS}",
        "first-token/sink": f"first >= {heads.FIRST}",
        "local/diagonal": f"weight on keys i-2..i >= {heads.LOCAL}",
        "broad": f"evenness >= {heads.BROAD}",
        "content (mixed)": "none of the above",
    }
    rows = [[name, rule[name], heads.GREW_FROM[name]] for name in heads.LABELS]
    return markdown_table(
        ["label (first rule that holds)", "rule", "Step 4's untrained ancestor"], rows
    )


def verdict_line(r) -> str:
    """The final loss and what it says: the target's verdict, or for --quick that it has none."""
    val, steps = r["losses"]["val"], r["cfg"].steps
    final = f"final validation loss {val[-1][1]:.3f}"
    if r["quick"]:  # a tiny model for a few seconds: the target is not its to meet
        return f"{final} (--quick: {steps} steps of a small model, no target to meet)"
    reached = next((s for s, v in val if v <= TARGET_VAL), None)
    first = (
        f"first <= {TARGET_VAL} at step {reached}"
        if reached is not None
        else f"never <= {TARGET_VAL}"
    )
    verdict = "PASS" if val[-1][1] <= TARGET_VAL else "FAIL"
    return f"{final} (target <= {TARGET_VAL}: {verdict}), {first}"


def speed_line(r) -> str:
    """Time, throughput and MFU of the steps this run trained (none when it resumed a finished run)."""
    if not r["steps_run"]:
        return (
            f"no steps ran this time: {r['checkpoint']} already holds all {r['cfg'].steps} steps, "
            "so there is no speed or MFU to report (delete it to train again)"
        )
    resumed = f", steps {r['resumed_at']} to {r['cfg'].steps}" if r["resumed_at"] else ""
    with_set_up = seconds(r["seconds"] + r["set_up_seconds"])
    return (
        f"wall time {seconds(r['seconds'])} s of training{resumed}, {with_set_up} s with train()'s "
        f"set-up ({seconds(r['cpu_seconds'])} CPU-seconds of training); "
        f"{r['tokens_per_s']:,.0f} tokens per wall second of training, "
        f"{r['tokens_per_cpu_s']:,.0f} per CPU-second; "
        f"matmul peak {r['peak'] / 1e9:.1f} GFLOP per CPU-second; "
        f"MFU = 6 N x tokens per CPU-second / peak = {100 * r['mfu']:.1f}%"
    )


def training_block(r) -> str:
    """Recorded: the run's losses, time, throughput and MFU (machine-dependent, checked nowhere)."""
    rows = [[s, f"{v:.3f}"] for s, v in r["losses"]["val"]]
    return (
        f"recorded on {r['machine']}\n\n"
        + markdown_table(["step", "validation loss"], rows)
        + f"\n{verdict_line(r)}\n{speed_line(r)}\n"
    )


def samples_block(r) -> str:
    """Recorded: 200 characters before and after training, from the same seeded generator."""
    return f"before training:\n\n```text\n{r['before']}\n```\n\nafter training:\n\n```text\n{r['after']}\n```\n"


def heads_block(both) -> str:
    """Recorded: every trained head's scores and label."""
    hd = both["heads"]
    rows = [
        [r["layer"], r["head"], f"{r['previous']:.2f}", f"{r['first']:.2f}", f"{r['self']:.2f}"]
        + [f"{r['local']:.2f}", f"{r['entropy']:.2f}", f"{r['evenness']:.2f}", r["label"]]
        for r in hd["rows"]
    ]
    header = ["layer", "head", "previous", "first", "self", "keys i-2..i", "entropy (nats)"]
    return markdown_table(header + ["evenness", "label"], rows)


def induction_block(runs) -> str:
    """Recorded: the induction experiment's numbers for each seed, and the targets they meet."""
    rows = []
    for r in runs:
        prev = ", ".join(f"{h}" for h in r["prev_heads"]) or "none"
        each = " / ".join(f"{v:.2f}" for v in r["ablate_each"])
        rows.append(
            [
                r["cfg"].seed,
                f"{r['first']:.2f}",
                f"{r['repeat']:.2f}",
                f"{r['one_layer_repeat']:.2f}",
            ]
            + [f"{r['prefix'].max():.2f} (L{r['induction'][0]} H{r['induction'][1]})"]
            + [f"{r['prefix_one'].max():.2f}", prev, f"{r['ablated_repeat']:.2f}", each]
            + [seconds(r["seconds"])]
        )
    header = ["seed", "first-copy loss", "repeat loss", "1-layer repeat loss", "best prefix score"]
    header += ["1-layer best prefix", "layer-0 previous-token heads", "repeat loss, those zeroed"]
    header += ["repeat loss, each layer-0 head zeroed", "seconds (both models)"]
    return markdown_table(header, rows)


def induction_verdicts(r) -> list[tuple[str, bool]]:
    """Each target of the induction experiment and whether this run meets it."""
    return [
        (f"repeat loss {r['repeat']:.2f} < {TARGET_REPEAT}", r["repeat"] < TARGET_REPEAT),
        (
            f"one-layer repeat loss {r['one_layer_repeat']:.2f} > {TARGET_ONE_LAYER}",
            r["one_layer_repeat"] > TARGET_ONE_LAYER,
        ),
        (
            f"best prefix-matching score {r['prefix'].max():.2f} > {TARGET_PREFIX}",
            r["prefix"].max() > TARGET_PREFIX,
        ),
        (
            f"ablated repeat loss {r['ablated_repeat']:.2f} > {TARGET_ABLATED}",
            r["ablated_repeat"] > TARGET_ABLATED,
        ),
    ]


def targets_block(runs) -> str:
    """Printed: each seed's targets, PASS or FAIL, or for --quick its numbers and no verdict."""
    if runs[0]["quick"]:
        return "".join(f"{quick_line(r)}\n" for r in runs)
    return "".join(
        f"seed {r['cfg'].seed}: {'PASS' if ok else 'FAIL'} {text}\n"
        for r in runs
        for text, ok in induction_verdicts(r)
    )


def quick_line(r) -> str:
    """A --quick induction run's numbers, one line, and no verdict: 200 steps learn no circuit."""
    return (
        f"seed {r['cfg'].seed} (--quick, {r['cfg'].steps} steps, too few for the circuit: no "
        f"targets checked): repeat loss {r['repeat']:.2f}, one-layer repeat loss "
        f"{r['one_layer_repeat']:.2f}, best prefix-matching score {r['prefix'].max():.2f}, "
        f"ablated repeat loss {r['ablated_repeat']:.2f}"
    )


def induction_failures(runs, ctx: Context) -> str | None:
    """The FAIL line of the full run's induction targets (--quick checks none)."""
    failed = [
        f"seed {r['cfg'].seed}: {text}"
        for r in runs
        for text, ok in induction_verdicts(r)
        if not ok and not r["quick"]
    ]
    return "; ".join(failed) or None


def validation_failure(r, ctx: Context) -> str | None:
    """The FAIL line of the default run's validation loss (--quick has no target)."""
    if not r["quick"] and r["losses"]["val"][-1][1] > TARGET_VAL:
        return f"validation loss above {TARGET_VAL}"
    return None


def checkpoint_name(quick: bool, impl: str) -> str:
    """The checkpoint of a run: one per configuration and implementation, never shared by two."""
    return f"gpt{'-quick' if quick else ''}{'-starter' if impl == 'starter' else ''}.pt"


def options(ctx: Context) -> tuple[list[int], set[str]]:
    """The induction seeds and the parts --skip leaves out; a bad option stops the run (code 2)."""
    try:
        seeds = [int(s) for s in ctx.option("seeds", "0").split(",")]
    except ValueError:
        said = ctx.option("seeds")
        raise Stop(f"--seeds takes integers separated by commas, got {said!r}", 2) from None
    skip = {part for part in ctx.option("skip", "").split(",") if part}
    if unknown := skip - {"gpt", "induction"}:
        raise Stop(f"--skip takes gpt and induction, got {', '.join(sorted(unknown))}", 2)
    return seeds, skip


def left_out(part: str):
    """An experiment's skip: `--skip <part>` when the run's options leave that part out."""
    return lambda ctx: f"--skip {part}" if part in options(ctx)[1] else None


def stopping(compute):
    """compute(ctx, train), where what ends the run says so in one line: Ctrl-C, a refused file, NaN."""

    def run(ctx: Context):
        train = ctx.load("train")
        try:
            return compute(ctx, train)
        except train.Interrupted as exc:  # Ctrl-C while training: it says where the next run starts
            raise Stop(f"\n{exc}", 130) from None
        except KeyboardInterrupt:
            raise Stop(
                f"\n{STEP} stopped (Ctrl-C), not while training: a training checkpoint keeps its "
                "last step, the induction experiment keeps nothing; run the same command again",
                130,
            ) from None
        except (train.CheckpointError, FloatingPointError) as exc:  # one line: the file, the fix
            raise Stop(f"{STEP}: {exc}") from None

    return run


def initial(ctx: Context, train) -> dict:
    """The untrained model's loss in both configurations, and which one this run trains."""
    inits = {quick: initial_losses(train, quick) for quick in (False, True)}
    return dict(inits=inits, quick=ctx.quick)


def training(ctx: Context, train) -> dict:
    """The GPT trained with your loop, resumed from this run's own checkpoint when there is one."""
    checkpoint = out_dir(STEP, ctx.option("out")) / checkpoint_name(ctx.quick, ctx.impl)
    if ctx.option(
        "write_docs", False
    ):  # a recording is one whole run, not the tail of an older one
        checkpoint.unlink(missing_ok=True)
    return shakespeare(train, ctx.quick, checkpoint, ctx.option("threads", 1))


def trained(ctx: Context, train) -> dict:
    """The trained heads, beside Step 4's untrained family."""
    r = ctx.results["training"]
    hd = trained_heads(r["model"], r["mcfg"])
    return dict(heads=hd, family=untrained_family())


def induction(ctx: Context, train) -> list[dict]:
    """The induction experiment, once per seed of --seeds."""
    return induction_run(train, options(ctx)[0], quick=ctx.quick)


def previous_token_layers(both) -> str:
    """The layers that hold a previous-token head, e.g. '0, 2', or 'none'."""
    rows = both["heads"]["rows"]
    return (
        ", ".join(
            str(n) for n in sorted({r["layer"] for r in rows if r["label"] == "previous-token"})
        )
        or "none"
    )
