"""`torch.cat` joins tensors along an axis they have; `torch.stack` makes a new axis.

Run it as a script (`python steps/step-05/background/02_cat_stack.py`) or live, one cell at a
time, in the browser: `pixi run background step-05` (or `python -m common.background step-05`).
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
    # `torch.cat`, `torch.stack`, and slices from the end

    Step 5 glues the heads' outputs side by side (`torch.cat([head(x) for head in self.heads],
    dim=-1)`), stacks windows of text into a batch (`torch.stack`), and crops the context to its
    last `T_max` ids (`idx[:, -T_max:]`).
    """)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    `[f(x) for x in xs]` is a list comprehension: a list built by a loop in one expression.
    `torch.cat` joins along an existing axis, which grows; every other axis must match.
    """)
    return


@app.cell
def _():
    outs = [torch.full((1, 2, 3), float(i)) for i in range(4)]  # 4 heads' outputs, (B, T, d_head)
    print([tuple(o.shape) for o in outs])
    joined = torch.cat(outs, dim=-1)  # (B, T, 4 * d_head)
    print(tuple(joined.shape))
    print(joined[0, 0])  # position 0: head 0's 3 numbers, then head 1's, ...
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    `torch.stack` puts equal-shaped tensors along a *new* axis: B windows of T ids become a
    `(B, T)` batch.
    """)
    return


@app.cell
def _():
    data = torch.arange(10)  # a corpus of 10 ids
    starts = [0, 4, 6]
    x = torch.stack([data[s : s + 3] for s in starts])  # (B, T) = (3, 3)
    print(x)
    print(tuple(torch.cat([data[s : s + 3] for s in starts]).shape))  # cat: one long row
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    A negative index counts from the end: `idx[:, -1]` is the last position, `idx[:, -4:]` the
    last four (all of them when there are fewer). Appending one id per row is a `cat` on axis 1.
    """)
    return


@app.cell
def _():
    idx = torch.tensor([[1, 2, 3, 4, 5, 6]])  # (B, T) = (1, 6)
    print(idx[:, -1], idx[:, -4:], idx[:, -10:])
    nxt = torch.tensor([[7]])  # (B, 1): one new id per row
    print(torch.cat((idx, nxt), dim=1))  # (B, T + 1)
    return


if __name__ == "__main__":
    app.run()
