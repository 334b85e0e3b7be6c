"""Lab 01 figures: the masks of a small padded batch, and the triu mask's leak beside the fix."""

from pathlib import Path

import numpy as np
import torch

from common.run.figures import plt, save

BLOCKED, ALLOWED = "0.85", "tab:blue"  # a False cell (may not attend) and a True one
LEAK = "tab:red"  # outline of a future weight that leaked


def cell_grid(ax, rows: int, cols: int) -> None:
    """Thin white lines between the cells of an imshow of shape (rows, cols)."""
    ax.set_xticks(np.arange(-0.5, cols), minor=True)
    ax.set_yticks(np.arange(-0.5, rows), minor=True)
    ax.grid(which="minor", color="white", lw=1.5)
    ax.tick_params(which="minor", length=0)
    ax.set_xticks(range(cols))
    ax.set_yticks(range(rows))


def draw_mask(ax, mask: torch.Tensor, title: str, xlabel: str, ylabel: str) -> None:
    """One bool mask as two colours, True (may attend) blue and False grey."""
    from matplotlib.colors import ListedColormap  # loaded to draw, not on import

    ax.imshow(mask.numpy(), cmap=ListedColormap([BLOCKED, ALLOWED]), vmin=0, vmax=1)
    cell_grid(ax, *mask.shape)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)


def masks(result: dict, path: Path) -> Path:
    """The causal mask, the key-padding mask and their AND for every sequence of the batch."""
    from matplotlib.patches import Patch  # loaded to draw, not on import

    causal, padding, combined = result["causal"], result["padding"], result["combined"]
    B, T = padding.shape
    fig, axes = plt.subplots(1, 2 + B, figsize=(3.2 * (2 + B), 4.2), layout="constrained")
    draw_mask(axes[0], causal, f"causal_mask({T}): [T, T]", "key j", "query i")
    draw_mask(axes[1], padding, f"padding: [B, T] = [{B}, {T}]", "position j", "sequence b")
    for b in range(B):
        real = int(padding[b].sum())
        title = f"combined[{b}]: {real} real, {T - real} pad"
        draw_mask(axes[2 + b], combined[b], title, "key j", "query i")
    legend = [Patch(color=ALLOWED, label="True: may attend"), Patch(color=BLOCKED, label="False")]
    axes[1].legend(handles=legend, loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=1)
    fig.suptitle("combine_causal_and_padding: key j is allowed if j <= i AND key j is real")
    return save(fig, path)


def draw_weights(ax, weights: torch.Tensor, mask: torch.Tensor, title: str, outline: bool):
    """Weights (T, T) with their values written in, blocked cells grey, leaked ones outlined."""
    from matplotlib.patches import Rectangle  # loaded to draw, not on import

    T = weights.shape[-1]
    shown = np.ma.masked_array(weights.numpy(), mask=(~mask).numpy())  # blocked cells hidden
    colours = plt.get_cmap("Blues").with_extremes(bad=BLOCKED)
    image = ax.imshow(shown, cmap=colours, vmin=0, vmax=1)
    cell_grid(ax, T, T)
    for i in range(T):
        for j in range(T):
            w = weights[i, j].item()
            text = f"{w:.3f}" if mask[i, j] else "masked"
            ax.text(j, i, text, ha="center", va="center", fontsize=8, color="k" if w < 0.6 else "w")
            if outline and j > i and w != 0:  # a query looking at a later key
                box = Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, ec=LEAK, lw=3)
                ax.add_patch(box)
    ax.set(title=title, xlabel="key j", ylabel="query i")
    return image


def leak(result: dict, path: Path) -> Path:
    """The exhibit's attention weights; once your future_leak has run, its leaks outlined in red."""
    from matplotlib.patches import Rectangle  # loaded to draw, not on import

    diagnosed = "buggy_count" in result  # task 7 written: the diagnostic has spoken
    fig, ax = plt.subplots(figsize=(6, 5.2), layout="constrained")
    title = (
        f"your future_leak: {result['buggy_count']} future weights leak,\n"
        f"largest {result['buggy_largest']:.6f} (red outline)"
        if diagnosed
        else "predict: which cells put weight on a later key?\n(outlined once task 7 is written)"
    )
    image = draw_weights(ax, result["buggy_weights"], result["buggy_mask"], title, diagnosed)
    bar = fig.colorbar(image, ax=ax, fraction=0.046)
    bar.set_label("attention weight (grey: masked, exactly 0)")
    if diagnosed:
        box = Rectangle((0, 0), 1, 1, fill=False, ec=LEAK, lw=3, label="leaked: j > i, weight > 0")
        fig.legend(handles=[box], loc="outside lower center")
    fig.suptitle(f"buggy_causal_mask({result['T']}): shape [T, T], seeded q, k, v")
    return save(fig, path)
