"""Time and memory of naive, tiled and torch's attention: `python -m bench.bench_attention`."""

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from bench.tiled_attention import naive_attention, tiled_attention
from common import REPO_ROOT
from common.docs import markdown_table, write_block
from common.envreport import report
from common.figures import out_dir, plt, save
from common.seeding import randn

BENCH_DIR = Path(__file__).resolve().parent
README = BENCH_DIR / "README.md"
# Step 4's handout quotes the same block in its going-further part.
QUOTED_IN = [README, REPO_ROOT / "steps" / "step-04" / "README.md"]
RESULTS = BENCH_DIR / "results.json"
BLOCK = "bench-results"
FULL_T, FULL_ROUNDS = [256, 512, 1024, 2048, 4096], 9
QUICK_T, QUICK_ROUNDS = [64, 128, 256], 2
B, HEADS, D_HEAD = 1, 4, 64
BLOCK_Q = BLOCK_K = 256
TIME_GOAL_T, TIME_GOAL = 2048, 2.0  # tiled time <= 2 x SDPA's at T = 2048
MEMORY_GOAL_T, MEMORY_GOAL = 4096, 1 / 8  # tiled peak extra memory <= 1/8 of naive's at T = 4096
LABELS = {"naive": "naive", "tiled": "tiled", "sdpa": "SDPA"}
MIB = 2**20


def methods() -> dict[str, Callable[..., torch.Tensor]]:
    """The three causal attentions under test, each f(q, k, v) -> output."""
    return {
        "naive": lambda q, k, v: naive_attention(q, k, v, is_causal=True),
        "tiled": lambda q, k, v: tiled_attention(
            q, k, v, is_causal=True, block_q=BLOCK_Q, block_k=BLOCK_K
        ),
        "sdpa": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
    }


def cpu_name() -> str:
    """The processor model and logical core count, as far as this OS says (for the record)."""
    name = platform.processor()
    cpuinfo = Path("/proc/cpuinfo")  # Linux; elsewhere platform.processor() is usually filled in
    if not name.strip() and cpuinfo.is_file():
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
        models = [line for line in text.splitlines() if line.startswith("model name")]
        name = models[0].split(":", 1)[1] if models else ""
    return f"{name.strip() or 'unknown'}, {os.cpu_count()} logical cores"


def progress(message: str) -> None:
    """Overwrite the progress line on stderr (an empty message clears it)."""
    print(f"\r{message:<60}", end="" if message else "\r", file=sys.stderr, flush=True)


def peak_extra_bytes(fn: Callable[..., torch.Tensor], *args) -> tuple[int, list[str]]:
    """(peak bytes held during fn(*args) minus its output, aten ops it ran), from the profiler."""
    # With profile_memory=True every allocation and free made by torch's CPU allocator is logged
    # with its size; summed in time order they give the bytes held by tensors created during the
    # call. Memory that MKL or oneDNN manage themselves (matmul scratch) is not in this log.
    # Kineto, the profiler's backend, logs start/stop lines to stderr unless told not to; it reads
    # this variable when it first starts.
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    with torch.autograd.profiler.profile(profile_memory=True) as prof:
        out = fn(*args)  # (B, h, T, hs)
    results = getattr(prof, "kineto_results", None)  # absent if torch was built without Kineto
    if results is None:
        raise RuntimeError(
            "peak memory needs torch's Kineto profiler, which this torch build lacks "
            f"(torch {torch.__version__}); the timings do not"
        )
    events = results.events()
    memory = sorted((e for e in events if e.name() == "[memory]"), key=lambda e: e.start_ns())
    held = peak = 0
    for event in memory:
        held += event.nbytes()  # > 0 for an allocation, < 0 for a free
        peak = max(peak, held)
    ops = sorted({e.name() for e in events if e.name().startswith("aten::")})
    return peak - out.nbytes, ops


