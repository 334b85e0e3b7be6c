"""Figure helpers: the headless Agg backend and the git-ignored out/ folder."""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless and identical on every OS; must precede pyplot

import matplotlib.pyplot as plt  # noqa: E402

from common import OUT_DIR  # noqa: E402


def out_dir(step: str, root: Path | None = None) -> Path:
    """The folder a step writes its figures to (created if missing)."""
    folder = (root or OUT_DIR) / step
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def figure_path(folder: Path, stem: str, quick: bool) -> Path:
    """Where a figure goes: `<stem>_quick.png` for --quick, so it never overwrites the full run's."""
    return folder / f"{stem}{'_quick' if quick else ''}.png"


def save(fig: "plt.Figure", path: Path) -> Path:
    """Write `fig` as a PNG, close it, and return the path."""
    if fig.get_layout_engine() is None:  # without one, savefig would clip labels and legends
        raise ValueError("create the figure with layout='constrained'; got no layout engine")
    fig.savefig(path, dpi=110)  # constrained layout fits axes, labels, legends, colorbars
    plt.close(fig)
    return path
