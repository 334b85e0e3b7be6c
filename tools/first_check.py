"""The student's first check, as the top README shows it: `python -m tools.first_check --write-docs`."""

import re
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
README = REPO_ROOT / "README.md"


def first_check(step: str = "lab-01") -> str:
    """What `pixi run check-<step>` prints on the shipped starter: a pristine copy, in a child process.

    The student's own starter (edited, caught up) never reaches the README, and never runs here.
    """
    from common.course import step_names
    from tools import check_in_a_child, pristine

    with tempfile.TemporaryDirectory() as tmp:
        steps = pristine(step_names(), Path(tmp))  # all: a step may import an earlier one
        pixi = {"PIXI_PROJECT_ROOT": str(REPO_ROOT)}  # as inside a pixi task
        done = check_in_a_child(steps, [str(steps / step), "--impl", "starter"], env=pixi)
    # the run's time is the one thing that changes from run to run
    return re.sub(r" in [\d.]+s( \([\d:]+\))?$", " in ...s", done.stdout.strip(), flags=re.M)


if __name__ == "__main__":
    sys.path.insert(0, str(REPO_ROOT))
    from common.docs import write_block

    if "--write-docs" in sys.argv:
        block = "```text\n$ pixi run check-lab-01\n" + first_check() + "\n```\n"
        changed = write_block(README, "first-check", block)
        print("README.md first-check block " + ("updated" if changed else "already up to date"))
    else:
        print(first_check())
