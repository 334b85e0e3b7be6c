"""Classes, inheritance and `super().__init__()`: how `class SelfAttention(nn.Module)` works.

Run it as a script (`python steps/lab-01/background/05_classes.py`) or live, one cell at a time, in
the browser: `pixi run background lab-01` (or `python -m common.background lab-01`).
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")

with app.setup:
    import marimo as mo
    import torch
    from torch import nn


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    # `class SelfAttention(nn.Module)` and `nn.Linear`

    Task 5's head is a class that inherits from `nn.Module` and holds three `nn.Linear` layers.
    """)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    A subclass inherits every method of its parent and may replace (override) one;
    `super()` reaches the parent's version from inside the child.
    """)
    return


@app.cell
def _():
    class Dot:
        def __init__(self, d_head):
            self.d_head = d_head

        def score(self, q, k):
            return sum(a * b for a, b in zip(q, k, strict=True))

    class Scaled(Dot):
        def __init__(self, d_head):
            super().__init__(d_head)  # the parent sets self.d_head
            self.scale = d_head**-0.5  # then the child adds its own attribute

        def score(self, q, k):
            return super().score(q, k) * self.scale

    q, k = [1, 2, 3, 4], [1, 1, 1, 1]
    print(Dot(4).score(q, k), Scaled(4).score(q, k))
    print(Scaled(4).d_head, isinstance(Scaled(4), Dot))
    print([cls.__name__ for cls in Scaled.__mro__])  # where Python looks for a method, in order
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    `nn.Module`'s own `__init__` sets up the bookkeeping that registers parameters and
    submodules. Skip `super().__init__()` and the first layer you assign has nowhere to go.
    """)
    return


@app.cell
def _():
    class Forgetful(nn.Module):
        def __init__(self):
            self.query = nn.Linear(4, 2)

    try:
        Forgetful()
    except AttributeError as err:
        print("AttributeError:", err)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    `nn.Linear(in_features, out_features, bias=True)` holds a weight of shape
    `(out_features, in_features)` and computes `x @ weight.T + bias` on the last axis of `x`,
    whatever axes come before it. The lab's layers use `bias=False`: a matrix and nothing else.
    """)
    return


@app.cell
def _():
    torch.manual_seed(0)  # the weights are random; the facts printed below are not
    proj = nn.Linear(6, 3)
    print("weight", tuple(proj.weight.shape), "bias", tuple(proj.bias.shape))
    x = torch.randn(2, 5, 6)  # (B, T, d)
    print("output", tuple(proj(x).shape))
    print(torch.allclose(proj(x), x @ proj.weight.T + proj.bias))
    query = nn.Linear(6, 3, bias=False)
    print("parameters with bias:", sum(p.numel() for p in proj.parameters()))
    print("parameters without:  ", sum(p.numel() for p in query.parameters()))
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    Every layer assigned to `self` in `__init__` is registered, so its weights are the module's
    parameters, under the attribute's name.
    """)
    return


@app.cell
def _():
    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.query = nn.Linear(4, 2, bias=False)
            self.key = nn.Linear(4, 2, bias=False)

    print([name for name, _ in Tiny().named_parameters()])
    return


if __name__ == "__main__":
    app.run()
