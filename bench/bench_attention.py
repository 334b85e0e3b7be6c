"""Time and memory of naive, tiled and torch's attention: `python -m bench.bench_attention`."""

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

from bench.tiled_attention import naive_attention, tiled_attention
from common import REPO_ROOT
from common.docs import holding, markdown_table, write_block
from common.envreport import cpu_name, report
from common.run.figures import out_dir, plt, save
from common.run.timing import (
    SPREAD_LIMIT,
    clock,
    fit_exponent,
    interleaved,
    load_average,
    load_warning,
    medians_and_bars,
    quartiles,
    relative_spread,
    torch_threads,
)
from common.seeding import randn

BENCH_DIR = Path(__file__).resolve().parent
README = BENCH_DIR / "README.md"
# Step 4's handout quotes the same block in its going-further part.

RESULTS = BENCH_DIR / "results.json"
BLOCK = "bench-results"
FULL_T, FULL_ROUNDS, FULL_MIN_RUN_TIME = [256, 512, 1024, 2048, 4096], 9, 0.1
QUICK_T, QUICK_ROUNDS, QUICK_MIN_RUN_TIME = [64, 128], 2, 0.001
B, HEADS, D_HEAD = 1, 4, 64
BLOCK_Q = BLOCK_K = 256
TIME_GOAL_T, TIME_GOAL = 2048, 2.0  # tiled time <= 2 x SDPA's at T = 2048
MEMORY_GOAL_T, MEMORY_GOAL = 4096, 1 / 8  # tiled peak extra memory <= 1/8 of naive's at T = 4096
LABELS = {"naive": "naive", "tiled": "tiled", "sdpa": "SDPA"}
RATIOS = [("naive", "sdpa"), ("tiled", "sdpa")]  # (numerator, denominator), taken per round
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


def status(message: str) -> None:
    """Rewrite the progress line on a terminal's stderr; print nothing when stderr is not one."""
    if sys.stderr.isatty():
        print(f"\r{message:<60}", end="" if message else "\r", file=sys.stderr, flush=True)


def round_done(rounds: int, last: tuple[int, str]) -> Callable[[int, tuple[int, str]], None]:
    """The timer's callback: a rewritten line per cell on a terminal, else one line per round."""
    began = time.perf_counter()

    def done(r: int, cell: tuple[int, str]) -> None:
        T, name = cell
        status(f"round {r + 1}/{rounds}: timed {LABELS[name]} at T={T}")
        if cell == last and not sys.stderr.isatty():
            elapsed = time.perf_counter() - began
            print(f"round {r + 1}/{rounds} timed ({elapsed:.0f} s)", file=sys.stderr, flush=True)

    return done


def peak_extra_bytes(fn: Callable[..., torch.Tensor], *args) -> tuple[int, list[str]]:
    """(peak bytes held during fn(*args) minus its output, aten ops it ran), from the profiler."""
    # With profile_memory=True every allocation and free made by torch's CPU allocator is logged
    # with its size; summed in time order they give the bytes held by tensors created during the
    # call. Memory that MKL or oneDNN manage themselves (matmul scratch) is not in this log.
    # Kineto, the profiler's backend, logs start/stop lines to stderr unless told not to; it reads
    # this variable when it first starts.
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    with torch.autograd.profiler.profile(profile_memory=True) as prof:
        out = fn(*args)  # (B, h, T, d_head)
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


