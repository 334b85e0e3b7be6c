"""Catch up: `python -m common.catchup step-04` puts the reference in place of your starter, keeping a backup."""

import argparse
import filecmp
import shutil
import sys
from datetime import datetime
from pathlib import Path

from common import REPO_ROOT, command
from common.loader import checkpoint_names, step_dir, step_names

IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc")


def source_files(folder: Path) -> set[Path]:
    """Relative paths of the files in `folder`, caches left out."""
    return {
        p.relative_to(folder)
        for p in folder.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


def caught_up(starter: Path, solution: Path) -> bool:
    """True when the starter already holds exactly the solution's files."""
    if not starter.is_dir() or source_files(starter) != source_files(solution):
        return False
    return all(
        filecmp.cmp(starter / f, solution / f, shallow=False) for f in source_files(solution)
    )


def back_up(starter: Path, now: datetime | None = None) -> Path:
    """Copy `starter` to a fresh `backups/starter-<timestamp>` folder beside it; return that."""
    base = starter.parent / "backups" / f"starter-{now or datetime.now():%Y%m%d-%H%M%S}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    # a copy, not a move: an open editor or terminal cannot block it
    shutil.copytree(starter, path, ignore=IGNORED)
    return path


def shown(path: Path) -> str:
    """`path` relative to the repo when it is inside it."""
    return path.relative_to(REPO_ROOT).as_posix() if path.is_relative_to(REPO_ROOT) else str(path)


def catch_up(folder: Path, now: datetime | None = None) -> tuple[Path | None, str]:
    """Replace the starter of the step in `folder` by its solution; return (backup or None, message)."""
    starter, solution = folder / "starter", folder / "solution"
    rel = shown(starter)
    if caught_up(starter, solution):
        return None, f"{rel} already holds the reference solution; nothing changed."
    backup = back_up(starter, now) if starter.exists() else None
    saved = f"Your version of {rel} is saved in {shown(backup)}/\n" if backup else ""
    try:
        for extra in source_files(starter) - source_files(solution) if starter.exists() else ():
            (starter / extra).unlink()
        for name in sorted(source_files(solution)):
            (starter / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(solution / name, starter / name)
    except OSError as exc:
        raise OSError(
            f"{saved}could not finish replacing {rel}: {exc}; close editors or terminals using "
            "it and run the command again"
        ) from exc
    return (
        backup,
        f"{saved}{rel} now holds the reference solution. Next: "
        + command(
            f"pixi run check-{folder.name}", f"python -m pytest {shown(folder)} --impl starter"
        ),
    )


def main(argv: list[str] | None = None) -> int:
    """Command line: one step name; an unknown one lists the valid names."""
    prog = command("pixi run catch-up", "python -m common.catchup")
    parser = argparse.ArgumentParser(prog=prog, description=__doc__)
    parser.add_argument("step", nargs="?", help=f"one of: {', '.join(step_names())}")
    args = parser.parse_args(argv)
    valid = f"valid steps: {', '.join(step_names())}"
    if args.step is None:
        parser.error(f"name a step to catch up on; {valid}")
    if args.step in checkpoint_names():
        run = command(f"pixi run {args.step}", f"python -m common.run {args.step}")
        parser.error(
            f"{args.step} is a checkpoint, not a step: use solutions/{args.step}/ as it is "
            f"({run}); steps you can catch up on: {', '.join(step_names())}"
        )
    if args.step not in step_names():
        parser.error(f"unknown step {args.step!r}; {valid}")
    try:
        print(catch_up(step_dir(args.step))[1])
    except OSError as exc:
        parser.exit(1, f"{prog}: {exc}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
