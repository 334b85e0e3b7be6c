"""Step 6: train the Step 5 GPT with your loop, read its heads, and find an induction circuit."""

import math
from pathlib import Path

from common.docs import exact, last_digit, markdown_table
from common.experiment import Block, Context, Experiment, Figure, Run, Slot, Stop
from common.figures import out_dir
from common.loader import load_file

STEP = "step-06"
HERE = Path(__file__).resolve().parent
README = HERE / "README.md"
experiments = load_file(HERE / "experiments.py")
plots = load_file(HERE / "plots.py")
checks = load_file(HERE / "checks.py")
heads = experiments.heads

# The targets, checked on every run (the README's appendix says over which seeds)
TARGET_VAL = 2.0  # validation loss of the default run
TARGET_REPEAT = 0.5  # induction: repeat-half loss below this
TARGET_ONE_LAYER = 2.0  # the one-layer baseline stays above this
TARGET_PREFIX = plots.INDUCTION  # some head's prefix-matching score above this
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
    return (
        f"wall time {r['seconds']:.0f} s ({r['cpu_seconds']:.0f} CPU-seconds of training{resumed}); "
        f"{r['tokens_per_s']:,.0f} tokens per wall second, {r['tokens_per_cpu_s']:,.0f} per CPU-second; "
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
            + [f"{r['seconds']:.0f}"]
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
    inits = {quick: experiments.initial_losses(train, quick) for quick in (False, True)}
    return dict(inits=inits, quick=ctx.quick)


def training(ctx: Context, train) -> dict:
    """The GPT trained with your loop, resumed from this run's own checkpoint when there is one."""
    checkpoint = out_dir(STEP, ctx.option("out")) / checkpoint_name(ctx.quick, ctx.impl)
    if ctx.option(
        "write_docs", False
    ):  # a recording is one whole run, not the tail of an older one
        checkpoint.unlink(missing_ok=True)
    return experiments.shakespeare(train, ctx.quick, checkpoint, ctx.option("threads", 1))


def trained(ctx: Context, train) -> dict:
    """The trained heads, beside Step 4's untrained family."""
    r = ctx.results["training"]
    hd = experiments.trained_heads(r["model"], r["mcfg"])
    return dict(heads=hd, family=experiments.untrained_family())


def induction(ctx: Context, train) -> list[dict]:
    """The induction experiment, once per seed of --seeds."""
    return experiments.induction_run(train, options(ctx)[0], quick=ctx.quick)


def previous_token_layers(both) -> str:
    """The layers that hold a previous-token head, e.g. '0, 2', or 'none'."""
    rows = both["heads"]["rows"]
    return (
        ", ".join(
            str(n) for n in sorted({r["layer"] for r in rows if r["label"] == "previous-token"})
        )
        or "none"
    )


TODOS = tuple(
    f"step-06 task {n}: {name}"
    for n, name in enumerate(("get_batch", "estimate_loss", "lr_at", "train_step"), start=1)
)
TINY = " (--quick: its tiny model's)"
HEADS = experiments.ModelConfig()  # the default run's sizes: the slot's "of 16 heads"
QUICK_HEADS = experiments.QUICK_MODEL
# Sizes and names are exact; the loss at init is one forward of float32 sums, whose last printed
# digit (of 3) another CPU's summation order can move by one: last_digit.
# Torch runs on one thread (threads=1), so a run repeats digit for digit on one machine; training
# alone takes --threads.
RUN = Run(
    STEP,
    (
        Experiment(
            "config",
            TODOS[:2],
            stopping(initial),
            blocks=(Block("config", config_block, check=last_digit(1e-9)),),
            slots=(
                Slot(
                    "loss_at_init",
                    "validation loss at init",
                    lambda r: r["inits"][r["quick"]]["loss"],
                    "{:.3f}".format,
                    quick=f"validation loss at init{TINY}",
                ),
            ),
        ),
        Experiment(
            "labels", (), lambda ctx: heads, blocks=(Block("labels", labels_block, check=exact),)
        ),
        Experiment(
            "training",
            TODOS,
            stopping(training),
            blocks=(Block("training", training_block), Block("samples", samples_block)),
            figures=(Figure("loss_curve", plots.loss_curve),),
            verdict=validation_failure,
            skip=left_out("gpt"),
        ),
        Experiment(
            "heads",
            TODOS,
            stopping(trained),
            blocks=(Block("heads", heads_block),),
            figures=(
                Figure("trained_heads", plots.heads_beside_family),
                Figure("head_zoom", plots.head_zoom),
            ),
            slots=(
                Slot(
                    "previous_token_layers",
                    "layers with a previous-token head",
                    previous_token_layers,
                ),
                Slot(
                    "broad_heads",
                    f"broad heads of {HEADS.h * HEADS.n_layer}",
                    lambda both: sum(r["label"] == "broad" for r in both["heads"]["rows"]),
                    quick=f"broad heads of {QUICK_HEADS.h * QUICK_HEADS.n_layer}{TINY}",
                ),
            ),
            uses=("training",),
        ),
        Experiment(
            "induction",
            TODOS[3:],
            stopping(induction),
            blocks=(
                Block("induction", induction_block),
                Block("induction-targets", targets_block, record=False),
            ),
            figures=(
                Figure("induction_phase", lambda runs, path: plots.induction_phase(runs[0], path)),
                Figure("induction_heads", lambda runs, path: plots.induction_heads(runs[0], path)),
            ),
            verdict=induction_failures,
            skip=left_out("induction"),
        ),
    ),
    threads=1,
)
