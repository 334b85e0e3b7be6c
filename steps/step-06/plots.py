"""Step 6 figures: one function per experiment, each writes one PNG and returns its path."""

import math
from pathlib import Path

import numpy as np
import torch

from common.loader import reference
from common.run.figures import plt, save

INDUCTION = 0.5  # a prefix-matching score above this names an induction head (run.py's target)

# Step 4's own way of drawing attention (reached by the one route), so the trained heads look
# like its untrained ones: blues on a power-law scale, the masked future in grey
step4 = reference("step-04", "plots")
GAMMA, attention_image, printable = step4.GAMMA, step4.attention_image, step4.printable


def loss_curve(result, path: Path) -> Path:
    """Training loss per step (thin) and its running mean, validation estimates (dots), ln V, 2.0.

    The 2.0 target is drawn for the default run only: --quick is not meant to reach it."""
    train = np.array(result["losses"]["train"])
    steps = np.arange(1, len(train) + 1)
    window = max(1, len(train) // 50)
    smooth = np.convolve(train, np.ones(window) / window, mode="valid")
    val_steps, val = zip(*result["losses"]["val"], strict=True)
    fig, ax = plt.subplots(figsize=(7.5, 4.2), layout="constrained")
    ax.plot(steps, train, color="0.8", lw=0.6, label="training batch loss")
    ax.plot(steps[window - 1 :], smooth, color="C0", label=f"training, mean of {window} steps")
    ax.plot(
        val_steps,
        val,
        "o-",
        color="C1",
        label=f"validation ({result['cfg'].eval_batches} fixed batches)",
    )
    ax.axhline(
        math.log(result["V"]),
        color="k",
        ls=":",
        label=f"ln V = {math.log(result['V']):.2f}: guessing",
    )
    if not result["quick"]:  # --quick trains a tiny model briefly: the target is not its to meet
        ax.axhline(2.0, color="C3", ls="--", lw=1, label="2.0: the target")
    m, cfg = result["mcfg"], result["cfg"]
    ax.set(xlabel="step", ylabel="cross-entropy (nats per character)")
    quick = f" (--quick: {cfg.steps} steps)" if result["quick"] else ""
    ax.set_title(
        f"GPT d={m.d}, h={m.h}, n_layer={m.n_layer}, T={cfg.T}, B={cfg.B}: "
        f"{result['N']:,} parameters{quick}"
    )
    ax.legend()
    return save(fig, path)


def heads_beside_family(result, path: Path) -> Path:
    """Every trained head on the 64 characters (one row per layer), then Step 4's untrained family."""
    rows, family = result["heads"]["rows"], result["family"]["rows"]
    n_layer = 1 + max(r["layer"] for r in rows)
    h = 1 + max(r["head"] for r in rows)
    cols = max(h, 4)
    below = -(-len(family) // cols)  # rows of untrained heads under the trained ones
    fig, axes = plt.subplots(
        n_layer + below, cols, figsize=(3.1 * cols, 2.9 * (n_layer + below)), layout="constrained"
    )
    for ax in axes.flat:
        ax.set_axis_off()
    for r in rows:
        ax = axes[r["layer"], r["head"]]
        ax.set_axis_on()
        image = attention_image(ax, r["A"])
        ax.set_title(
            f"trained: layer {r['layer']} head {r['head']}: {r['label']}\n"
            f"prev {r['previous']:.2f} first {r['first']:.2f} self {r['self']:.2f} H {r['entropy']:.1f}",
            fontsize=8,
        )
    for n, f in enumerate(family):
        ax = axes[n_layer + n // cols, n % cols]
        ax.set_axis_on()
        attention_image(ax, f["A"])
        ax.set_title(f"untrained (Step 4): {f['setting']}\n→ {f['pattern']}", fontsize=8)
    bar = fig.colorbar(image, ax=axes[:, -1], fraction=0.046)
    bar.set_label(f"weight A[i, j], colour ~ A^{GAMMA:g} (grey: future)")
    text = "".join(map(printable, result["heads"]["text"][:32]))
    fig.suptitle(
        f"trained heads (rows 1-{n_layer}, one per layer) and Step 4's untrained family (last "
        f"{below} rows) on the first 64 characters: {text}..."
    )
    return save(fig, path)


def head_zoom(result, path: Path, n: int = 24) -> Path:
    """The most previous-token-like trained head, and the most peaked of the others, the text as ticks."""
    rows, text = result["heads"]["rows"], result["heads"]["text"][:n]
    prev = max(rows, key=lambda r: r["previous"])
    picks = [prev, min((r for r in rows if r is not prev), key=lambda r: r["evenness"])]
    fig, axes = plt.subplots(1, 2, figsize=(11, 5.2), layout="constrained")
    for ax, r in zip(axes, picks, strict=True):
        image = attention_image(ax, r["A"][:n, :n])
        ticks = [printable(ch) for ch in text]
        ax.set_xticks(range(n), ticks, fontsize=8)
        ax.set_yticks(range(n), ticks, fontsize=8)
        ax.set(xlabel="key (character)", ylabel="query (character)")
        ax.set_title(f"layer {r['layer']} head {r['head']}: {r['label']} (first {n} characters)")
    bar = fig.colorbar(image, ax=axes, fraction=0.046)
    bar.set_label(f"weight, colour ~ A^{GAMMA:g}")
    return save(fig, path)


def induction_phase(result, path: Path) -> Path:
    """First-copy and repeat losses through training, two layers against one: the phase change."""
    fig, ax = plt.subplots(figsize=(7.5, 4.2), layout="constrained")
    for curve, name, ls in (
        (result["curve"], "2 layers", "-"),
        (result["curve_one"], "1 layer", "--"),
    ):
        steps = [c["step"] for c in curve]
        ax.plot(steps, [c["first"] for c in curve], ls, color="C0", label=f"{name}: first copy")
        ax.plot(steps, [c["repeat"] for c in curve], ls, color="C1", label=f"{name}: repeat")
    ax.axhline(result["ln_V"], color="k", ls=":", label=f"ln V = {result['ln_V']:.2f}")
    cfg = result["cfg"]
    if not result.get("quick"):  # 200 steps of --quick end before the phase change: no target
        ax.axhline(0.5, color="C2", lw=1, ls="-.", label="0.5 (target, repeat)")
    ax.set(xlabel="step", ylabel="cross-entropy on held-out sequences (nats)", ylim=(0, 4.8))
    quick = f" (--quick: {cfg.steps} steps)" if result.get("quick") else ""
    ax.set_title(
        f"random block of {cfg.L_min}-{cfg.L_max} tokens, twice, at a varying place (V = {cfg.V}){quick}"
    )
    ax.legend(ncol=2, fontsize=8)
    return save(fig, path)


def induction_heads(result, path: Path, b: int | None = None) -> Path:
    """Prefix-matching and previous-token scores of every head, and the two heads of the circuit."""
    from matplotlib.colors import Normalize, PowerNorm  # loaded to draw, not on import

    if b is None:  # a sequence whose repeat is long and ends before the last position
        T = result["A"].shape[-1]
        fits = [i for i in range(len(result["L"])) if int(result["s"][i] + 2 * result["L"][i]) < T]
        b = max(fits, key=lambda i: int(result["L"][i])) if fits else 0
    fig, axes = plt.subplots(
        1, 4, figsize=(17, 4.4), layout="constrained", width_ratios=[1, 1, 1.6, 1.6]
    )
    for ax, name, scores in (
        (axes[0], "prefix matching", result["prefix"]),
        (axes[1], "previous token", result["prev"]),
    ):
        image = ax.imshow(scores.numpy(), cmap="viridis", norm=Normalize(0, 1))
        for (layer, h), v in np.ndenumerate(scores.numpy()):
            ax.text(h, layer, f"{v:.2f}", ha="center", va="center", color="w" if v < 0.6 else "k")
        ax.set(xlabel="head", ylabel="layer", title=f"{name} score")
        ax.set_xticks(range(scores.shape[1]))
        ax.set_yticks(range(scores.shape[0]))
    fig.colorbar(
        image, ax=axes[:2], fraction=0.046, label="mean attention on the key the score names"
    )
    s, L = int(result["s"][b]), int(result["L"][b])
    layer, head = result["induction"]
    prev = result["prev_heads"][0] if result["prev_heads"] else int(result["prev"][0].argmax())
    prefix, previous = float(result["prefix"][layer, head]), float(result["prev"][0, prev])
    # a head is named for its pattern only when its score shows it (prev_heads: the layer-0 heads
    # at induction.PREV_TOKEN or more), else by its score alone
    learned_prev = bool(result["prev_heads"])
    named = (
        (layer, head, "induction", prefix > INDUCTION, f"prefix-matching score {prefix:.2f}"),
        (0, prev, "previous-token", learned_prev, f"previous-token score {previous:.2f}"),
    )
    for ax, (lay, hd, name, learned, score) in zip(axes[2:], named, strict=True):
        A = result["A"][lay, b, hd]  # (T, T)
        image = attention_image(ax, A, norm=PowerNorm(GAMMA, vmin=0, vmax=1))
        title = f"{name} head" if learned else f"no {name} head learned yet"
        ax.set_title(
            f"layer {lay} head {hd}: {title}\n{score}\nsequence {b}: L = {L}, repeat at {s + L}",
            fontsize=10,
        )
        T = A.shape[-1]
        q = torch.arange(s + L, s + 2 * L)
        if name == "induction":
            ax.plot(q - L + 1, q, "r+", ms=5, label=f"key = query - L + 1 = query - {L - 1}")
        else:
            rows = torch.arange(1, T)
            ax.plot(rows - 1, rows, "r+", ms=4, label="key = query - 1")
        repeat = f"shaded: the repeat, queries {s + L} to {s + 2 * L - 1}"
        ax.axhspan(s + L - 0.5, s + 2 * L - 0.5, color="C1", alpha=0.08, label=repeat)
        ax.set_xlim(-0.5, T - 0.5)
        ax.set_ylim(T - 0.5, -0.5)
        # under the heatmap, not on it: inside, it covered the last rows, where the stripes end
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), fontsize=7, ncols=2)
    fig.colorbar(image, ax=axes[2:], fraction=0.046, label=f"weight, colour ~ A^{GAMMA:g}")
    return save(fig, path)
