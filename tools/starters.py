"""Write every starter from its marked solution (CONTRIBUTING.md): `python -m tools.starters`."""

import argparse
import sys
from pathlib import Path

from common import command, shown
from common.catchup import back_up
from common.course import at, course_step, predictions, step_names
from common.course.todos import starter_text


def starters(step_dir: Path) -> dict[Path, str]:
    """Starter path -> generated text: every .py file of the step's solution with its regions
    replaced, and its predictions.toml (the empty template) as it is."""
    layout = at(step_dir)
    solution = layout.solution
    made = {}
    for path in sorted(solution.rglob("*.py")):
        rel = path.relative_to(solution)
        made[layout.starter / rel] = starter_text(path.read_text(encoding="utf-8"), str(rel))
    if (template := solution / predictions.FILE).is_file():
        made[layout.starter / predictions.FILE] = template.read_text(encoding="utf-8")
    return made


def stale(step_dir: Path) -> list[Path]:
    """Starter files that differ from what their solution generates (or are missing)."""
    made = starters(step_dir)
    # bytes: a student's file in another encoding is simply not the generated one (no crash)
    mine = {p: p.read_bytes().replace(b"\r\n", b"\n") for p in made if p.is_file()}
    return [p for p, new in made.items() if mine.get(p) != new.encode("utf-8")]


def write(step_dir: Path) -> list[str]:
    """Regenerate one step's starter, first copying any edited one to backups/; say what changed."""
    made, changed, said = starters(step_dir), stale(step_dir), []
    starter = at(step_dir).starter
    if changed and starter.is_dir():
        said.append(f"saved the old starter in {shown(back_up(starter))}/")
    for path in changed:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(made[path], encoding="utf-8", newline="\n")
        said.append(f"wrote {shown(path)}")
    return said


def main(argv: list[str] | None = None) -> int:
    """Write (or, with --check, compare) the starter of every step."""
    parser = argparse.ArgumentParser(prog="python -m tools.starters", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if a starter is stale")
    steps = [s.folder for s in map(course_step, step_names()) if s.solution.is_dir()]
    if parser.parse_args(argv).check:
        changed = [path for step in steps for path in stale(step)]
        make = command("pixi run make-starters", "python -m tools.starters")
        for path in changed:
            print(f"{'stale' if path.is_file() else 'missing'}: {shown(path)} (write it: {make})")
        return 1 if changed else 0
    said = [line for step in steps for line in write(step)]
    print("\n".join(said) or "every starter is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
