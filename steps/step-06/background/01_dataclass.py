"""`@dataclass(frozen=True)`: a class that only holds settings, written in one line per field.

Run it as a script (`python steps/step-06/background/01_dataclass.py`) or live, one cell at a time,
in the browser: `pixi run background step-06` (or `python -m common.background step-06`).
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")

with app.setup:
    import dataclasses
    from dataclasses import asdict, dataclass

    import marimo as mo


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    # `@dataclass(frozen=True)` and `asdict`

    Step 6 keeps every training setting in one `TrainConfig`: a checkpoint records it, and a run
    resumes only with the same one.
    """)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    `@dataclass` writes `__init__`, `__repr__` and `==` from the annotated fields; a field with a
    default may be left out of the call.
    """)
    return


@app.cell
def _():
    @dataclass(frozen=True)
    class Config:
        steps: int
        lr: float = 3e-4
        B: int = 16

    cfg = Config(steps=200)
    print(cfg)
    print(cfg == Config(200, 3e-4, 16), cfg == Config(steps=100))
    return Config, cfg


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    `frozen=True` refuses assignment, so a config cannot drift in the middle of a run;
    `dataclasses.replace` makes a changed copy instead. `asdict` turns it into a plain dict,
    which is what a checkpoint stores.
    """)
    return


@app.cell
def _(Config, cfg):
    try:
        cfg.lr = 1.0
    except dataclasses.FrozenInstanceError as err:
        print("FrozenInstanceError:", err)
    print(dataclasses.replace(cfg, lr=1e-3))
    print(asdict(cfg))
    print(Config(**asdict(cfg)) == cfg)  # and back: ** passes a dict as keyword arguments
    return


if __name__ == "__main__":
    app.run()
