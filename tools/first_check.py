"""The student's first check, as the top README shows it: `python -m tools.first_check --write-docs`."""

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
README = REPO_ROOT / "README.md"


def first_check(step: str = "lab-01") -> str:
    """What `pixi run check-<step>` prints on the shipped starter: its recorded screen, made again."""
    from tools.screens import untouched_screen

    return untouched_screen(step)[0].rstrip("\n")


if __name__ == "__main__":
    sys.path.insert(0, str(REPO_ROOT))
    from common.docs import write_block

    if "--write-docs" in sys.argv:
        block = "```text\n$ pixi run check-lab-01\n" + first_check() + "\n```\n"
        changed = write_block(README, "first-check", block)
        print("README.md first-check block " + ("updated" if changed else "already up to date"))
    else:
        print(first_check())
