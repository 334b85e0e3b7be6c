"""Boolean masks, `~`, `masked_fill` and `-inf`: how attention hides a key from a query.

Run it as a script (`python steps/lab-01/background/02_masks.py`) or live, one cell at a time, in
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
    # Boolean masks and `-inf`

    Task 2 blocks keys with `scores.masked_fill(~mask, float("-inf"))`. In this lab a mask is a
    boolean tensor and `True` means *this query may attend to this key*.
    """)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    `torch.tril` of a boolean tensor keeps the diagonal and everything below it: query `i` may see
    keys `j <= i`. `~` flips every entry, so `~causal` is `True` exactly on the future.
    """)
    return


@app.cell
def _():
    causal = torch.tril(torch.ones(4, 4, dtype=torch.bool))  # (T, T) True where j <= i
    print(causal)
    print((~causal).sum().item(), "of 16 entries are in the future")
    return (causal,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    `masked_fill(where, value)` returns a copy with `value` wherever `where` is `True`. `exp(-inf)`
    is exactly 0, so a `-inf` score gets exactly zero weight, and each row shares its weight
    evenly among the keys it may see: 1, 1/2, 1/3, 1/4.
    """)
    return


@app.cell
def _(causal):
    scores = torch.zeros(4, 4)  # (T, T) equal scores: every key is liked the same
    masked = scores.masked_fill(~causal, float("-inf"))
    print(masked)
    print(torch.softmax(masked, dim=-1))
    return masked, scores


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    Why `-inf` and not 0: a score of 0 is an ordinary score, so the future still gets weight.
    """)
    return


@app.cell
def _(causal, masked, scores):
    leaky = torch.softmax(scores.masked_fill(~causal, 0.0), dim=-1)
    print("weight on the future, masked with 0:   ", leaky[~causal].sum().item())
    print(
        "weight on the future, masked with -inf:",
        torch.softmax(masked, dim=-1)[~causal].sum().item(),
    )
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    A row with no key left has nothing to share: `torch.softmax` of all `-inf` is `nan` (0 / 0).
    That is the row `stable_softmax` must turn into zeros. A comparison such as `== float("-inf")`
    finds such entries: it compares every element and gives a boolean tensor.
    """)
    return


@app.cell
def _():
    print(torch.softmax(torch.full((3,), float("-inf")), dim=-1))
    row_max = torch.tensor([2.0, float("-inf"), 5.0])  # (3,) e.g. the max of three rows
    print(row_max == float("-inf"))
    print(row_max.masked_fill(row_max == float("-inf"), 0.0))
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    A mask also works as an index: it picks the entries where it is `True`, row by row, as a flat
    tensor; assigning through it changes them in place, like `masked_fill` without the copy.
    """)
    return


@app.cell
def _(causal):
    s = torch.arange(16.0).reshape(4, 4)
    print(s[causal])  # the 10 scores the queries may see
    t = s.clone()
    t[~causal] = float("-inf")
    print(torch.equal(t, s.masked_fill(~causal, float("-inf"))))
    return


if __name__ == "__main__":
    app.run()