def measure(seq_lens: list[int], rounds: int) -> dict:
    """Median-ready timings, peak extra memory and agreement of the three methods at each T."""
    fns = methods()
    runs, sdpa_ops, begin = [], [], time.perf_counter()
    for T in seq_lens:
        q, k, v = (randn(B, HEADS, T, D_HEAD, seed=s) for s in (0, 1, 2))  # each (B, h, T, hs)
        progress(f"T={T}: warm-up")
        outs = {name: fn(q, k, v) for name, fn in fns.items()}  # warm-up, (B, h, T, hs) each
        diff = {name: (outs[name] - outs["sdpa"]).abs().max().item() for name in ("naive", "tiled")}
        del outs
        seconds = {name: [] for name in fns}
        for r in range(rounds):  # interleaved, so a busy moment slows all three alike
            for name, fn in fns.items():
                progress(f"T={T}: timing {LABELS[name]}, round {r + 1}/{rounds}")
                start = time.perf_counter()
                fn(q, k, v)
                seconds[name].append(round(time.perf_counter() - start, 7))
        peak = {}
        for name, fn in fns.items():
            progress(f"T={T}: memory of {LABELS[name]}")
            peak[name], ops = peak_extra_bytes(fn, q, k, v)
            if name == "sdpa":
                sdpa_ops = [op for op in ops if op.startswith("aten::_scaled_dot_product")]
        runs.append(
            {
                "T": T,
                "seconds": seconds,
                "peak_extra_bytes": peak,
                "max_abs_diff_vs_sdpa": {name: float(f"{d:.3g}") for name, d in diff.items()},
            }
        )
    progress("")
    config = {"B": B, "heads": HEADS, "d_head": D_HEAD, "causal": True, "dtype": "float32"}
    config |= {"block_q": BLOCK_Q, "block_k": BLOCK_K, "rounds": rounds, "T": seq_lens}
    return {
        "config": config,
        "env": report(),
        "cpu": cpu_name(),
        "sdpa_kernel": sdpa_ops,
        "wall_seconds": round(time.perf_counter() - begin, 1),
        "runs": runs,
    }


def medians_ms(results: dict, name: str) -> list[float]:
    """Median time of method `name` at each T, in milliseconds."""
    return [statistics.median(run["seconds"][name]) * 1e3 for run in results["runs"]]


def fit_exponent(seq_lens: list[int], times: list[float]) -> float:
    """p in time ~ T^p: the slope of a least-squares line through (log T, log time)."""
    return float(np.polyfit(np.log(seq_lens), np.log(times), 1)[0])


def _run_at(results: dict, T: int) -> dict | None:
    """The run at sequence length T, or None if T was not measured."""
    return next((run for run in results["runs"] if run["T"] == T), None)


def goals(results: dict) -> list[str]:
    """One line per goal: the measured ratio and whether the goal is met."""
    lines = []
    run = _run_at(results, TIME_GOAL_T)
    if run is None:
        lines.append(f"- tiled / SDPA time at T = {TIME_GOAL_T}: not measured in this run")
    else:
        ratio = statistics.median(run["seconds"]["tiled"]) / statistics.median(
            run["seconds"]["sdpa"]
        )
        verdict = "met" if ratio <= TIME_GOAL else "NOT met"
        lines.append(
            f"- tiled / SDPA time at T = {TIME_GOAL_T}: **{ratio:.2f}** "
            f"(goal <= {TIME_GOAL:g}: {verdict})"
        )
    run = _run_at(results, MEMORY_GOAL_T)
    if run is None:
        lines.append(f"- tiled / naive peak extra memory at T = {MEMORY_GOAL_T}: not measured")
    else:
        ratio = run["peak_extra_bytes"]["tiled"] / run["peak_extra_bytes"]["naive"]
        verdict = "met" if ratio <= MEMORY_GOAL else "NOT met"
        lines.append(
            f"- tiled / naive peak extra memory at T = {MEMORY_GOAL_T}: **{ratio:.4f}** "
            f"= 1/{1 / ratio:.0f} (goal <= 1/{1 / MEMORY_GOAL:.0f}: {verdict})"
        )
    return lines


