"""`@` is a matrix product, which `*` (elementwise) is not; `transpose(-2, -1)` counts from the end.

Run it as a script (`python steps/lab-01/background/03_matmul_transpose.py`) or live, one cell at
a time, in the browser: `pixi run background lab-01` (or `python -m common.background lab-01`).
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
    # `q @ k.transpose(-2, -1)`

    Task 2's scores are `q @ k.transpose(-2, -1)`: every query against every key.
    """)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    Two queries and two keys, one per row. `q @ k.T` multiplies rows of `q` with columns of `k.T`
    (the rows of `k`): entry `[i, j]` is `q_i . k_j`. `q * k` multiplies matching entries and keeps
    the shape: no sums, no pairs `(i, j)`; summed along a row it gives only the diagonal.
    """)
    return


@app.cell
def _():
    q = torch.tensor([[1.0, 0.0, 2.0], [0.0, 1.0, 1.0]])  # (T_q, d_head) = (2, 3)
    k = torch.tensor([[1.0, 1.0, 1.0], [2.0, 0.0, 0.0]])  # (T_k, d_head) = (2, 3)
    print(q @ k.T)  # (2, 3) @ (3, 2) -> (2, 2)
    print(q * k)  # (2, 3) * (2, 3) -> (2, 3)
    print((q * k).sum(dim=-1), torch.diagonal(q @ k.T))
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    With axes in front, `@` multiplies the last two axes and keeps the rest. `transpose(-2, -1)`
    swaps the last two axes whatever comes before them; counting from the front,
    `transpose(1, 2)` is right for `(B, T, d_head)` and wrong once a head axis arrives.
    """)
    return


@app.cell
def _():
    kb = torch.ones(4, 5, 3)  # (B, T, d_head)
    print(tuple(kb.transpose(-2, -1).shape), tuple(kb.transpose(1, 2).shape))
    kh = torch.ones(4, 2, 5, 3)  # (B, h, T, d_head)
    print(tuple(kh.transpose(-2, -1).shape), tuple(kh.transpose(1, 2).shape))
    qb = torch.ones(4, 5, 3)  # (B, T, d_head)
    print(tuple((qb @ kb.transpose(-2, -1)).shape))  # (B, T, d) @ (B, d, T) -> (B, T, T)
    return kb, qb


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    Forget the transpose and the inner sizes do not match.
    """)
    return


@app.cell
def _(kb, qb):
    try:
        _ = qb @ kb  # (5, 3) @ (5, 3)
    except RuntimeError:
        print("qb @ kb fails: (5, 3) @ (5, 3) has no inner size in common")
    return


if __name__ == "__main__":
    app.run()
