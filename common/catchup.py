"""Catch up: `python -m common.catchup step-04` puts the reference in place of your starter, keeping a backup."""

import argparse
import filecmp
import shutil
import sys
from datetime import datetime
from pathlib import Path

from common import SOLUTIONS_DIR, command, shown
from common.loader import step_dir, step_names

IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc")


def source_files(folder: Path) -> set[Path]:
    """Relative paths of the files in `folder` (none if it is missing), caches left out."""
    return {
        p.relative_to(folder)
        for p in folder.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


def caught_up(starter: Path, solution: Path) -> bool:
    """True when the starter already holds exactly the solution's files."""
    files = source_files(solution)
    same_names = source_files(starter) == files
    return same_names and all(filecmp.cmp(starter / f, solution / f, shallow=False) for f in files)


def back_up(starter: Path, now: datetime | None = None) -> Path:
    """Copy `starter` to a fresh `backups/starter-<timestamp>` folder beside it; return that."""
    base = starter.parent / "backups" / f"starter-{now or datetime.now():%Y%m%d-%H%M%S}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    # a copy, not a move: an open editor or terminal cannot block it
    return shutil.copytree(starter, path, ignore=IGNORED)


def catch_up(step: Path, now: datetime | None = None) -> tuple[Path | None, str]:
    """Replace the starter of the step folder `step` by its solution; return (backup or None, message)."""
    starter, solution = step / "starter", step / "solution"
    rel = shown(starter)
    if caught_up(starter, solution):
        return None, f"{rel} already holds the reference solution; nothing changed."
    backup = back_up(starter, now) if starter.exists() else None
    saved = f"Your version of {rel} is saved in {shown(backup)}/\n" if backup else ""
    try:
        for extra in source_files(starter) - source_files(solution):
            (starter / extra).unlink()
        shutil.copytree(solution, starter, ignore=IGNORED, dirs_exist_ok=True)
    except OSError as exc:
        retry = "close editors or terminals using it and run the command again"
        raise OSError(f"{saved}could not finish replacing {rel}: {exc}; {retry}") from exc
    check = command(f"pixi run check-{step.name}", f"python -m pytest {shown(step)} --impl starter")
    return backup, f"{saved}{rel} now holds the reference solution. Next: {check}"


def main(argv: list[str] | None = None) -> int:
    """Command line: one step name; an unknown one lists the valid names."""
    prog = command("pixi run catch-up", "python -m common.catchup")
    steps = ", ".join(step_names())
    parser = argparse.ArgumentParser(prog=prog, description=__doc__)
    parser.add_argument("step", nargs="?", help=f"one of: {steps}")
    step = parser.parse_args(argv).step
    if step in step_names(SOLUTIONS_DIR):
        run = command(f"pixi run {step}", f"python -m common.run {step}")
        parser.error(
            f"{step} is a checkpoint, not a step: use solutions/{step}/ as it is ({run}); "
            f"steps you can catch up on: {steps}"
        )
    try:
        print(catch_up(step_dir(step))[1])
    except ValueError as exc:  # no step, or an unknown one: the message lists the valid ones
        parser.error(str(exc))
    except OSError as exc:
        parser.exit(1, f"{prog}: {exc}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
