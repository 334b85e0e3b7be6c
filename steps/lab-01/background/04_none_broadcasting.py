"""`None` in an index adds an axis of size 1, so masks of different shapes can broadcast.

Run it as a script (`python steps/lab-01/background/04_none_broadcasting.py`) or live, one cell at
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
    # `padding[:, None, :]` and broadcasting

    Task 4 combines a `[T, T]` causal mask with a `[B, T]` padding mask as
    `causal & padding[:, None, :]`. `None` in an index inserts a new axis of size 1 there.
    """)
    return


@app.cell
def _():
    pos = torch.zeros(5, 3)  # (T, d)
    print(tuple(pos[None].shape), tuple(pos[None, :, :].shape), tuple(pos.unsqueeze(0).shape))
    i = torch.arange(4)  # (T,) positions 0, 1, 2, 3
    print(tuple(i[:, None].shape), tuple(i[None, :].shape))  # a column, and a row
    return (i,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    Broadcasting lines shapes up from the right and repeats every axis of size 1 to match the
    other tensor. A column minus a row is a table: entry `[i, j]` is `i - j`, and `>= 0` turns it
    into the causal mask.
    """)
    return


@app.cell
def _(i):
    gap = i[:, None] - i[None, :]  # (T, 1) - (1, T) -> (T, T)
    print(gap)
    print((gap >= 0).long())
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    `(T, T) & (B, 1, T)`: the causal mask is shared by every sequence, and each sequence's
    padding row is repeated for every query, so it blocks a *key column*. Put the `None` last and
    it blocks *query rows* instead: no error, wrong mask.
    """)
    return


@app.cell
def _():
    causal = torch.tril(torch.ones(3, 3, dtype=torch.bool))  # (T, T)
    padding = torch.tensor([[True, True, True], [True, True, False]])  # (B, T) True = real token
    both = causal & padding[:, None, :]  # (T, T) & (B, 1, T) -> (B, T, T)
    print(tuple(padding[:, None, :].shape), tuple(both.shape))
    print(both[1].long())  # sequence 1: no query may attend to key 2
    wrong = causal & padding[:, :, None]  # (T, T) & (B, T, 1): blocks the query row instead
    print(wrong[1].long())
    return


if __name__ == "__main__":
    app.run()
