"""The student's first check, as the top README shows it: `python -m tools.first_check --write-docs`."""

import contextlib
import io
import os
import re
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
README = REPO_ROOT / "README.md"


def first_check(step: str = "lab-01") -> str:
    """What `pixi run check-<step>` prints on the untouched starter, run in this process."""
    saved = {k: os.environ.get(k) for k in ("PIXI_PROJECT_ROOT", "COLUMNS")}
    os.environ.update(PIXI_PROJECT_ROOT=str(REPO_ROOT), COLUMNS="100")  # as inside a pixi task
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            args = [f"steps/{step}", "--impl", "starter", "-p", "no:cacheprovider", "-s"]
            pytest.main([str(REPO_ROOT / a) if a.startswith("steps/") else a for a in args])
    finally:
        for key, value in saved.items():
            os.environ.pop(key) if value is None else os.environ.__setitem__(key, value)
    # the run's time is the one thing that changes from run to run
    return re.sub(r" in [\d.]+s( \([\d:]+\))?$", " in ...s", out.getvalue().strip(), flags=re.M)


if __name__ == "__main__":
    sys.path.insert(0, str(REPO_ROOT))
    from common.docs import write_block

    if "--write-docs" in sys.argv:
        block = "```text\n$ pixi run check-lab-01\n" + first_check() + "\n```\n"
        changed = write_block(README, "first-check", block)
        print("README.md first-check block " + ("updated" if changed else "already up to date"))
    else:
        print(first_check())