def inputs(T: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Seeded q, k, v for length T, each (B, h, T, hs)."""
    return tuple(randn(B, HEADS, T, D_HEAD, seed=s) for s in (0, 1, 2))


def agreement(qkv: tuple[torch.Tensor, ...]) -> dict[str, float]:
    """Largest |output - SDPA output| of naive and tiled (this is also every method's warm-up)."""
    outs = {name: fn(*qkv) for name, fn in methods().items()}  # (B, h, T, d_head) each
    diff = {name: (outs[name] - outs["sdpa"]).abs().max().item() for name in ("naive", "tiled")}
    return {name: float(f"{d:.3g}") for name, d in diff.items()}


def memory(qkv: tuple[torch.Tensor, ...], T: int) -> tuple[dict[str, int], list[str]]:
    """Peak extra bytes of each method at one T, and the SDPA kernel the profiler saw."""
    peak, kernel = {}, []
    for name, fn in methods().items():
        status(f"T={T}: memory of {LABELS[name]}")
        peak[name], ops = peak_extra_bytes(fn, *qkv)
        if name == "sdpa":
            kernel = [op for op in ops if op.startswith("aten::_scaled_dot_product")]
    return peak, kernel


def measure(seq_lens: list[int], rounds: int, threads: int = 1, min_run_time: float = 0.1) -> dict:
    """Interleaved timings, peak extra memory and agreement of the three methods at each T."""
    load, begin = load_average(), time.perf_counter()
    qkv = {T: inputs(T) for T in seq_lens}
    with torch_threads(threads):  # memory and agreement at the thread count of the timings too
        diffs = {}
        for T in seq_lens:
            status(f"T={T}: warm-up")
            diffs[T] = agreement(qkv[T])
        cells = {(T, n): _call(fn, qkv[T]) for T in seq_lens for n, fn in methods().items()}
        done = round_done(rounds, last=list(cells)[-1])
        seconds = interleaved(cells, rounds, threads, min_run_time, done)
        peaks = {T: memory(qkv[T], T) for T in seq_lens}
        env = report()  # inside the block: its threads line is the count the methods ran at
    status("")
    runs = [
        {
            "T": T,
            "seconds": {n: [round(s, 9) for s in seconds[(T, n)]] for n in LABELS},
            "peak_extra_bytes": peaks[T][0],
            "max_abs_diff_vs_sdpa": diffs[T],
        }
        for T in seq_lens
    ]
    config = {"B": B, "heads": HEADS, "d_head": D_HEAD, "causal": True, "dtype": "float32"}
    config |= {"block_q": BLOCK_Q, "block_k": BLOCK_K, "rounds": rounds, "T": seq_lens}
    config |= {"threads": threads, "clock": clock(threads)[1], "min_run_time": min_run_time}
    end = load_average()
    return {
        "config": config,
        "env": env,
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "load_average_at_start": None if load is None else round(load, 2),
        "load_average_at_end": None if end is None else round(end, 2),
        "sdpa_kernel": peaks[seq_lens[-1]][1],
        "wall_seconds": round(time.perf_counter() - begin, 1),
        "runs": runs,
    }


def _call(fn: Callable[..., torch.Tensor], qkv: tuple[torch.Tensor, ...]) -> Callable[[], object]:
    """fn(q, k, v) as a call with no arguments, for the timer."""
    return lambda: fn(*qkv)


def ratios(run: dict, top: str, bottom: str) -> list[float]:
    """time of `top` / time of `bottom`, one ratio per round (both timed in that round)."""
    return [a / b for a, b in zip(run["seconds"][top], run["seconds"][bottom], strict=True)]


def medians_ms(results: dict, name: str) -> list[float]:
    """Median over rounds of method `name`'s time at each T, in milliseconds."""
    return [quartiles(run["seconds"][name])[1] * 1e3 for run in results["runs"]]


def _summary(values: list[float], scale: float = 1.0, digits: int = 2) -> str:
    """'median [first quartile, third quartile]' of values x scale."""
    q1, med, q3 = (scale * x for x in quartiles(values))
    return f"{med:.{digits}f} [{q1:.{digits}f}, {q3:.{digits}f}]"


def _run_at(results: dict, T: int) -> dict | None:
    """The run at sequence length T, or None if T was not measured."""
    return next((run for run in results["runs"] if run["T"] == T), None)


def goals(results: dict) -> list[str]:
    """One line per goal: the measured ratio, its spread over rounds, and whether it is met."""
    lines = []
    run = _run_at(results, TIME_GOAL_T)
    if run is None:
        lines.append(f"- tiled / SDPA time at T = {TIME_GOAL_T}: not measured in this run")
    else:
        per_round = ratios(run, "tiled", "sdpa")
        q1, ratio, q3 = quartiles(per_round)
        verdict = "met" if ratio <= TIME_GOAL else "NOT met"
        lines.append(
            f"- tiled / SDPA time at T = {TIME_GOAL_T}: **{ratio:.2f}** "
            f"(quartiles {q1:.2f} to {q3:.2f}, range {min(per_round):.2f} to "
            f"{max(per_round):.2f} over {len(per_round)} rounds; goal <= {TIME_GOAL:g}: {verdict})"
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


def warnings(results: dict) -> list[str]:
    """Why the run's timings may not be trusted: a high load average, or a wide spread."""
    cores, threads = results["cores"], results["config"]["threads"]
    found = [
        load_warning(results["load_average_at_start"], cores, "when the run started"),
        load_warning(results["load_average_at_end"], cores, "when it ended", own=threads),
    ]
    for run in results["runs"]:
        series = {LABELS[n]: run["seconds"][n] for n in LABELS}
        series |= {f"{LABELS[a]} / {LABELS[b]}": ratios(run, a, b) for a, b in RATIOS}
        spreads = {what: relative_spread(values) for what, values in series.items()}
        wide = [
            f"{what} ({spread:.0%})" for what, spread in spreads.items() if spread > SPREAD_LIMIT
        ]
        if wide:
            found.append(
                f"T = {run['T']}: quartiles more than {SPREAD_LIMIT:.0%} of the median apart "
                f"for {', '.join(wide)}"
            )
    return [line for line in found if line]


def time_table(results: dict) -> str:
    """Median [quartiles] over rounds of each method's time and of the per-round ratios."""
    header = ["T"] + [f"{LABELS[n]} ms" for n in LABELS]
    header += [f"{LABELS[a]} / {LABELS[b]}" for a, b in RATIOS]
    rows = [
        [str(run["T"])]
        + [_summary(run["seconds"][n], scale=1e3) for n in LABELS]
        + [_summary(ratios(run, a, b)) for a, b in RATIOS]
        for run in results["runs"]
    ]
    return markdown_table(header, rows)


def memory_table(results: dict) -> str:
    """Peak extra MiB of each method at each T."""
    header = ["T"] + [f"{LABELS[n]} peak extra MiB" for n in LABELS]
    rows = [
        [str(run["T"])] + [f"{run['peak_extra_bytes'][n] / MIB:.2f}" for n in LABELS]
        for run in results["runs"]
    ]
    return markdown_table(header, rows)


def _threads(n: int) -> str:
    """'1 thread', '2 threads'."""
    return f"{n} thread" + ("s" if n > 1 else "")


def render_block(results: dict) -> str:
    """The Markdown of the README's bench-results block, made from the recorded results alone."""
    cfg, runs = results["config"], results["runs"]
    seq_lens = [run["T"] for run in runs]
    slopes = ", ".join(
        f"{LABELS[n]} {fit_exponent(seq_lens, medians_ms(results, n)):.2f}" for n in LABELS
    )
    worst = max(max(run["max_abs_diff_vs_sdpa"].values()) for run in runs)
    kernel = ", ".join(f"`{op}`" for op in results["sdpa_kernel"]) or "(not recorded)"
    loads = [results[f"load_average_at_{when}"] for when in ("start", "end")]
    load_text = (
        "not available"
        if None in loads
        else "{:.2f} at the start and {:.2f} at the end".format(*loads)
    )
    lines = [
        "Measured by `pixi run bench-attention` (`python -m bench.bench_attention`) on:",
        "",
        "```text",
        results["env"],
        f"cpu      {results['cpu']}",
        "```",
        "",
        f"Causal self-attention, B = {cfg['B']}, {cfg['heads']} heads, d_head = {cfg['d_head']}, "
        f"{cfg['dtype']}; tiles of {cfg['block_q']} x {cfg['block_k']}; SDPA ran {kernel}. "
        f"Largest |output - SDPA output| in the run: {worst:.1e}.",
        "",
        f"Every method ran at **{_threads(cfg['threads'])}**, timed by "
        f"`torch.utils.benchmark.Timer(..., num_threads={cfg['threads']}).blocked_autorange("
        f"min_run_time={cfg['min_run_time']:g})` on the {cfg['clock']}, "
        f"in {cfg['rounds']} interleaved rounds: each round times every method at every T before "
        "the next begins. A cell is the median over rounds [first quartile, third quartile]; a "
        "ratio is taken within each round, then summarised the same way. The 1-minute load "
        f"average was {load_text} of the run, which took "
        f"{results['wall_seconds']:.0f} s.",
        "",
        time_table(results).rstrip("\n"),
        "",
        memory_table(results).rstrip("\n"),
        "",
        f"Fitted exponent p in time ~ T^p (least squares on log-log of the medians, "
        f"T = {seq_lens[0]} to {seq_lens[-1]}): {slopes}.",
        "",
        "Goals, as ratios measured in this run:",
        "",
        *goals(results),
        "",
        "Warnings:",
        "",
        *[f"- {line}" for line in warnings(results) or ["none"]],
    ]
    return "\n".join(lines) + "\n"


def plot(results: dict, path: Path) -> Path:
    """Log-log time, ratio to SDPA and peak extra memory against T; bars span the quartiles."""
    seq_lens, runs = [run["T"] for run in results["runs"]], results["runs"]
    fig, (ax_t, ax_r, ax_m) = plt.subplots(1, 3, figsize=(15, 4.2), layout="constrained")
    for name, label in LABELS.items():
        ms, bars = medians_and_bars([run["seconds"][name] for run in runs], scale=1e3)
        p = fit_exponent(seq_lens, ms)
        ax_t.errorbar(seq_lens, ms, yerr=bars, fmt="o-", capsize=3, label=f"{label} (p = {p:.2f})")
        mib = [max(run["peak_extra_bytes"][name], 1) / MIB for run in runs]
        ax_m.plot(seq_lens, mib, "o-", label=label)
    for top, bottom in RATIOS:
        med, bars = medians_and_bars([ratios(run, top, bottom) for run in runs])
        label = f"{LABELS[top]} / {LABELS[bottom]}"
        ax_r.errorbar(seq_lens, med, yerr=bars, fmt="o-", capsize=3, label=label)
    ax_r.axhline(1.0, color="0.5", lw=1, ls="--")
    cfg = results["config"]
    ax_t.set(
        ylabel="time per call (ms), median and quartiles", title="time ~ T^p (p fitted on log-log)"
    )
    ax_r.set(
        ylabel="time / SDPA time, per round", title=f"ratio to SDPA over {cfg['rounds']} rounds"
    )
    ax_m.set(ylabel="peak extra MiB", title="peak extra memory (CPU allocator log)")
    ax_r.set_ylim(bottom=0)  # ratios on a linear scale: 1 means as fast as SDPA
    for ax in (ax_t, ax_r, ax_m):
        ax.set_xscale("log", base=2)
        ax.set_yscale("linear" if ax is ax_r else "log")
        ax.set_xticks(seq_lens, [str(T) for T in seq_lens])
        ax.set_xticks([], minor=True)
        ax.set_xlabel("T (sequence length)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.suptitle(
        f"causal attention, B={cfg['B']}, {cfg['heads']} heads, d_head={cfg['d_head']}, "
        f"every method on {_threads(cfg['threads'])}"
    )
    return save(fig, path)


def quoted_in() -> list[Path]:
    """Every handout that quotes the results: found by its block's name, not by its path."""
    return holding(BLOCK, REPO_ROOT)


def write_docs(results: dict) -> None:
    """Save the raw results to bench/results.json and regenerate the README block from that file."""
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    recorded = json.loads(RESULTS.read_text(encoding="utf-8"))
    for doc in quoted_in():
        write_block(doc, BLOCK, render_block(recorded))


def positive_int(text: str) -> int:
    """argparse type: an int >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def main(argv: list[str] | None = None) -> int:
    """Measure, print the table, goals and warnings, draw the plot; --write-docs records the run."""
    parser = argparse.ArgumentParser(prog="pixi run bench-attention", description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help=f"T in {QUICK_T}, {QUICK_ROUNDS} rounds (for tests)"
    )
    parser.add_argument(
        "--threads", type=positive_int, default=1, help="torch threads for every method (default 1)"
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
    with torch_threads(args.threads):
        print(report(), end="\n\n")  # its threads line is the count every method runs at
    warning = load_warning(load_average(), os.cpu_count() or 1, "before the run")
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    if args.quick:
        results = measure(QUICK_T, QUICK_ROUNDS, args.threads, QUICK_MIN_RUN_TIME)
    else:
        results = measure(FULL_T, FULL_ROUNDS, args.threads, FULL_MIN_RUN_TIME)
    print(render_block(results))
    for line in warnings(results):
        print(f"warning: {line}", file=sys.stderr)
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
