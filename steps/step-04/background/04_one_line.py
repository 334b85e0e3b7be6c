"""Two statements on one line: `;` separates statements, as a line break would.

Run it as a script (`python steps/step-04/background/04_one_line.py`) or live, one cell at a time,
in the browser: `pixi run background step-04` (or `python -m common.background step-04`).
Code in this repository keeps one statement per line: `ruff format` splits a line at `;`, and
`ruff check` reports it (E702). The comments `# noqa: ...  # fmt: skip` tell both to leave
these lines alone, because the semicolons are what this file is about.
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")

with app.setup:
    import marimo as mo


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    # `plt.imshow(...); plt.colorbar()`

    `;` puts two statements on one line; they run left to right.
    """)
    return


@app.cell
def _():
    a = 1; b = 2  # noqa: E702  # fmt: skip
    print(a + b)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    After `if ...:` everything on the line, past every `;`, belongs to the `if`.
    """)
    return


@app.cell
def _():
    T = 6; T_max = 8  # noqa: E702  # fmt: skip
    calls = []
    if T > T_max: calls.append("too long"); calls.append("checked")  # noqa: E701, E702  # fmt: skip
    print(calls)  # [] : neither append ran, not only the first
    if T <= T_max: calls.append("fits"); calls.append("checked")  # noqa: E701, E702  # fmt: skip
    print(calls)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    A `;` is not a comma: `B, T = 2, 5` is one statement that assigns both names at once. In
    Jupyter a `;` at the end of a cell's last line hides the value that line returns:
    `plt.colorbar();` draws the colorbar without also printing the object it returns. A script
    prints nothing unless asked, so there a trailing `;` changes nothing.
    """)
    return


@app.cell
def _():
    n_seq, n_pos = 2, 5
    print(n_seq * n_pos)
    return


if __name__ == "__main__":
    app.run()
