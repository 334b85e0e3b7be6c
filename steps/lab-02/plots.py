"""lab-02's figure: the time per new token against the context, with and without the KV cache."""

import math
import textwrap

from common.run import timing
from common.run.figures import pyplot, save


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
