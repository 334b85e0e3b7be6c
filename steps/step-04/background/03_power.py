"""`**` raises to a power: `k.shape[-1]**0.5` is the square root of d_head.

Run it as a script (`python steps/step-04/background/03_power.py`) or live, one cell at a time, in
the browser: `pixi run background step-04` (or `python -m common.background step-04`).
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
    # `k.shape[-1]**0.5`

    lab-01 divided by `math.sqrt(d_head)`; Step 4's head writes `k.shape[-1]**0.5`. (`@` and
    `transpose(-2, -1)` are in lab-01's background, `03_matmul_transpose.py`.)
    """)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    `**` raises to a power; a fractional or negative exponent works too. It binds tighter than
    a leading minus: `-3**2` is `-(3**2)`.
    """)
    return


@app.cell
def _():
    d_head = 64
    print(d_head**0.5, d_head**-0.5, 3**2)
    # (fmt: skip keeps ruff from adding the parentheses that would give the answer away)
    print(-3**2, (-3) ** 2)  # fmt: skip
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    `k.shape[-1]` is the size of the last axis, d_head; `**` also works on tensors, entry by entry.
    """)
    return


@app.cell
def _():
    k = torch.ones(2, 5, 16)  # (B, T, d_head)
    print(k.shape[-1], k.shape[-1] ** 0.5)
    print(torch.tensor([1.0, 4.0, 9.0]) ** 0.5)
    return


if __name__ == "__main__":
    app.run()
