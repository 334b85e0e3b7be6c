"""Dict comprehensions, `**` merging, `.items()` and set operations on keys.

Run it as a script (`python steps/step-06/background/02_dicts.py`) or live, one cell at a time,
in the browser: `pixi run background step-06` (or `python -m common.background step-06`).
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")

with app.setup:
    import marimo as mo


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    # `{f"train.{k}": v for k, v in cfg.items()}` and `{**a, **b}`

    Step 6 records a run's whole configuration as one flat dict, and checks a checkpoint's keys
    before it trusts the file.
    """)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    `.items()` gives `(key, value)` pairs; a dict comprehension builds a new dict from them, here
    with every key renamed. `{**a, **b}` merges: a key in both takes `b`'s value.
    """)
    return


@app.cell
def _():
    train = {"steps": 200, "lr": 0.0003}
    model = {"d": 64, "n_layer": 2}
    flat = {
        **{f"train.{k}": v for k, v in train.items()},
        **{f"model.{k}": v for k, v in model.items()},
    }
    print(flat)
    print({**train, **{"lr": 0.001}})
    return (flat,)


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    `d.keys()` behaves like a set: `-` gives what one side has and the other lacks. A
    comprehension with `if` keeps only the entries that differ.
    """)
    return


@app.cell
def _(flat):
    expected = {"train.steps", "train.lr", "model.d", "model.n_layer", "step"}
    print(sorted(expected - flat.keys()))  # what the saved dict is missing
    saved = {**flat, "train.lr": 0.001}
    print({k: (saved[k], v) for k, v in flat.items() if saved[k] != v})  # (saved, now)
    return


if __name__ == "__main__":
    app.run()
