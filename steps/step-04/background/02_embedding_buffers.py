"""`nn.Embedding` looks rows up; `register_buffer` keeps a tensor that is not a parameter.

Run it as a script (`python steps/step-04/background/02_embedding_buffers.py`) or live, one cell at
a time, in the browser: `pixi run background step-04` (or `python -m common.background step-04`).
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")

with app.setup:
    import marimo as mo
    import torch
    import torch.nn as nn


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    # `nn.Embedding` and `register_buffer`

    lab-01 covered `nn.Linear` and `nn.Module` (its background, `05_classes.py`). Step 4 adds a
    table of learned vectors, `nn.Embedding`, and the head's `tril` buffer.
    """)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    `nn.Embedding(num_embeddings, embedding_dim)` is a table with one learned row per id. Calling
    it with integer ids looks rows up; it multiplies nothing. Ids run from 0 to
    `num_embeddings - 1`.
    """)
    return


@app.cell
def _():
    torch.manual_seed(0)  # the table is random; the facts printed below are not
    tok = nn.Embedding(10, 4)  # a vocabulary of 10 ids, each a vector of 4 numbers
    idx = torch.tensor([[3, 3, 7]])  # (B, T) = (1, 3): token ids, not vectors
    print("table", tuple(tok.weight.shape), "lookup", tuple(tok(idx).shape))
    print(torch.equal(tok(idx)[0, 0], tok.weight[3]), torch.equal(tok(idx)[0, 0], tok(idx)[0, 1]))
    try:
        tok(torch.tensor([10]))
    except IndexError as err:
        print("IndexError:", err)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    A buffer (`register_buffer`) moves and saves with the module but is never trained: it is
    not among the parameters and needs no gradient.
    """)
    return


@app.cell
def _():
    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.key = nn.Linear(4, 2, bias=False)
            self.register_buffer("tril", torch.tril(torch.ones(3, 3)))

    m = Tiny()
    print([name for name, _ in m.named_parameters()], [name for name, _ in m.named_buffers()])
    print(m.key.weight.requires_grad, m.tril.requires_grad)
    print(sorted(m.state_dict()))  # both are saved with the module
    return


if __name__ == "__main__":
    app.run()
