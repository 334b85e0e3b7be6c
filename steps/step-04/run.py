"""Step 4: run every experiment of the handout, print its numbers, and draw its figure."""

from pathlib import Path

from common.docs import exact, last_digit, markdown_table
from common.experiment import Block, Context, Experiment, Figure, Run, Slot
from common.loader import load_file

STEP = "step-04"
HERE = Path(__file__).resolve().parent
README = HERE / "README.md"
experiments = load_file(HERE / "experiments.py")
plots = load_file(HERE / "plots.py")

TIMING_TS = (256, 512, 1024, 2048)
COST_D = COST_D_HEAD = 64


# What the tests time with: two short lengths, one round, a short timer (they never check speed).
QUICK = dict(timing_Ts=(16, 32), repeats=1, min_run_time=0.002)


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def scale_block(rows) -> str:
    """(a) the scale check."""
    header = ["d_k", "raw std", "sqrt(d_k)", "scaled std"]
    header += ["mean row max, raw", "mean row max, scaled"]
    header += ["rows > 0.99, raw", "rows > 0.99, scaled"]
    header += ["largest weight, raw", "largest weight, scaled"]
    return markdown_table(
        header,
        [
            [
                r["d_k"],
                f"{r['raw_std']:.2f}",
                f"{r['sqrt_d_k']:.1f}",
                f"{r['scaled_std']:.2f}",
                f"{r['max_raw']:.3f}",
                f"{r['max_scaled']:.3f}",
                _pct(r["saturated_raw"]),
                _pct(r["saturated_scaled"]),
                f"{r['largest_raw']:.3f}",
                f"{r['largest_scaled']:.3f}",
            ]
            for r in rows
        ],
    )


def real_text_block(rt) -> str:
    """(b) statistics of the untrained heads' attention on text."""
    rows = [
        [r["seed"], f"{r['first_column']:.3f}", f"{r['first_vs_uniform']:.2f}"]
        + [f"{r['diagonal']:.3f}", f"{r['evenness']:.3f}"]
        for r in rt["rows"]
    ]
    rows.append(["uniform rows", f"{rt['uniform']:.3f}", "1.00", f"{rt['uniform']:.3f}", "1.000"])
    header = ["seed", "first column", "first column / 1/(i+1)", "diagonal", "evenness"]
    return markdown_table(header, rows)


def family_block(fam) -> str:
    """(b2) which setting gives which pattern: seed 0's metrics and name, and how many seeds agree."""
    rows = [
        [r["setting"], f"{r['diagonal_rows']:.2f}", f"{r['column']:.2f}", r["column_key"]]
        + [f"{r['evenness']:.2f}", r["pattern"], f"{r['same']} of {fam['seeds']}"]
        for r in fam["rows"]
    ]
    header = ["setting", "rows peaked on the diagonal", "top key column's share", "that key"]
    header += ["evenness", "pattern (seed 0)", "seeds with that pattern"]
    return markdown_table(header, rows)


def smoothing_block(sm) -> str:
    """(c) the smoother at each bandwidth."""
    rows = [["none (the noisy input)", "0.00", "1.00", f"{sm['noise']:.3f}"]]
    rows += [
        [f"{r['s']:g}", f"{r['look_back']:.2f}", f"{r['keys']:.2f}", f"{r['rmse']:.3f}"]
        for r in sm["rows"]
    ]
    header = ["s", "look-back of the last row", "effective keys", "RMS error vs clean signal"]
    return markdown_table(header, rows)


def mask_order_block(mo) -> str:
    """(d) row sums with the mask before and after the softmax, and the proofs that fail."""

    def failed(proofs):
        tests = [experiments.PROOFS[name] for name in proofs]
        return [", ".join(f"`{name}`" for name in names) or "none" for names in (proofs, tests)]

    good, bad = mo["good"], mo["bad"]
    header = ["order", "smallest row sum", "largest row sum", "4.2 proofs that fail"]
    return markdown_table(
        header + ["tests of test_head.py for the same properties"],
        [
            ["mask, then softmax (your head)", f"{good[0]:.3f}", f"{good[1]:.3f}"]
            + failed(mo["failed_good"]),
            ["softmax, then mask", f"{bad[0]:.3f}", f"{bad[1]:.3f}"] + failed(mo["failed_bad"]),
        ],
    )


def mask_rows_block(mo) -> str:
    """(d) the wrong order's row sums, position by position."""
    header = ["query i", "keys it may see", "row sum after softmax-then-mask (mean of 4)"]
    return markdown_table(header, [[i, i + 1, f"{s:.3f}"] for i, s in enumerate(mo["bad_by_row"])])


