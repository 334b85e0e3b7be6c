"""`try`/`except BaseException`/`raise` and `os.replace`: a checkpoint is never half-written.

Run it as a script (`python steps/step-06/background/03_atomic_save.py`) or live, one cell at a
time, in the browser: `pixi run background step-06` (or `python -m common.background step-06`).
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")

with app.setup:
    import os
    import tempfile
    from pathlib import Path

    import marimo as mo
    import torch


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    # Saving a checkpoint that survives Ctrl-C

    Step 6 writes its checkpoint to a temporary file and renames it into place: a reader, or the
    next run, sees the old checkpoint or the new one, never half of one.
    """)
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    `torch.save` writes any dict of tensors (a `state_dict`, say); `torch.load` reads it back.
    Everything here happens in a temporary folder that is deleted at the end of the cell.
    """)
    return


@app.cell
def _():
    with tempfile.TemporaryDirectory() as _folder:
        _path = Path(_folder) / "ckpt.pt"
        torch.save({"step": 3, "w": torch.arange(4.0)}, _path)
        print(torch.load(_path))
    return


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    `except BaseException` also catches `KeyboardInterrupt` (Ctrl-C), which `except Exception`
    does not; the bare `raise` passes the same error on after cleaning up. `os.replace` renames in
    one step, over the old file.
    """)
    return


@app.cell
def _():
    def save(path, state, fail=False):
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                torch.save(state, f)
                if fail:
                    raise KeyboardInterrupt  # as if Ctrl-C arrived mid-write
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    with tempfile.TemporaryDirectory() as _folder:
        _path = Path(_folder) / "ckpt.pt"
        save(_path, {"step": 1})
        try:
            save(_path, {"step": 2}, fail=True)
        except KeyboardInterrupt:
            print("interrupted while saving step 2")
        print(torch.load(_path), sorted(p.name for p in Path(_folder).iterdir()))
    print(issubclass(KeyboardInterrupt, Exception), issubclass(KeyboardInterrupt, BaseException))
    return


if __name__ == "__main__":
    app.run()
