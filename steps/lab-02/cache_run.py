"""lab-02 task 3's experiments: the cache's size from its formula, and the time per new token with
and without it for prompts of growing length (recorded, not checked: it varies by machine)."""

import copy
import math
import os
import textwrap

import torch

from common import timing
from common.docs import exact, markdown_table
from common.envreport import machine
from common.experiment import Block, Context, Experiment, Figure, Slot
from common.figures import pyplot, save
from common.seeding import generator, seed_all

# The timed GPT: Step 5's code, untrained (speed does not depend on the weights), with a T_max
# long enough for attention over the context to show. V = 65 is the Shakespeare vocabulary.
SPEED = dict(V=65, T_max=1024, d=128, h=4, n_layer=4)
CONTEXTS = (16, 64, 256, 1024)  # T: the ids the next token is computed from
ROUNDS, MIN_RUN_TIME = 5, 0.2  # interleaved rounds (the median kept), seconds per timed block
# --quick (the tests): the same code on a model and contexts small enough for a second
QUICK_SPEED = dict(V=65, T_max=32, d=32, h=4, n_layer=2)
QUICK_CONTEXTS, QUICK_ROUNDS, QUICK_MIN_RUN_TIME = (4, 8, 32), 1, 0.01
STEP = "lab-02"  # whose predictions.toml the speed table reads
THREADS = 1  # every contender on one thread (common/timing.py says why)
FLAT = 1.5  # cached time per token at the longest context, at most this times the shortest's
PARITY_TOL = 1e-4  # cached against uncached logits of the timed model (d = 128, 4 layers)

# (label, n_layer, h, d_head, T, bytes a number): the cache of one sequence (B = 1), full
CACHES = [
    (
        "the full run's timed GPT, float32",
        SPEED["n_layer"],
        SPEED["h"],
        SPEED["d"] // SPEED["h"],
        SPEED["T_max"],
        4,
    ),
    ("GPT-2 small, float32", 12, 12, 64, 1024, 4),
    ("GPT-2 small, bfloat16", 12, 12, 64, 1024, 2),
    ("GPT-2 XL, float32", 48, 25, 64, 1024, 4),
]


def flops_perowtoken(T, d, n_layer, V, cached):
    """Multiply-adds x 2 of the next token's logits from T ids: one position, or all T again."""
    dense = 24 * n_layer * d * d + 2 * d * V  # q, k, v, proj (8d^2), MLP (16d^2), lm_head (2dV)
    if cached:  # one new position's dense maps, its query against T keys and T values
        return dense + 4 * n_layer * T * d
    return T * dense + 4 * n_layer * T * T * d  # Step 5's forward: T positions, T x T scores


def cache_sizes(ctx: Context) -> list[dict]:
    """Every cache of CACHES in numbers (kvcache.cache_numbers, the formula) and in MB."""
    kv = ctx.load("kvcache")
    rows = []
    for label, n_layer, h, d_head, T, nbytes in CACHES:
        numbers = kv.cache_numbers(n_layer, 1, h, T, d_head)
        rows.append(dict(label=label, n_layer=n_layer, h=h, d_head=d_head, T=T, numbers=numbers))
        rows[-1]["MB"] = numbers * nbytes / 1e6
    return rows


def sizes_block(rows) -> str:
    """The cache per sequence: 2 n_layer h T d_head numbers, in MB; GPT-2 small's in a sentence."""
    table = markdown_table(
        ["cache of one full sequence", "n_layer", "h", "d_head", "T", "2 n_layer h T d_head", "MB"],
        [
            [r["label"], r["n_layer"], r["h"], r["d_head"], r["T"], f"{r['numbers']:,}"]
            + [f"{r['MB']:.1f}"]
            for r in rows
        ],
    )
    gpt2 = next(r for r in rows if r["label"] == "GPT-2 small, float32")
    return table + (
        f"\nGPT-2 small keeps {gpt2['MB']:.1f} MB of keys and values per sequence of "
        f"{gpt2['T']} tokens in float32 (MB = 10^6 bytes): {gpt2['numbers'] // gpt2['T']:,} "
        "numbers a token, 2 n_layer d; a batch of B sequences keeps B times as much.\n"
    )


def _cells(kv, model, T):
    """The two ways to the next token's logits from T ids: Step 5's forward of all T, and one
    cached step over a cache holding T - 1; and how far apart their logits are."""
    idx = torch.randint(model.V, (1, T), generator=generator(T))  # (1, T)
    base = kv.KVCache(model, 1)
    kv.forward_cached(model, idx[:, :-1], base)  # the prefill: T - 1 positions held

    def cached():
        held = copy.copy(base)  # the same T - 1 positions before every call: appends rebind lists
        held.keys, held.values = list(base.keys), list(base.values)
        return kv.forward_cached(model, idx[:, -1:], held)[:, -1]  # (1, V)

    def uncached():
        return model(idx)[0][:, -1]  # (1, V)

    distance = (cached() - uncached()).abs().max().item()
    return {("uncached", T): uncached, ("cached", T): cached}, distance


