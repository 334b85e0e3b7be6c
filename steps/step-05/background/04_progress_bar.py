"""A progress bar (`tqdm`) and keyword-only arguments: how Step 5's training loop is written.

Run it as a script (`python steps/step-05/background/04_progress_bar.py`) or live, one cell at a
time, in the browser: `pixi run background step-05` (or `python -m common.background step-05`).
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")

with app.setup:
    import io

    import marimo as mo
    from tqdm import tqdm


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    # `for step in tqdm(range(steps))` and `def train(model, *, steps, lr)`

    Step 5's `train` loops with a progress bar and takes its settings by name only.
    """)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    `tqdm(iterable)` gives back the same items and draws a bar as they pass: count, rate and time
    left. It writes to stderr (here into a buffer, so the script's output stays the same on every
    run); in a terminal you see it redrawn in place.
    """)
    return


@app.cell
def _():
    bar_text = io.StringIO()
    total = 0
    for step in tqdm(range(5), desc="training", unit="step", file=bar_text, ascii=True):
        total += step
    print(total)
    print(bar_text.getvalue().strip().split("\r")[-1].split("|")[0])  # the bar's last frame
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    A `*` among the parameters makes every one after it keyword-only: a call must name them, so
    `steps` and `B` cannot be swapped by mistake.
    """)
    return


@app.cell
def _():
    def train(model, *, steps, lr):
        return f"{model}: {steps} steps at lr {lr}"

    print(train("gpt", steps=500, lr=3e-4))
    try:
        train("gpt", 500, 3e-4)
    except TypeError as err:
        print("TypeError:", err)
    return


if __name__ == "__main__":
    app.run()