def scale_spread_block(sp) -> str:
    """Appendix: the lecture's scale-table numbers against the spread of one draw of its size."""
    rows = []
    for r in sp["rows"]:
        std, top = r["std"], r["top"]
        rows.append(
            [r["d_k"], f"{r['lecture_std']:.2f}", f"{std[0]:.2f}", f"{std[2]:.2f}"]
            + [_pct(r["at_least"]), f"{r['lecture_max']:.3f}"]
            + [f"{top[0]:.3f}", f"{top[1]:.3f}", f"{top[2]:.3f}"]
        )
    header = ["d_k", "raw std, lecture", "raw std, 5th pct", "raw std, 95th pct"]
    header += ["draws >= lecture's std", "largest scaled weight, lecture"]
    header += ["largest scaled weight, 5th pct", "median", "95th pct"]
    return markdown_table(header, rows)


def mask_spread_block(ms) -> str:
    """Appendix: the smallest row sum after softmax-then-mask over seeded heads and inputs."""
    rows = [
        [f"{r['B']} x (8, 32)"] + [f"{v:.3f}" for v in r["low"]] + [_pct(r["at_least"])]
        for r in ms["rows"]
    ]
    header = ["input", "smallest row sum, 5th pct", "median", "95th pct"]
    header += [f"seeds >= lecture's {ms['lecture']:.2f}"]
    return markdown_table(header, rows)


def equivariance_block(diffs) -> str:
    """(e) the four permutation checks."""
    rows = [[name, f"{d:.1e}", "yes" if d < 1e-5 else "no"] for name, d in diffs.items()]
    return markdown_table(["check (mask switched off)", "max abs difference", "equivariant?"], rows)


def causal_order_block(diffs) -> str:
    """4.3: what the causal head of 4.3 does with a reordered input, positions off or on."""
    rows = [
        [name, f"{d:.3f}" if d > 1e-5 else f"{d:.1e}", "yes" if d < 1e-5 else "no"]
        for name, d in diffs.items()
    ]
    return markdown_table(
        ["reordering (causal mask kept)", "max abs difference", "unchanged?"], rows
    )


def online_block(on) -> str:
    """(e) streaming softmax and attention against the ordinary ones."""
    rows = [[name, f"{d:.1e}"] for name, d in on["diffs"].items()]
    rows.append(["(naive exp / sum on scores + 1000)", f"{_pct(on['naive_nan'])} nan"])
    return markdown_table(["streamed one key at a time vs", "max abs difference"], rows)


def cost_count_block(_=None) -> str:
    """(e) counted FLOPs and memory: arithmetic only, the same on every machine."""
    rows = []
    for T in TIMING_TS:
        flops = experiments.flop_count(T, COST_D, COST_D_HEAD)
        quadratic = 4 * T * T * COST_D_HEAD  # q k^T and A v
        rows.append([T, f"{flops:.3e}", _pct(quadratic / flops), f"{T * T * 4 / 2**20:g}"])
    header = ["T", "FLOPs per forward", "of which q k^T and A v", "attention matrix (MiB, float32)"]
    slope = experiments.flop_exponent(TIMING_TS, COST_D, COST_D_HEAD)
    return markdown_table(header, rows) + (
        f"\nFLOPs ~ T^{slope:.2f}: the least-squares slope of log FLOPs against log T, "
        f"T = {TIMING_TS[0]} to {TIMING_TS[-1]}.\n"
    )


def timing_table(cost: dict) -> str:
    """Measured forward times (printed only: they depend on the machine)."""
    rows = [
        [
            r["T"],
            f"{1e3 * r['seconds']:.2f}",
            f"{1e3 * r['q1']:.2f} to {1e3 * r['q3']:.2f}",
            f"{r['flops'] / r['seconds'] / 1e9:.1f}",
        ]
        for r in cost["rows"]
    ]
    header = ["T", "ms per forward (median)", "quartiles (ms)", "GFLOP/s"]
    return markdown_table(header, rows) + (
        f"fitted exponent: time ~ T^{cost['exponent']:.2f}; "
        f"the FLOP count over the same T grows as T^{cost['flop_exponent']:.2f}\n"
    )


def measured_block(cost: dict) -> str:
    """(e) the timing table, printed only: it changes from run to run and is checked nowhere."""
    said = (
        f"measured on this machine, one thread ({cost['clock']}), median of {cost['rounds']} "
        "interleaved rounds: changes from run to run, checked nowhere\n"
    )
    return said + timing_table(cost)


def timed_cost(ctx: Context) -> dict:
    """(e) forward times over T: two short lengths and one short round under --quick."""
    timing = QUICK if ctx.quick else {"repeats": ctx.option("repeats", 3)}
    return experiments.cost(
        ctx.load("head"),
        Ts=timing.get("timing_Ts", TIMING_TS),
        d=COST_D,
        d_head=COST_D_HEAD,
        repeats=timing["repeats"],
        min_run_time=timing.get("min_run_time", experiments.MIN_RUN_TIME),
    )


def on_head(experiment):
    """An experiment of experiments.py, called on the head being run (yours or the reference)."""
    return lambda ctx: experiment(ctx.load("head"))