def render_block(results: dict) -> str:
    """The Markdown of the README's bench-results block, made from the recorded results alone."""
    cfg, runs = results["config"], results["runs"]
    ms = {name: medians_ms(results, name) for name in LABELS}
    header = ["T"] + [f"{LABELS[n]} ms" for n in LABELS]
    header += ["naive / SDPA", "tiled / SDPA"] + [f"{LABELS[n]} peak extra MiB" for n in LABELS]
    rows = []
    for i, run in enumerate(runs):
        row = [str(run["T"])] + [f"{ms[n][i]:.2f}" for n in LABELS]
        row += [f"{ms['naive'][i] / ms['sdpa'][i]:.2f}", f"{ms['tiled'][i] / ms['sdpa'][i]:.2f}"]
        row += [f"{run['peak_extra_bytes'][n] / MIB:.2f}" for n in LABELS]
        rows.append(row)
    seq_lens = [run["T"] for run in runs]
    slopes = ", ".join(f"{LABELS[n]} {fit_exponent(seq_lens, ms[n]):.2f}" for n in LABELS)
    worst = max(max(run["max_abs_diff_vs_sdpa"].values()) for run in runs)
    kernel = ", ".join(f"`{op}`" for op in results["sdpa_kernel"]) or "(not recorded)"
    lines = [
        "Measured by `pixi run bench-attention` (`python -m bench.bench_attention`) on:",
        "",
        "```text",
        results["env"],
        f"cpu      {results['cpu']}",
        "```",
        "",
        f"Causal self-attention, B = {cfg['B']}, {cfg['heads']} heads, d_head = {cfg['d_head']}, "
        f"{cfg['dtype']}; tiles of {cfg['block_q']} x {cfg['block_k']}; "
        f"median of {cfg['rounds']} interleaved rounds after one warm-up; "
        f"SDPA ran {kernel}. Largest |output - SDPA output| in the run: {worst:.1e}. "
        f"The whole measurement took {results['wall_seconds']:.0f} s.",
        "",
        markdown_table(header, rows).rstrip("\n"),
        "",
        f"Fitted exponent p in time ~ T^p (least squares on log-log, T = {seq_lens[0]} to "
        f"{seq_lens[-1]}): {slopes}.",
        "",
        "Goals, as ratios measured in this run:",
        "",
        *goals(results),
    ]
    return "\n".join(lines) + "\n"


def plot(results: dict, path: Path) -> Path:
    """Log-log plot of time and of peak extra memory against T, with the fitted exponents."""
    seq_lens = [run["T"] for run in results["runs"]]
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 4))
    for name, label in LABELS.items():
        ms = medians_ms(results, name)
        p = fit_exponent(seq_lens, ms)
        ax_t.plot(seq_lens, ms, "o-", label=f"{label} (p = {p:.2f})")
        mib = [max(run["peak_extra_bytes"][name], 1) / MIB for run in results["runs"]]
        ax_m.plot(seq_lens, mib, "o-", label=label)
    ax_t.set(ylabel="median time (ms)", title="time ~ T^p (p fitted on log-log)")
    ax_m.set(ylabel="peak extra MiB", title="peak extra memory (CPU allocator log)")
    for ax in (ax_t, ax_m):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(seq_lens, [str(T) for T in seq_lens])
        ax.set_xlabel("T (sequence length)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    cfg = results["config"]
    fig.suptitle(f"causal attention, B={cfg['B']}, {cfg['heads']} heads, d_head={cfg['d_head']}")
    return save(fig, path)


def write_docs(results: dict) -> None:
    """Save the raw results to bench/results.json and regenerate the README block from that file."""
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    recorded = json.loads(RESULTS.read_text(encoding="utf-8"))
    for doc in QUOTED_IN:
        write_block(doc, BLOCK, render_block(recorded))


def main(argv: list[str] | None = None) -> int:
    """Measure, print the table and goals, draw the plot; with --write-docs record the run."""
    parser = argparse.ArgumentParser(prog="pixi run bench-attention", description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help=f"T in {QUICK_T}, {QUICK_ROUNDS} rounds (for tests)"
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="folder for attention.png (default: out/bench)"
    )
    parser.add_argument(
        "--write-docs",
        action="store_true",
        help="save bench/results.json and regenerate the block in bench/README.md",
    )
    args = parser.parse_args(argv)
    if args.quick and args.write_docs:
        parser.error("--write-docs records the full run; drop --quick")
    print(report(), end="\n\n")
    seq_lens, rounds = (QUICK_T, QUICK_ROUNDS) if args.quick else (FULL_T, FULL_ROUNDS)
    results = measure(seq_lens, rounds)
    print(render_block(results))
    folder = out_dir("bench") if args.out is None else args.out
    folder.mkdir(parents=True, exist_ok=True)
    path = plot(results, folder / "attention.png")
    print(f"figure: {_shown(path)}")
    if args.write_docs:
        write_docs(results)
        print(f"wrote {_shown(RESULTS)} and the {BLOCK!r} block of {_shown(README)}")
    return 0


def _shown(path: Path) -> str:
    """`path` relative to the repo when it is inside it, for shorter messages."""
    path = path.resolve()
    return path.relative_to(REPO_ROOT).as_posix() if path.is_relative_to(REPO_ROOT) else str(path)


if __name__ == "__main__":
    sys.exit(main())
