"""Step 4 figures: one function per experiment, each writes one PNG and returns its path."""

from pathlib import Path

import numpy as np
import torch

from common.run.figures import plt, save


def scale_check(rows, path: Path) -> Path:
    """Score std against d_k, and how the largest softmax weight of a row is distributed."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    d_ks = [r["d_k"] for r in rows]
    left.plot(d_ks, [r["raw_std"] for r in rows], "o-", label="raw q.k")
    left.plot(d_ks, [r["sqrt_d_k"] for r in rows], "k:", label="sqrt(d_k)")
    left.plot(d_ks, [r["scaled_std"] for r in rows], "s-", label="q.k / sqrt(d_k)")
    left.set(xscale="log", yscale="log", xlabel="d_k", ylabel="std of scores")
    left.set_xticks(d_ks, [str(d) for d in d_ks])
    left.set_xticks([], minor=True)
    left.legend()
    bins = [i / 40 for i in range(41)]
    for r in rows:
        right.hist(
            r["top_raw"].numpy(), bins=bins, histtype="step", lw=2, label=f"raw, d_k={r['d_k']}"
        )
    right.hist(
        rows[-1]["top_scaled"].numpy(),
        bins=bins,
        histtype="stepfilled",
        alpha=0.3,
        label=f"scaled, d_k={rows[-1]['d_k']}",
    )
    right.set(
        xlabel="largest weight in a softmax row", ylabel="rows", title="one-hot rows pile up at 1"
    )
    right.legend(loc="upper center")
    return save(fig, path)


FUTURE = "0.8"  # grey: cells above the diagonal, masked before the softmax (not small weights)
GAMMA = 0.5  # power-law colour scale for weights: a weight w gets the colour of w**GAMMA


def printable(ch: str) -> str:
    """A character as a tick label: a space and a newline become visible symbols."""
    return {" ": "␣", "\n": "↵"}.get(ch, ch)


def attention_image(ax, A, norm=None, cmap="Blues"):
    """Draw A (T, T) with the masked future in grey; return the image for a colorbar."""
    from matplotlib.colors import PowerNorm  # loaded to draw, not on import

    future = torch.ones_like(A, dtype=torch.bool).triu(diagonal=1)  # (T, T) True where j > i
    shown = np.ma.masked_array(A.numpy(), mask=future.numpy())  # (T, T) future cells hidden
    colours = plt.get_cmap(cmap).with_extremes(bad=FUTURE)
    norm = norm or PowerNorm(GAMMA, vmin=0, vmax=1)
    image = ax.imshow(shown, cmap=colours, norm=norm, interpolation="nearest")
    ax.set(xlabel="key j", ylabel="query i")
    return image


def weight_colorbar(fig, image, ax):
    """A colorbar for attention weights, labelled with the scale it uses."""
    bar = fig.colorbar(image, ax=ax, fraction=0.046)
    bar.set_label(f"weight A[i, j], colour ~ A^{GAMMA:g} (grey: future)")
    return bar


def real_text(result, path: Path) -> Path:
    """Heatmaps of untrained heads on the first 64 characters, one column per seed."""
    from matplotlib.colors import Normalize  # loaded to draw, not on import

    A = result["A"]  # (S, T, T)
    T = A.shape[-1]
    visible = torch.arange(1, T + 1, dtype=A.dtype)[:, None]  # (T, 1) row i sees i + 1 keys
    ratio = torch.log2(A * visible)  # (S, T, T) 0 = a uniform row's share, -inf above diagonal
    ratio_norm = Normalize(vmin=-2, vmax=2)
    fig, axes = plt.subplots(2, len(A), figsize=(3.2 * len(A), 6.4), layout="constrained")
    for col, (mat, rel, row) in enumerate(zip(A, ratio, result["rows"], strict=True)):
        top = attention_image(axes[0, col], mat)
        bottom = attention_image(axes[1, col], rel, norm=ratio_norm, cmap="RdBu_r")
        axes[0, col].set_title(f"seed {row['seed']}: A (evenness {row['evenness']:.2f})")
        axes[1, col].set_title(f"seed {row['seed']}: A against a uniform row")
    weight_colorbar(fig, top, axes[0, -1])
    bar = fig.colorbar(bottom, ax=axes[1, -1], fraction=0.046)
    bar.set_label("log2(A[i, j] · (i+1)) (grey: future)")
    fig.suptitle(
        "five untrained heads (default init) on the first 64 characters: "
        f"{''.join(map(printable, result['text'][:30]))}..."
    )
    return save(fig, path)


def first_column(result, path: Path) -> Path:
    """First-column weight by row, for each seed, against the 1/(i+1) of a uniform row."""
    A = result["A"]  # (S, T, T)
    T = A.shape[-1]
    i = torch.arange(T)  # (T,)
    uniform = 1 / (i + 1)  # (T,)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.5, 3.8), layout="constrained")
    for mat, row in zip(A, result["rows"], strict=True):
        label = f"seed {row['seed']}"
        left.plot(i + 1, mat[:, 0].numpy(), ".-", lw=0.8, ms=3, label=label)
        right.plot(i, (mat[:, 0] * (i + 1)).numpy(), ".-", lw=0.8, ms=3, label=label)
    left.plot(i + 1, uniform.numpy(), "k--", lw=2, label="uniform row: 1/(i+1)")
    left.set(xscale="log", yscale="log", xlabel="i + 1 (keys row i may see)")
    left.set(ylabel="first-column weight A[i, 0]", title="the first column fades as 1/(i+1)")
    right.axhline(1.0, color="k", ls="--", lw=2, label="uniform row")
    right.set(xlabel="query i", ylabel="A[i, 0] · (i+1)", yscale="log")
    right.set_title("against a uniform row's share: scattered around 1")
    left.legend(fontsize=7)
    right.legend(fontsize=7, ncol=2)
    return save(fig, path)


def family(result, path: Path, zoom: int = 20, zoom_setting: str = "W_K = W_Q") -> Path:
    """One head per setting, titled with its pattern, and a zoom with the text as tick labels."""
    rows = result["rows"]
    fig, axes = plt.subplots(2, 4, figsize=(15, 8), layout="constrained")
    for ax, row in zip(axes.flat, rows, strict=False):
        image = attention_image(ax, row["A"])
        ax.set_title(f"{row['setting']}\n→ {row['pattern']}", fontsize=10)
    zoomed = next(r for r in rows if r["setting"] == zoom_setting)
    ax = axes.flat[len(rows)]
    attention_image(ax, zoomed["A"][:zoom, :zoom])
    ticks = [printable(ch) for ch in result["text"][:zoom]]
    ax.set_xticks(range(zoom), ticks, fontsize=8)
    ax.set_yticks(range(zoom), ticks, fontsize=8)
    ax.set(xlabel="key (character)", ylabel="query (character)")
    ax.set_title(f"{zoom_setting}, first {zoom} characters\n→ {zoomed['pattern']}", fontsize=10)
    weight_colorbar(fig, image, axes[:, -1])
    fig.suptitle("untrained heads on Shakespeare (seed 0): which setting gives which pattern")
    return save(fig, path)


def smoothing(result, path: Path) -> Path:
    """What position-only attention does to a noisy signal, and the weights of the last row."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8), layout="constrained")
    t = result["t"].numpy()
    left.plot(t, result["noisy"].numpy(), ".", color="0.6", label="noisy input")
    left.plot(t, result["clean"].numpy(), "k:", label="clean signal")
    for row, curve in zip(result["rows"], result["curves"], strict=True):
        left.plot(t, curve.numpy(), label=f"s = {row['s']:g}")
    left.set(xlabel="position", title="output = A @ signal")
    left.legend(fontsize=7)
    for row, last in zip(result["rows"], result["last"], strict=True):
        right.plot(t, last.numpy(), "o-", ms=3, label=f"s = {row['s']:g}")
    right.set(xlabel="key position j", ylabel="weight", title="row of the last position")
    right.set_xlim(t[-1] - 24, t[-1] + 1)
    right.legend(fontsize=7)
    return save(fig, path)


