"""Step 6: train the Step 5 GPT with your loop, read its heads, and find an induction circuit."""

import functools
import math
from pathlib import Path

import torch

from common import predictions
from common.docs import exact, last_digit, markdown_table
from common.figures import figure_path, out_dir
from common.loader import load, load_file
from common.run import record

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


def config_block(train) -> str:
    """The two configurations, their parameter counts and FLOPs per token: sizes only."""
    rows = []
    for quick in (False, True):
        init = experiments.initial_losses(train, quick)
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


def labels_block() -> str:
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
        f"recorded on {r['machine']}, {r['threads']} thread(s)\n\n"
        + markdown_table(["step", "validation loss"], rows)
        + f"\n{verdict_line(r)}\n{speed_line(r)}\n"
    )


def samples_block(r) -> str:
    """Recorded: 200 characters before and after training, from the same seeded generator."""
    return f"before training:\n\n```text\n{r['before']}\n```\n\nafter training:\n\n```text\n{r['after']}\n```\n"


def heads_block(hd) -> str:
    """Recorded: every trained head's scores and label."""
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


CHECKED = {
    "config": config_block,
    "labels": lambda _: labels_block(),
}


def checked_blocks(train) -> dict[str, str]:
    """The README's deterministic blocks: the docs test compares them with a fresh run."""
    return {name: make(train) for name, make in CHECKED.items()}


def checkpoint_name(quick: bool, impl: str) -> str:
    """The checkpoint of a run: one per configuration and implementation, never shared by two."""
    return f"gpt{'-quick' if quick else ''}{'-starter' if impl == 'starter' else ''}.pt"


def quick_line(r) -> str:
    """A --quick induction run's numbers, one line, and no verdict: 200 steps learn no circuit."""
    return (
        f"seed {r['cfg'].seed} (--quick, {r['cfg'].steps} steps, too few for the circuit: no "
        f"targets checked): repeat loss {r['repeat']:.2f}, one-layer repeat loss "
        f"{r['one_layer_repeat']:.2f}, best prefix-matching score {r['prefix'].max():.2f}, "
        f"ablated repeat loss {r['ablated_repeat']:.2f}"
    )


def answers(train, quick: bool, hd: dict | None) -> list[predictions.Answer]:
    """What this run measured for each slot of predictions.toml (tasks 5 and 6)."""
    loss = experiments.initial_losses(train, quick)["loss"]
    tiny = " (--quick: its tiny model's)" if quick else ""
    said = [
        predictions.Answer("loss_at_init", f"validation loss at init{tiny}", loss, f"{loss:.3f}")
    ]
    if hd is None:
        why = "--skip gpt: no model trained"
        return said + [
            predictions.Answer(key, what, None, waits=why)
            for key, what in (("previous_token_layers", "layers"), ("broad_heads", "broad heads"))
        ]
    labels = [(r["layer"], r["label"]) for r in hd["rows"]]
    layers = ", ".join(
        str(n) for n in sorted({n for n, label in labels if label == "previous-token"})
    )
    broad = sum(label == "broad" for _, label in labels)
    return said + [
        predictions.Answer("previous_token_layers", "layers with a previous-token head", layers or "none"),
        predictions.Answer("broad_heads", f"broad heads of {len(labels)}{tiny}", broad),
    ]  # fmt: skip


def main(args) -> int:
    """`pixi run step-06 [--quick] [--seeds 0,1,2] [--skip gpt,induction] [--threads N] [--write-docs]`."""
    try:
        seeds = [int(s) for s in args.seeds.split(",")]
    except ValueError:
        print(f"--seeds takes integers separated by commas, got {args.seeds!r}")
        return 2
    skip = {part for part in args.skip.split(",") if part}
    if unknown := skip - {"gpt", "induction"}:
        print(f"--skip takes gpt and induction, got {', '.join(sorted(unknown))}")
        return 2
    torch.set_num_threads(args.threads)  # before any work: a second thread mostly waits here
    train = load(STEP, "train", args.impl)
    try:
        return run(args, train, seeds, skip)
    except train.Interrupted as exc:  # Ctrl-C while training: it says where the next run starts
        print(f"\n{exc}")
        return 130
    except KeyboardInterrupt:
        print(
            f"\n{STEP} stopped (Ctrl-C), not while training: a training checkpoint keeps its "
            "last step, the induction experiment keeps nothing; run the same command again"
        )
        return 130
    except (train.CheckpointError, FloatingPointError) as exc:  # one line: the file, the fix
        print(f"{STEP}: {exc}")
        return 1


def run(args, train, seeds: list[int], skip: set[str]) -> int:
    """The parts of the run not skipped; the exit code (1 when a target of the full run fails)."""
    out = out_dir(STEP, args.out)
    figure = functools.partial(figure_path, out, quick=args.quick)  # --quick: its own files
    docs, failed, hd = checked_blocks(train), [], None
    for body in docs.values():
        print(body)
    if "gpt" not in skip:
        name = checkpoint_name(args.quick, args.impl)
        if args.write_docs:  # a recording is one whole run, not the tail of an older one
            (out / name).unlink(missing_ok=True)
        r = experiments.shakespeare(train, args.quick, out / name, threads=args.threads)
        docs["training"], docs["samples"] = training_block(r), samples_block(r)
        print(docs["training"], docs["samples"], sep="\n")
        if not args.quick and r["losses"]["val"][-1][1] > TARGET_VAL:
            failed.append(f"validation loss above {TARGET_VAL}")
        hd = experiments.trained_heads(r["model"], r["mcfg"])
        docs["heads"] = heads_block(hd)
        print(docs["heads"])
        both = dict(heads=hd, family=experiments.untrained_family())
        for path in (
            plots.loss_curve(r, figure("loss_curve")),
            plots.heads_beside_family(both, figure("trained_heads")),
            plots.head_zoom(both, figure("head_zoom")),
        ):
            print(f"wrote {path}")
    if "induction" not in skip:
        runs = experiments.induction_run(train, seeds, quick=args.quick)
        docs["induction"] = induction_block(runs)
        print(docs["induction"])
        for r in runs:
            if args.quick:
                print(quick_line(r))
                continue
            for text, ok in induction_verdicts(r):
                print(f"seed {r['cfg'].seed}: {'PASS' if ok else 'FAIL'} {text}")
                failed += [] if ok else [f"seed {r['cfg'].seed}: {text}"]
        for path in (
            plots.induction_phase(runs[0], figure("induction_phase")),
            plots.induction_heads(runs[0], figure("induction_heads")),
        ):
            print(f"wrote {path}")
    print("", *predictions.report(STEP, answers(train, args.quick, hd)), sep="\n")
    if args.write_docs and not args.quick:  # a part left out keeps its recorded blocks
        record(args, docs)
    elif args.write_docs:
        print("README.md not rewritten: it records the default run, not --quick")
    if failed:
        print("FAIL: " + "; ".join(failed))
    return 1 if failed else 0


def docs_blocks() -> dict[str, tuple[str, object]]:
    """The handout's deterministic blocks from the reference, and how close each must be."""
    fresh = checked_blocks(load(STEP, "train", "solution"))
    # Sizes and names are exact; the loss at init is one forward of float32 sums, whose last
    # printed digit (of 3) another CPU's summation order can move by one: last_digit
    return {
        name: (body, last_digit(1e-9) if name == "config" else exact)
        for name, body in fresh.items()
    }
