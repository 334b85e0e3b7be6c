"""Import aliases: `import torch.nn as nn` gives a module a second, shorter name.

Run it as a script (`python steps/step-04/background/01_imports.py`) or live, one cell at a time,
in the browser: `pixi run background step-04` (or `python -m common.background step-04`).
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")

with app.setup:
    import marimo as mo


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    # `import torch, torch.nn as nn` and `import torch.nn.functional as F`

    lab-01 wrote `from torch import nn`; Step 4's head gives modules short names with `as`.

    <details><summary>How to use this page</summary>

    Every grey box is live Python in your own environment. Change something, run the cell with
    Ctrl-Enter (or its run button), and the cells that use its names run again. Guess the output
    before you run it.
    </details>
    """)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    An alias is another name for the very same module object, not a copy.
    """)
    return


@app.cell
def _():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    print(nn is torch.nn, F is torch.nn.functional)
    print(F.softmax is torch.nn.functional.softmax)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    `import a.b as c` binds only `c`. The handout's head writes `import torch, torch.nn as nn`
    because it needs both names. Here each import runs in an empty namespace to show what it binds.
    """)
    return


@app.cell
def _():
    for _line in ["import torch.nn as nn", "import torch", "from torch import nn"]:
        _names = {}
        exec(_line, _names)
        print(f"{_line:24} binds", sorted(n for n in _names if n != "__builtins__"))
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    `from ... import ... as ...` renames a single function.
    """)
    return


@app.cell
def _():
    from math import sqrt as root

    d_head = 64
    print("scores are divided by", root(d_head))
    return


if __name__ == "__main__":
    app.run()