def mask_order(result, path: Path) -> Path:
    """The right order and the wrong one, side by side, with the wrong order's row sums."""
    from matplotlib.colors import Normalize  # loaded to draw, not on import

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), layout="constrained")
    pairs = [(result["A_good"], "mask, then softmax"), (result["A_bad"], "softmax, then mask")]
    for ax, (mat, title) in zip(axes[:2], pairs, strict=True):
        image = attention_image(ax, mat, norm=Normalize(vmin=0, vmax=1))
        ax.set_title(f"{title}: A of sequence 0")
    bar = fig.colorbar(image, ax=axes[:2], fraction=0.046)
    bar.set_label("weight A[i, j] (grey: future, masked)")
    sums = result["bad_sums"].numpy()  # (B, T)
    i = np.arange(sums.shape[1])  # (T,)
    for b in range(sums.shape[0]):
        axes[2].plot(i, sums[b], "o-", alpha=0.7, label=f"sequence {b}")
    axes[2].plot(i, (i + 1) / len(i), "k:", label="(i+1)/8: equal scores")
    axes[2].axhline(1.0, color="k", lw=1, label="1: a probability row")
    axes[2].set(xlabel="query i", ylabel="sum over keys of A[i, :]")
    axes[2].set_title("softmax, then mask: row sums")
    axes[2].legend(fontsize=7)
    return save(fig, path)


