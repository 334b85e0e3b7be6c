"""Write every starter from its marked solution (CONTRIBUTING.md): `python -m common.starters`."""

import argparse
import itertools
import re
import sys
from pathlib import Path

from common import STEPS_DIR, shown
from common.catchup import back_up

BEGIN = re.compile(r"^(\s*)# BEGIN SOLUTION (TODO\([^)]*\))\s*$")
END = re.compile(r"^\s*# END SOLUTION\s*$")
STARTER = re.compile(r"^\s*# STARTER: ?(.*)$")
WIDTH = 100  # ruff's line length: the raise stays on one line when it fits


def optional(todo: str) -> bool:
    """Does a TODO's id or message ('step-04 optional 1: online_softmax') mark it optional?"""
    return "optional" in todo.split(":")[0].split()


def _replacement(indent: str, todo: str, body: list[str]) -> list[str]:
    """A region's STARTER lines, else its TODO's NotImplementedError laid out as `ruff format` would."""
    if starter := [indent + m[1] for line in body if (m := STARTER.match(line))]:
        return starter
    comments = itertools.takewhile(lambda line: line.strip().startswith("#"), body)
    hint = [line.strip().removeprefix("#").strip() for line in comments]  # right after BEGIN
    message = todo + (": " + " ".join(hint) if hint else "")
    quote = "'" if '"' in message and "'" not in message else '"'  # ruff's preference
    literal = quote + message.replace("\\", "\\\\").replace(quote, "\\" + quote) + quote
    if len(f"{indent}raise NotImplementedError({literal})") <= WIDTH:
        return [f"{indent}raise NotImplementedError({literal})"]
    return [f"{indent}raise NotImplementedError(", f"{indent}    {literal}", f"{indent})"]


def starter_text(solution: str, where: str = "solution") -> str:
    """The starter for one marked solution file's text."""
    out, begin, body = [], None, []
    for number, line in enumerate(solution.splitlines(), start=1):
        if m := BEGIN.match(line):
            if begin:
                raise ValueError(f"{where}:{number}: BEGIN SOLUTION inside another region")
            begin, body = m, []
        elif END.match(line) and not begin:
            raise ValueError(f"{where}:{number}: END SOLUTION without a BEGIN SOLUTION")
        elif not begin:
            out.append(line)
        elif END.match(line):
            out += _replacement(begin[1], begin[2], body)
            begin = None
        else:
            body.append(line)
    if begin:
        raise ValueError(f"{where}: BEGIN SOLUTION {begin[2]} has no END SOLUTION")
    return "\n".join(out) + "\n"


def starters(step_dir: Path) -> dict[Path, str]:
    """Starter path -> generated text, for every .py file of the step's solution."""
    solution = step_dir / "solution"
    made = {}
    for path in sorted(solution.rglob("*.py")):
        rel = path.relative_to(solution)
        made[step_dir / "starter" / rel] = starter_text(path.read_text(encoding="utf-8"), str(rel))
    return made


def stale(step_dir: Path) -> list[Path]:
    """Starter files that differ from what their solution generates (or are missing)."""
    made = starters(step_dir)
    return [p for p, new in made.items() if not p.is_file() or p.read_text(encoding="utf-8") != new]


def write(step_dir: Path) -> list[str]:
    """Regenerate one step's starter, first copying any edited one to backups/; say what changed."""
    made, changed, said = starters(step_dir), stale(step_dir), []
    if changed and (step_dir / "starter").is_dir():
        said.append(f"saved the old starter in {shown(back_up(step_dir / 'starter'))}/")
    for path in changed:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(made[path], encoding="utf-8", newline="\n")
        said.append(f"wrote {shown(path)}")
    return said


def main(argv: list[str] | None = None) -> int:
    """Write (or, with --check, compare) the starter of every step."""
    parser = argparse.ArgumentParser(prog="python -m common.starters", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if a starter is stale")
    steps = sorted(p for p in STEPS_DIR.iterdir() if (p / "solution").is_dir())
    if parser.parse_args(argv).check:
        changed = [shown(path) for step in steps for path in stale(step)]
        for path in changed:
            print(f"stale: {path} (regenerate it: python -m common.starters)")
        return 1 if changed else 0
    said = [line for step in steps for line in write(step)]
    print("\n".join(said) or "every starter is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