def speed(ctx: Context) -> dict:
    """Seconds per new token at each context length, with and without the cache, one thread."""
    kv = ctx.load("kvcache")
    cfg = QUICK_SPEED if ctx.quick else SPEED
    Ts = QUICK_CONTEXTS if ctx.quick else CONTEXTS
    rounds, min_run_time = (
        (QUICK_ROUNDS, QUICK_MIN_RUN_TIME) if ctx.quick else (ROUNDS, MIN_RUN_TIME)
    )
    seed_all(0)
    model = kv.GPT(**cfg).eval()
    load_before = timing.load_average()
    with torch.no_grad():  # the timer calls in this thread: no autograd graph is recorded
        calls, distances = {}, {}
        for T in Ts:
            cells, distances[T] = _cells(kv, model, T)
            calls |= cells
        for fn in calls.values():  # warm-up: first calls allocate; none of them is timed
            fn()
        seconds = timing.interleaved(calls, rounds, threads=THREADS, min_run_time=min_run_time)
    rows = []
    for T in Ts:
        row = dict(T=T, parity=distances[T])
        for way in ("uncached", "cached"):
            q1, median, q3 = timing.quartiles(seconds[(way, T)])
            row[way] = dict(seconds=median, q1=q1, q3=q3, samples=seconds[(way, T)])
            row[way]["flops"] = flops_perowtoken(
                T, cfg["d"], cfg["n_layer"], cfg["V"], way == "cached"
            )
        row["speedup"] = row["uncached"]["seconds"] / row["cached"]["seconds"]
        rows.append(row)
    warnings = [
        timing.load_warning(load_before, os.cpu_count() or 1, "at the start"),
        timing.load_warning(timing.load_average(), os.cpu_count() or 1, "at the end", own=THREADS),
    ] + [
        f"spread: {way} at T={r['T']}: quartiles {100 * timing.relative_spread(r[way]['samples']):.0f}% "
        "of the median apart"
        for r in rows
        for way in ("uncached", "cached")
        if rounds > 1 and timing.relative_spread(r[way]["samples"]) > timing.SPREAD_LIMIT
    ]
    return dict(
        rows=rows,
        model=cfg,
        rounds=rounds,
        quick=ctx.quick,
        machine=machine(THREADS),
        clock=timing.clock(THREADS)[1],
        warnings=[w for w in warnings if w],
        growth={
            way: rows[-1][way]["seconds"] / rows[0][way]["seconds"]
            for way in ("uncached", "cached")
        },
    )


def flop_ratio(row) -> float:
    """Uncached over cached FLOPs of one new token at this row's T: what counting promises."""
    return row["uncached"]["flops"] / row["cached"]["flops"]


def grows(ratio: float, digits: int) -> str:
    """'grows 1.35x', or 'shrinks to 0.81x' when the later time is the smaller."""
    return f"grows {ratio:.{digits}f}x" if ratio >= 1 else f"shrinks to {ratio:.2f}x"


def prediction_line(r) -> str:
    """The student's cache_speedup beside the measured speed-up and the FLOP ratio (not recorded)."""
    from common import predictions

    last = r["rows"][-1]
    mine, problem = predictions.read(STEP)
    answer = predictions.Answer(
        "cache_speedup", "", round(last["speedup"], 1), f"{last['speedup']:.1f}x"
    )
    said = problem or predictions.compare(mine.get("cache_speedup", predictions.EMPTY), answer)
    quick = " (--quick: a tiny GPT, not the question's)" if r["quick"] else ""
    return (
        f"cache_speedup at T={last['T']}{quick}: {said}; the FLOP counts give "
        f"{flop_ratio(last):,.0f}x\n"
    )


def speed_block(r) -> str:
    """The table of time per new token, the growth of each way, and the machine it ran on."""
    table = markdown_table(
        [
            "context T",
            "uncached ms/token",
            "cached ms/token",
            "speed-up",
            "FLOP ratio",
            "uncached tokens/s",
            "cached tokens/s",
            "uncached MFLOP/token",
            "cached MFLOP/token",
            "max abs logit diff",
        ],
        [
            [
                row["T"],
                f"{1e3 * row['uncached']['seconds']:.2f}",
                f"{1e3 * row['cached']['seconds']:.2f}",
                f"{row['speedup']:.1f}x",
                f"{flop_ratio(row):,.0f}x",
                f"{1 / row['uncached']['seconds']:.0f}",
                f"{1 / row['cached']['seconds']:.0f}",
                f"{row['uncached']['flops'] / 1e6:.1f}",
                f"{row['cached']['flops'] / 1e6:.2f}",
                f"{row['parity']:.1e}",
            ]
            for row in r["rows"]
        ],
    )
    first, last, m = r["rows"][0], r["rows"][-1], r["model"]
    rounds = (
        "one round (--quick: no median)"
        if r["rounds"] == 1
        else f"the median of {r['rounds']} interleaved rounds"
    )
    lines = [
        f"From T={first['T']} to T={last['T']}, the cached time per new token "
        f"{grows(r['growth']['cached'], 2)} (the bar: at most {FLAT}x), the uncached "
        f"{grows(r['growth']['uncached'], 1)}; at T={last['T']} the cache is "
        f"{last['speedup']:.1f}x faster, where the FLOP counts (questions 4 and 5) promise "
        f"{flop_ratio(last):,.0f}x: what the cached step costs is not its FLOPs.",
        f"Step 5's GPT, untrained, V={m['V']}, T_max={m['T_max']}, d={m['d']}, h={m['h']}, "
        f"n_layer={m['n_layer']}; {rounds}, {r['clock']}. "
        f"Recorded on {r['machine']}: times vary from machine to machine and from run to run.",
        *(f"warning: {w}" for w in r["warnings"]),
    ]
    return table + "\n" + "\n".join(lines) + "\n"


