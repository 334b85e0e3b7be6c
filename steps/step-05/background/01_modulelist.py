"""`nn.ModuleList(Head(...) for _ in range(h))`: several layers in one attribute, all registered.

Run it as a script (`python steps/step-05/background/01_modulelist.py`) or live, one cell at a
time, in the browser: `pixi run background step-05` (or `python -m common.background step-05`).
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
    # `nn.ModuleList`, `nn.Sequential(*...)` and `for _ in range(h)`

    Step 5 builds `h` heads and `n_layer` blocks in one line each. Three pieces of syntax do it:
    a generator expression, the name `_`, and `*` unpacking.
    """)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    `(f(i) for i in range(3))` is a generator expression: it makes the values one at a time,
    when asked. `_` is an ordinary name that says "the loop variable is not used".
    """)
    return


@app.cell
def _():
    squares = (i * i for i in range(4))
    print(type(squares).__name__, list(squares))
    print(list(squares))  # a generator runs once: it is now used up
    print([0 for _ in range(3)])
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    Layers kept in a plain Python list are invisible to `nn.Module`: their weights are not
    among `parameters()`, so the optimiser never trains them. `nn.ModuleList` registers each one.
    """)
    return


@app.cell
def _():
    class Plain(nn.Module):
        def __init__(self, h):
            super().__init__()
            self.heads = [nn.Linear(4, 2, bias=False) for _ in range(h)]  # a list: not registered

    class Listed(nn.Module):
        def __init__(self, h):
            super().__init__()
            self.heads = nn.ModuleList(nn.Linear(4, 2, bias=False) for _ in range(h))

    print("plain list: ", sum(p.numel() for p in Plain(3).parameters()), "parameters")
    print("ModuleList:", sum(p.numel() for p in Listed(3).parameters()), "parameters")
    print([name for name, _ in Listed(2).named_parameters()])
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    A `ModuleList` is only a container: you loop over it yourself. `nn.Sequential` also calls its
    layers in order. It takes them as separate arguments, so a generator of blocks is unpacked
    with `*`: `f(*[a, b, c])` is `f(a, b, c)`.
    """)
    return


@app.cell
def _():
    def count(*args):
        return len(args)

    layers = [nn.Linear(3, 3) for _ in range(4)]
    print(count(layers), count(*layers))  # one list, or four layers
    torch.manual_seed(0)  # the weights are random; the facts printed below are not
    stack = nn.Sequential(*(nn.Linear(3, 3) for _ in range(4)))
    x = torch.randn(2, 3)
    y = x
    for layer in stack:
        y = layer(y)
    print(len(stack), torch.equal(stack(x), y))  # Sequential(x) = each layer in turn
    return


if __name__ == "__main__":
    app.run()
