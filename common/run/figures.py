"""Figure helpers: the headless Agg backend and the git-ignored out/ folder."""

import functools
from pathlib import Path
from typing import TYPE_CHECKING

from common import OUT_DIR

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@functools.cache
def pyplot():
    """matplotlib.pyplot on the Agg backend, imported when a figure is first drawn, not before."""
    # pyplot costs about a fifth of `import torch`: a check or a run that draws nothing skips it
    import matplotlib

    matplotlib.use("Agg")  # headless and identical on every OS; must precede pyplot
    import matplotlib.pyplot as plt

    return plt


class _PyplotOnUse:
    """`plt` for `from common.run.figures import plt`: pyplot is imported at its first use, not here."""

    def __getattr__(self, name: str):
        return getattr(pyplot(), name)


# a run's plots module imports this when the check imports run.py, which draws nothing
plt = _PyplotOnUse()


def out_dir(step: str, root: Path | None = None) -> Path:
    """The folder a step writes its figures to (created if missing)."""
    folder = (root or OUT_DIR) / step
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def save(fig: "Figure", path: Path) -> Path:
    """Write `fig` as a PNG, close it, and return the path."""
    if fig.get_layout_engine() is None:  # without one, savefig would clip labels and legends
        raise ValueError("create the figure with layout='constrained'; got no layout engine")
    # Constrained layout fits axes, labels, legends, colorbars as the figure is drawn. savefig
    # draws it twice (once to lay it out, once to print); Agg's print_png draws it once, laying it
    # out in that draw: the same PNG, byte for byte, in about four fifths of the time.
    fig.set_dpi(110)
    fig.canvas.print_png(path)
    pyplot().close(fig)
    return path