def nice_ticks(low: float, high: float, most: int = 7) -> list[float]:
    """Values of the 1-1.5-2-3-5-7 series from `low` to `high` (at most `most`, evenly thinned)."""
    found = [
        m * 10.0**k
        for k in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1)
        for m in (1, 1.5, 2, 3, 5, 7)
        if low / 1.15 <= m * 10.0**k <= high * 1.15
    ]
    step = max(1, math.ceil(len(found) / most))
    return found[::step] or [low, high]


def speed_figure(r, path):
    """Time per new token against context length, with and without the cache, quartiles as bars."""
    from matplotlib.ticker import (  # with pyplot, when a figure is drawn
        FormatStrFormatter,
        NullFormatter,
    )

    fig, ax = pyplot().subplots(figsize=(7, 4.2), layout="constrained")
    Ts = [row["T"] for row in r["rows"]]
    for way, color in (("uncached", "tab:red"), ("cached", "tab:blue")):
        med, bars = timing.medians_and_bars([row[way]["samples"] for row in r["rows"]], scale=1e3)
        label = (
            "Step 5's generate: the whole context again"
            if way == "uncached"
            else "KV cache: one new position"
        )
        ax.errorbar(Ts, med, yerr=bars, marker="o", color=color, capsize=3, label=label)
        for T, ms in zip(Ts, med, strict=True):  # each point's value, readable on any axis
            ax.annotate(f"{ms:.3g}", (T, ms), textcoords="offset points", xytext=(0, 7),
                        ha="center", fontsize=7, color=color)  # fmt: skip
    ax.set_xscale("log", base=2)
    ax.set_xticks(Ts, labels=[str(T) for T in Ts])
    ax.set_yscale("log")
    times = [1e3 * row[way]["seconds"] for row in r["rows"] for way in ("uncached", "cached")]
    ax.set_yticks(nice_ticks(min(times), max(times)))  # a few readable ms on any range
    ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))  # 2, 3, 5 ms rather than 2 x 10^0
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_ylim(min(times) / 1.15, max(times) * 1.15)
    ax.set_xlabel("context length T (ids the next token is computed from)")
    ax.set_ylabel("time per new token (ms, one thread)")
    m = r["model"]
    quick = ", --quick" if r["quick"] else ""
    title = f"Step 5's GPT (d={m['d']}, {m['n_layer']} layers, T_max={m['T_max']}{quick})"
    where = textwrap.fill(f"{r['machine']}; varies by machine and run", 100)
    ax.set_title(f"{title}\n{where}", fontsize=8)
    ax.legend(fontsize=8)
    return save(fig, path)


def logits_differ(r, ctx) -> str | None:
    """A FAIL line when the cached logits are not the uncached ones (the timing itself is not judged)."""
    bad = [row for row in r["rows"] if not row["parity"] <= PARITY_TOL]
    if bad:
        return (
            f"the cached step's logits differ from Step 5's by {bad[0]['parity']:.2g} at T="
            f"{bad[0]['T']} (tolerance {PARITY_TOL:g}): the timing compares two different computations"
        )
    return None


EXPERIMENTS = (
    Experiment(
        name="cache-size",
        todos=(),
        compute=cache_sizes,
        blocks=(
            Block("cache-size", sizes_block, title="The KV cache of one sequence", check=exact),
        ),
    ),
    Experiment(
        name="cache-speed",
        todos=("lab-02 task 3c: forward_cached",),
        compute=speed,
        blocks=(
            Block(
                "cache-speed", speed_block, title="Time per new token, with and without the cache"
            ),
            Block(
                "cache-speedup-prediction",
                prediction_line,
                title="Your prediction beside the clock and the FLOP count",
                record=False,
            ),
        ),
        figures=(Figure("cache_speed", speed_figure),),
        slots=(
            Slot(
                "cache_speedup",
                "uncached / cached time per new token at the longest context",
                value=lambda r: round(r["rows"][-1]["speedup"], 1),
                shown=lambda x: f"{x}x",
                quick="uncached / cached time per new token (--quick: a tiny GPT, T <= 32, "
                "not the model the question asks about)",
            ),
        ),
        verdict=logits_differ,
    ),
)
