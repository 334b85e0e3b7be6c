"""`view`, `transpose`, `reshape` and `split`: how several heads are cut out of one tensor.

Run it as a script (`python steps/lab-01/background/06_view_reshape.py`) or live, one cell at a
time, in the browser: `pixi run background lab-01` (or `python -m common.background lab-01`).
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
    # `view`, `transpose`, `reshape`, `split`

    Task 6 cuts `[B, T, d]` into heads `[B, h, T, d_head]` and glues them back. None of these
    calls computes anything: they change how the same numbers are indexed.
    """)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    `view` gives the same memory a new shape. Splitting the last axis of width 6 into
    `(3, 2)` makes 3 heads of width 2: head `i` owns columns `2i` and `2i + 1`.
    """)
    return


@app.cell
def _():
    x = torch.arange(12.0).reshape(1, 2, 6)  # (B, T, d) = (1, 2, 6)
    heads = x.view(1, 2, 3, 2)  # (B, T, h, d_head)
    print(heads[0, 0])  # position 0: one row per head
    print(heads.data_ptr() == x.data_ptr())  # the same memory, not a copy
    return heads, x


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    `transpose(1, 2)` puts the head axis before the positions. It only swaps strides, so the
    result is no longer *contiguous* (its rows are not stored one after the other), and `view`
    refuses it. `reshape` copies when it has to, so it always works.
    """)
    return


@app.cell
def _(heads, x):
    per_head = heads.transpose(1, 2)  # (B, h, T, d_head)
    print(tuple(per_head.shape), per_head.is_contiguous())
    out = per_head.contiguous()  # (B, h, T, d_head) stored in this order, as attention's A @ v is
    merged = out.transpose(1, 2)  # (B, T, h, d_head): merge_heads' first move
    print(out.is_contiguous(), merged.is_contiguous())
    try:
        merged.view(1, 2, 6)
    except RuntimeError:
        print("view fails on a transposed tensor: use reshape, or .contiguous() first")
    print(
        torch.equal(merged.reshape(1, 2, 6), x), torch.equal(merged.contiguous().view(1, 2, 6), x)
    )
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    `split(size, dim)` cuts an axis into pieces of `size`: one `[B, T, 3d]` projection becomes
    q, k and v. `unsqueeze(1)` adds a head axis of size 1, so one mask broadcasts over every head.
    """)
    return


@app.cell
def _():
    qkv = torch.arange(6.0).reshape(1, 1, 6)  # (B, T, 3 * d) with d = 2
    q, k, v = qkv.split(2, dim=-1)  # each (B, T, d)
    print(q, k, v)
    mask = torch.ones(2, 3, 3, dtype=torch.bool)  # (B, T, T)
    print(tuple(mask.unsqueeze(1).shape))  # (B, 1, T, T)
    return


if __name__ == "__main__":
    app.run()
