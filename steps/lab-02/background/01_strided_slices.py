"""Strided slices `x[..., 0::2]`, `torch.stack(..., dim=-1).flatten(-2)` and complex views.

Run it as a script (`python steps/lab-02/background/01_strided_slices.py`) or live, one cell at a
time, in the browser: `pixi run background lab-02` (or `python -m common.background lab-02`).
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
    # `x[..., 0::2]`, `x[..., 1::2]` and putting pairs back

    Both encodings of this lab work on pairs of adjacent columns, `(0, 1)`, `(2, 3)`, ... A slice
    `start::step` takes every `step`-th entry from `start`; `...` stands for every axis before
    the last, so the same line works on `[T, d]` and on `[B, h, T, d_head]`.
    """)
    return


@app.cell
def _():
    x = torch.arange(12.0).reshape(2, 6)  # (T = 2, d = 6)
    evens, odds = x[..., 0::2], x[..., 1::2]  # (2, 3) each: the even and the odd columns
    print(evens)
    print(odds)
    return evens, odds, x


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    `torch.stack((evens, odds), dim=-1)` puts the two side by side on a new last axis,
    `[2, 3, 2]`; `.flatten(-2)` joins the last two axes again, so each even column is followed by
    its odd one: the columns are back where they were. `torch.cat((evens, odds), dim=-1)` instead
    puts all of `evens` before all of `odds`: the halves layout, this lab's trap.
    """)
    return


@app.cell
def _(evens, odds, x):
    back = torch.stack((evens, odds), dim=-1).flatten(-2)  # (2, 6) interleaved again
    print(torch.equal(back, x))
    print(torch.cat((evens, odds), dim=-1)[0])  # (6,) halves: 0, 2, 4, then 1, 3, 5
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    `torch.view_as_complex` reads a last axis of size 2 as `(real, imaginary)`; multiplying by
    `torch.polar(1, θ)` = $e^{i\theta}$ turns each pair by θ. The tests compute RoPE this way.
    """)
    return


@app.cell
def _():
    z = torch.view_as_complex(torch.tensor([[1.0, 0.0], [0.0, 2.0]]))  # 1 and 2i
    turned = z * torch.polar(torch.tensor(1.0), torch.tensor(torch.pi / 2))  # a quarter turn
    print(torch.view_as_real(turned).round(decimals=6) + 0.0)  # + 0.0: no "-0."
    return


if __name__ == "__main__":
    app.run()
