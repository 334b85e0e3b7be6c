"""Reductions with `keepdim=True`, and broadcasting the result back over its row.

Run it as a script (`python steps/lab-01/background/01_keepdim.py`) or live, one cell at a time, in
the browser: `pixi run background lab-01` (or `python -m common.background lab-01`).
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")

with app.setup:
    import marimo as mo
    import torch


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    # `keepdim=True` and broadcasting back

    Task 1, `stable_softmax`, takes the largest entry of each row and subtracts it from that row.
    A reduction such as `amax` or `sum` removes the axis it reduces; `keepdim=True` keeps it with
    size 1, so the result lines up with the rows it came from.

    <details><summary>How to use this page</summary>

    Every grey box is live Python in your own environment. Change a number or a shape, run the
    cell with Ctrl-Enter (or its run button), and the cells that use its names run again. Guess
    the output before you run it.
    </details>
    """)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    Two rows of logits. Reducing the last axis leaves one number per row: shape `(2,)` without
    `keepdim`, `(2, 1)` with it, a column.
    """)
    return


@app.cell
def _():
    x = torch.tensor([[1.0, 2.0, 3.0], [1000.0, 1001.0, 999.0]])  # (2, 3): two rows of logits
    print(tuple(x.amax(dim=-1).shape), tuple(x.amax(dim=-1, keepdim=True).shape))
    m = x.amax(dim=-1, keepdim=True)  # (2, 1) each row's largest entry
    print(m)
    return m, x


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    `(2, 3) - (2, 1)`: an axis of size 1 is repeated to match, so each row loses its own maximum.
    Every entry is then at most 0, and `exp` of it at most 1; `exp(1000)` itself is `inf` in
    float32.
    """)
    return


@app.cell
def _(m, x):
    print(x - m)  # (2, 3) - (2, 1) -> (2, 3)
    print(torch.exp(x - m))
    print(torch.exp(x))  # without the shift the second row overflows
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    Without `keepdim` the shapes line up from the right: `(2, 3)` against `(2,)` puts 3 next to 2,
    an error. A square matrix is the trap: `(3, 3) - (3,)` runs, and takes the whole list of row
    maxima from every row, instead of each row's own maximum from that row.
    """)
    return


@app.cell
def _(x):
    try:
        x - x.amax(dim=-1)  # (2, 3) - (2,)
    except RuntimeError:
        print("x - x.amax(dim=-1) fails: (2, 3) - (2,) lines up 3 with 2")
    sq = torch.tensor([[0.0, 1.0, 2.0], [10.0, 11.0, 12.0], [20.0, 21.0, 22.0]])  # (3, 3)
    print(sq - sq.amax(dim=-1, keepdim=True))  # each row minus its own max: right
    print(sq - sq.amax(dim=-1))  # (3, 3) - (3,): no error, every row minus [2, 12, 22]
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    The same holds for `sum`: dividing by a kept sum makes every row add up to 1.
    """)
    return


@app.cell
def _():
    w = torch.tensor([[1.0, 1.0, 2.0], [3.0, 0.0, 1.0]])  # (2, 3) nonnegative weights
    p = w / w.sum(dim=-1, keepdim=True)  # (2, 3) / (2, 1)
    print(p)
    print(p.sum(dim=-1))
    return


if __name__ == "__main__":
    app.run()
