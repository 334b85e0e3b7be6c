"""`with torch.no_grad():` is a context manager; `@torch.no_grad()` is the same as a decorator.

Run it as a script (`python steps/step-05/background/03_no_grad.py`) or live, one cell at a time,
in the browser: `pixi run background step-05` (or `python -m common.background step-05`).
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")

with app.setup:
    import contextlib

    import marimo as mo
    import torch


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    # `with torch.no_grad():` and `@torch.no_grad()`

    Sampling and evaluating train nothing, so Step 5 runs them without recording the graph
    that `.backward()` would need.
    """)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    A `with` block runs setup code on the way in and clean-up code on the way out, even when the
    block raises. `contextlib.contextmanager` writes one from a generator: the code before
    `yield` is the way in, the code after it the way out.
    """)
    return


@app.cell
def _():
    @contextlib.contextmanager
    def announced(name):
        print("enter", name)
        try:
            yield
        finally:
            print("leave", name)

    with announced("block"):
        print("inside")
    try:
        with announced("failing block"):
            raise ValueError("boom")
    except ValueError as err:
        print("ValueError:", err)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    Inside `torch.no_grad()` results carry no history: `requires_grad` is False and there is no
    `grad_fn` to go back through. Outside, the same line records one.
    """)
    return


@app.cell
def _():
    w = torch.ones(3, requires_grad=True)
    y = (w * 2).sum()
    print(y.requires_grad, type(y.grad_fn).__name__)
    with torch.no_grad():
        z = (w * 2).sum()
    print(z.requires_grad, z.grad_fn)
    print(torch.is_grad_enabled())  # back on after the block
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    `@torch.no_grad()` above a `def` wraps the whole function in that `with` block. A decorator
    `@d` above `def f` means `f = d(f)`.
    """)
    return


@app.cell
def _():
    @torch.no_grad()
    def evaluate(w):
        return (w * 2).sum()

    def shout(f):
        return lambda *args: f(*args).upper()

    @shout
    def greet(name):
        return "hello " + name

    print(evaluate(torch.ones(3, requires_grad=True)).requires_grad)
    print(greet("head"))
    return


if __name__ == "__main__":
    app.run()