# How far a fresh run may sit from the handout, per cell: one unit in the last digit printed (a
# value can sit next to a rounding boundary, and another CPU or BLAS may add the same floats in
# another order). Values below NOISE are float32 rounding errors: the equivariance and online
# checks compare outputs of size ~1, where one rounding unit is 2**-23 ~ 1.2e-7, and measure 1 or
# 2 such units; their digits depend on the machine, so both sides only stay below NOISE (about 8
# units). The FLOP count is integers and their ratios: every character reproduces.
NOISE = 1e-6
CLOSE = last_digit(NOISE)
HEAD = ("step-04 4.1: Head.forward",)
ONLINE = (*HEAD, "step-04 optional 1: online_softmax", "step-04 optional 2: online_attention")


def at_64(rows):
    return next(r for r in rows if r["d_k"] == 64)  # table (a)'s row


# In the order a student meets the TODOs (4.1 first).
RUN = Run(
    STEP,
    (
        Experiment(
            "mask_order",
            HEAD,
            on_head(experiments.mask_order),
            blocks=(
                Block("mask-order", mask_order_block, "(d) mask before or after the softmax? T = 8", CLOSE),
                Block("mask-order-rows", mask_rows_block, "(d) row sums, softmax then mask", CLOSE),
            ),
            figures=(Figure("mask_order", plots.mask_order),),
        ),
        Experiment(
            "scale",
            ("step-04 4.2.4: score_stats",),
            on_head(experiments.scale_check),
            blocks=(Block("scale-check", scale_block, "(a) scale check: iid N(0, 1) q, k; 512 rows of 8 keys", CLOSE),),
            figures=(Figure("scale_check", plots.scale_check),),
            slots=(
                Slot("raw_std", "raw scores' std at d_k = 64", lambda s: at_64(s)["raw_std"], "{:.2f}".format),
                Slot("scaled_std", "scaled scores' std", lambda s: at_64(s)["scaled_std"], "{:.2f}".format),
                Slot("raw_row_max", "mean row max, raw", lambda s: at_64(s)["max_raw"], "{:.3f}".format),
                Slot("scaled_row_max", "mean row max, scaled", lambda s: at_64(s)["max_scaled"], "{:.3f}".format),
            ),
        ),
        Experiment(
            "real_text",
            HEAD,
            on_head(experiments.real_text),
            blocks=(Block("real-text", real_text_block, "(b) untrained heads on the first 64 characters", CLOSE),),
            figures=(Figure("real_text_heatmaps", plots.real_text), Figure("first_column", plots.first_column)),
            slots=(
                Slot(
                    "first_column",
                    "first column / 1/(i+1), mean of the seeds",
                    lambda rt: sum(r["first_vs_uniform"] for r in rt["rows"]) / len(rt["rows"]),
                    "{:.2f}".format,
                ),
            ),
        ),
        Experiment(
            "family",
            HEAD,
            on_head(experiments.family),
            blocks=(Block("family", family_block, "(b2) which untrained settings give which pattern, T = 64", CLOSE),),
            figures=(Figure("family", plots.family),),
            slots=(
                Slot(
                    "family",
                    "the default init's pattern",
                    lambda fam: next(r for r in fam["rows"] if r["setting"] == "default init")["pattern"],
                ),
            ),
        ),
        Experiment(
            "smoothing",
            ("step-04 4.4: smoothing_weights",),
            on_head(experiments.smoothing),
            blocks=(Block("smoothing", smoothing_block, "(c) position-only attention smoothing, T = 64", CLOSE),),
            figures=(Figure("smoothing", plots.smoothing),),
        ),
        Experiment(
            "equivariance",
            HEAD,
            on_head(experiments.equivariance),
            blocks=(Block("equivariance", equivariance_block, "(e) permutation equivariance", CLOSE),),
            figures=(Figure("equivariance", plots.equivariance),),
        ),
        Experiment(
            "causal_order",
            HEAD,
            on_head(experiments.causal_order),
            blocks=(Block("causal-order", causal_order_block, "(b3) the causal head and token order", CLOSE),),
        ),
        Experiment(
            "online",
            ONLINE,
            on_head(experiments.online_check),
            blocks=(Block("online", online_block, "(e) online softmax and attention", CLOSE),),
            figures=(Figure("online_softmax", plots.online),),
        ),
        Experiment(
            "cost_count",
            (),
            lambda ctx: None,  # arithmetic on the sizes: no head runs
            blocks=(Block("cost-count", cost_count_block, f"(e) cost, counted, d = d_head = {COST_D}", exact),),
        ),
        Experiment(
            "scale_spread",
            (),
            on_head(experiments.scale_spread),  # attention_scores is given
            blocks=(Block("lecture-scale", scale_spread_block, "appendix: 200 draws of (1, 8, d_k)", CLOSE),),
        ),
        Experiment(
            "mask_spread",
            HEAD,
            on_head(experiments.mask_low_spread),
            blocks=(Block("lecture-mask", mask_spread_block, "appendix: softmax then mask, 100 seeds", CLOSE),),
        ),
        Experiment(
            "cost",
            HEAD,
            timed_cost,
            blocks=(Block("cost-timing", measured_block, "(e) cost, measured", record=False),),
            figures=(Figure("cost", plots.cost),),
        ),
    ),
)  # fmt: skip
