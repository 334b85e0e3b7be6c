"""More help for the TODO you are on, one level at a time: `python -m common.hint <step>`.

Each run shows one level more than the last, with the earlier ones above it: HINT 1 (the idea),
then HINT 2 (the calls and the trap), then HINT 3 (a sketch with blanks). A fourth run says that
the hints are used up and how to see level 4, the reference lines, which only `--solution` shows.
The levels shown are kept per step in out/hints/<step>.json (git-ignored); `--used` lists them.
"""

import argparse
import hashlib
import json
import sys
import textwrap
from pathlib import Path

from common import OUT_DIR, STEPS_DIR, check_command, command, py_files, shown, write_json
from common.course import course_step, step_names, todos

LEVELS = 3  # the HINT parts; level 4 is the reference code


def state_file(step: str) -> Path:
    """Where the levels shown for `step` are kept."""
    return OUT_DIR / "hints" / f"{step}.json"


def read_state(path: Path) -> dict[str, int]:
    """TODO id -> the highest level shown so far (empty when nothing was asked yet)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


def check_file(step: str) -> Path:
    """Where the check keeps its record of the step (beside the steps folder's out/)."""
    return STEPS_DIR.parent / "out" / "hints" / f"{step}.next.json"


def starter_print(step: str) -> str:
    """A fingerprint of the step's starter: the check's Next holds while it is unchanged."""
    digest = hashlib.sha256()
    folder = course_step(step).starter
    for path in py_files(folder):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def keep_check(step: str, record: dict) -> None:
    """Keep the check's record of the step (the TODO it named Next) with the starter it checked."""
    try:
        write_json(check_file(step), {**record, "starter": starter_print(step)})
    except OSError:
        pass  # a read-only clone: the hint then follows the first open TODO


def checks_next(step: str, path: Path | None = None) -> str | None:
    """The TODO the check last named Next, if the starter is unchanged since (else None)."""
    try:
        data = json.loads((path or check_file(step)).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data.get("next") if data.get("starter") == starter_print(step) else None


def first_open(step: str, regions: dict) -> str | None:
    """The first TODO, in course order, that the starter still raises (None when all are written)."""
    found = course_step(step).open_todos(regions)
    return next((todo for todo in regions if todo in found), None)


def pick(step: str, regions: dict, asked: str | None, named: str | None = None) -> str | None:
    """The TODO to help with: --todo's (an id or a task number), else the check's Next, else the
    first open."""
    if asked:
        number = asked.lower().removeprefix("task").strip()  # 3B, "task 3b" and 3b alike
        match = [t for t in regions if asked == t or _number(t) == number]
        return match[0] if match else None
    if named in regions:
        return named
    return first_open(step, regions)


def _number(todo: str) -> str:
    """A TODO's task number, as --todo takes it: '3b' of 'lab-02 task 3b: cached_attention'."""
    return todos.split_id(todo)[1].split()[-1].lower()


def level_text(regions: dict, todo: str, level: int) -> list[str]:
    """Level `level` (1-3: a HINT, 4: the reference lines) of every region of `todo`."""
    entry, lines = regions[todo], []
    for function, region in zip(entry.functions, entry.regions, strict=True):
        where = f"{function}: " if len(entry.regions) > 1 else ""
        if level <= LEVELS:
            text = region.parts.get(f"HINT {level}", "(no hint at this level)")
            lines += textwrap.wrap(where + text, 96, initial_indent="  ", subsequent_indent="    ")
        else:
            lines += [f"  {where.rstrip()}" if where else "", *region.code]
    return [line for line in lines if line != ""]


def main(argv: list[str] | None = None) -> int:
    """Show the next level of help; --solution, --todo, --used and --reset change what is shown."""
    parser = argparse.ArgumentParser(
        prog=command("pixi run hint", "python -m common.hint"), description=__doc__
    )
    parser.add_argument("step", help="the step you are working on, e.g. lab-01")
    parser.add_argument("--todo", help="another TODO: its task number (3, 4.2.1) or its whole id")
    parser.add_argument("--solution", action="store_true", help="level 4: the reference lines")
    parser.add_argument("--used", action="store_true", help="how many levels each TODO used")
    parser.add_argument("--reset", action="store_true", help="forget the levels shown for the step")
    parser.add_argument("--state", type=Path, help=argparse.SUPPRESS)  # tests keep it elsewhere
    args = parser.parse_args(argv)
    if args.step not in (steps := step_names()):
        parser.error(f"unknown step {args.step!r}; valid steps: {', '.join(steps)}")
    path = args.state or state_file(args.step)
    state, regions = read_state(path), course_step(args.step).regions()
    again = command(f"pixi run hint {args.step}", f"python -m common.hint {args.step}")
    if args.reset:
        path.unlink(missing_ok=True)
        print(f"{args.step}: no hint levels recorded any more")
        return 0
    if args.used:
        for todo, used in ((t, state.get(t, 0)) for t in regions):
            print(
                f"TODO({todo}): "
                + ("the reference lines" if used > LEVELS else f"{used} of {LEVELS} hints")
            )
        return 0
    named = checks_next(args.step, path.with_suffix(".next.json") if args.state else None)
    todo = pick(args.step, regions, args.todo, named)
    if todo is None:
        written = (
            f"{args.step}: every TODO is written and your last whole check named none to fix.\n"
            "Check again (it names the TODO a failing test is in):\n"
            f"  {check_command(args.step)}\n"
            f"Help with one TODO: {again} --todo N"
        )
        numbers = ", ".join(_number(t) for t in regions)
        print(
            f"no such TODO in {args.step}: {args.todo} (its TODOs: {numbers})"
            if args.todo
            else written
        )
        return 1 if args.todo else 0
    layout = course_step(args.step)
    if args.todo:  # the next request stays on the TODO this one asked about, by its number
        again += f" --todo {_number(todo)}"
    if args.solution and layout.unreleased:  # a student edition's open step
        print(
            f"{args.step}'s reference lines come when the step is closed; {again} shows its hints"
        )
        return 1
    level = LEVELS + 1 if args.solution else min(state.get(todo, 0) + 1, LEVELS + 1)
    print(f"TODO({todo}) in {shown(layout.starter / regions[todo].rel)}")
    for n in range(1, min(level, LEVELS) + 1):
        print(f"hint {n} of {LEVELS}:", *level_text(regions, todo, n), sep="\n")
    if args.solution:
        print("level 4, the reference lines:", *level_text(regions, todo, LEVELS + 1), sep="\n")
    elif level < LEVELS:
        print(f"More help: {again} (hint {level + 1} next)")
    else:
        print("That was the last hint." if level == LEVELS else "No hints left (all above).")
        if layout.unreleased:
            print(f"Level 4, the reference lines, comes when {args.step} is closed.")
        else:
            print(f"Level 4, the reference lines: {again} --solution")
    state[todo] = max(state.get(todo, 0), level if args.solution else min(level, LEVELS))
    write_json(path, state, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