def equivariance(diffs, path: Path) -> Path:
    """The four permutation checks on a log scale."""
    fig, ax = plt.subplots(figsize=(7, 3.2), layout="constrained")
    names = list(diffs)
    ax.barh(names, [max(diffs[n], 1e-12) for n in names])
    ax.set(xscale="log", xlabel="max |head(permuted input) - permuted head(input)|")
    ax.set_ylabel("what is permuted")
    # alone, the figure would read as if Step 4's causal head were equivariant: it is not
    ax.set_title(
        "Permutation checks with the causal mask OFF (every key visible);\n"
        "with the mask on, this step's head is not equivariant"
    )
    ax.invert_yaxis()
    return save(fig, path)


def online(result, path: Path) -> Path:
    """One row: the scores, the running max and sum, and the final weights both ways."""
    row = result["row"]  # (T,)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")
    j = range(len(row))
    running_max = row.cummax(dim=0).values
    running_sum = [(row[: i + 1] - running_max[i]).exp().sum().item() for i in j]
    left.plot(j, row.numpy(), "o", label="score of key j")
    left.step(j, running_max.numpy(), where="post", label="running max m")
    left.plot(j, running_sum, "s--", label="running sum of exp(score - m)")
    left.set(xlabel="keys read so far", title="what the loop keeps")
    left.legend(fontsize=8)
    right.bar(j, result["row_softmax"].numpy(), color="0.8", label="softmax")
    right.plot(j, result["row_online"].numpy(), "ko", label="online_softmax")
    right.set(xlabel="key j", ylabel="weight", title="same weights")
    right.legend()
    return save(fig, path)


def cost(result, path: Path) -> Path:
    """Median forward time against T on log-log axes (bars: quartiles), beside the FLOP count."""
    rows = result["rows"]
    T = [r["T"] for r in rows]
    secs = [r["seconds"] for r in rows]  # medians over rounds
    bars = [[r["seconds"] - r["q1"] for r in rows], [r["q3"] - r["seconds"] for r in rows]]
    fig, ax = plt.subplots(figsize=(5.5, 4), layout="constrained")
    label = f"measured, median of {result['rounds']} rounds (slope {result['exponent']:.2f})"
    ax.errorbar(T, secs, yerr=bars, fmt="o-", capsize=3, label=label)
    flops = [r["flops"] for r in rows]  # scaled to meet the measured line at the largest T
    flop_label = f"FLOP count (slope {result['flop_exponent']:.2f})"
    ax.plot(T, [secs[-1] * f / flops[-1] for f in flops], "k:", label=flop_label)
    ax.plot(T, [secs[-1] * (t / T[-1]) ** 2 for t in T], "k--", label="T^2")
    ax.set(xscale="log", yscale="log", xlabel="T", ylabel="seconds per forward")
    ax.set_xticks(T, [str(t) for t in T])
    ax.set_xticks([], minor=True)
    ax.set_title(f"d = {result['d']}, d_head = {result['d_head']}, 1 thread (machine-dependent)")
    ax.legend()
    return save(fig, path)
