"""The check's screens, recorded in tests/screens/ (lab-01's also as the top README's first check):
`python -m tools.screens --write` records them again.

Each step's untouched starter, and lab-01 caught up with each of its curated bugs (its bugs.py
BUGS) written into its attention.py: what the check prints (in a child, as inside pixi; the run's time left out), and
beside it (.json) what the check's model took in, so tests replay the model without a child.
"""

import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SCREENS = REPO_ROOT / "tests" / "screens"
README = REPO_ROOT / "README.md"

BUGGY_FILE = Path("starter") / "attention.py"  # under steps/lab-01/


def bugs() -> dict:
    """name -> Bug: lab-01's one catalogue (its bugs.py BUGS), each a replacement in
    attention.py; every one has a recorded screen."""
    from common.course import course_step

    return {bug.name: bug for bug in course_step("lab-01").bugs()}


def task(bug) -> str:
    """The TODO of lab-01 whose reference code holds the bug's first line: 'task 2'."""
    from common.course import course_step
    from common.todos import parse, split_id

    solution = course_step("lab-01").solution / BUGGY_FILE.name
    regions = parse(solution.read_text(encoding="utf-8"))[1]
    first = bug.old.splitlines()[0]
    return next(split_id(r.id)[1] for r in regions if first in "\n".join(r.code))


def slug(name: str) -> str:
    """A bug's name as a file name: 'NaN on an all -inf row' -> 'nan-on-an-all-inf-row'."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def screen_path(name: str) -> Path:
    """Where a screen is recorded: a step's name, or lab-01 with a bug of its catalogue."""
    return SCREENS / (
        f"{name}.txt" if name.startswith(("lab-", "step-")) else f"lab-01-{slug(name)}.txt"
    )


def _without_time(text: str) -> str:
    """The screen without the run's time, the one thing that changes from run to run."""
    return re.sub(r" in [\d.]+s( \([\d:]+\))?$", " in ...s", text, flags=re.M)


def caught_up_with_a_bug(dest: Path, bug) -> Path:
    """A pristine steps folder under `dest`: lab-01 caught up (the reference as its starter), then
    `bug` committed in its attention.py."""
    from common.bugs import committed
    from common.course import at
    from tools import pristine

    steps = pristine(["lab-01"], dest)
    step = steps / "lab-01"
    layout = at(step)
    shutil.rmtree(layout.starter)
    shutil.copytree(layout.solution, layout.starter)
    path = step / BUGGY_FILE
    path.write_text(committed(path.read_text(encoding="utf-8"), bug, path.name), encoding="utf-8")
    return steps


def checked(steps: Path, step: str, args=()) -> tuple[str, dict]:
    """(what the check prints on `step` of a steps folder, as inside pixi; the model's input)."""
    from tools import check_in_a_child

    record = steps.parent / "record.json"
    pixi = {"PIXI_PROJECT_ROOT": str(REPO_ROOT)}  # as inside a pixi task
    cmd = [str(steps / step), "--impl", "starter", f"--check-record={record}", *args]
    done = check_in_a_child(steps, cmd, env=pixi)
    recorded = json.loads(record.read_text(encoding="utf-8"))[step]
    return _without_time(done.stdout.strip()) + "\n", {"step": step, **recorded}


def untouched_screen(step: str) -> tuple[str, dict]:
    """The check on a step's untouched starter (a pristine copy of every step)."""
    from common.course import step_names
    from tools import pristine

    with tempfile.TemporaryDirectory() as tmp:
        return checked(pristine(step_names(), Path(tmp)), step)


def bug_screen(bug) -> tuple[str, dict, list[str]]:
    """(the check's screen on lab-01 with this bug, the model's input, the buggy file's lines)."""
    with tempfile.TemporaryDirectory() as tmp:
        steps = caught_up_with_a_bug(Path(tmp), bug)
        screen, record = checked(steps, "lab-01", ["-m", "not slow"])
        lines = (steps / "lab-01" / BUGGY_FILE).read_text(encoding="utf-8").splitlines()
    return screen, record, lines


def screens(names: list[str] | None = None) -> dict[str, tuple[str, dict]]:
    """name -> (the screen as the check prints it now, the model's input): steps by name, bugs by
    their name in lab-01's catalogue."""
    from common.course import step_names

    curated = bugs()
    names = names if names is not None else [*step_names(), *curated]
    return {n: bug_screen(curated[n])[:2] if n in curated else untouched_screen(n) for n in names}


def first_check(screen: str) -> str:
    """The top README's first-check block: lab-01's untouched screen, as `pixi run` shows it."""
    return "```text\n$ pixi run check-lab-01\n" + screen + "```\n"


def recording(name: str) -> tuple[str, dict]:
    """(the recorded screen, the model's input recorded with it)."""
    path = screen_path(name)
    screen = path.read_text(encoding="utf-8")
    return screen, json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))


def replayed(record: dict) -> str:
    """The step's lines of the screen, drawn in this process from a recording's input (pytest's own
    last line, the counts, is not the model's)."""
    from common.check.screen import RunFacts, step_lines, symptom_tests
    from common.check.status import replay, step_status
    from common.course import course_step

    step = record["step"]
    results, facts = replay(record)
    todos = course_step(step).regions()
    status = step_status(step, results, todos, facts, symptom_tests(step))
    return "\n".join(step_lines(status, RunFacts())) + "\n"


def dumps(record: dict) -> str:
    """A recording as JSON, one test result (or list item) a line: a diff names what changed."""

    def value(v) -> str:
        if isinstance(v, list) and v:
            return "[\n" + ",\n".join(json.dumps(x, separators=(",", ":")) for x in v) + "\n]"
        return json.dumps(v, separators=(",", ":"))

    return "{\n" + ",\n".join(f"{json.dumps(k)}: {value(v)}" for k, v in record.items()) + "\n}\n"


def main(argv: list[str]) -> int:
    from common import shown
    from common.docs import write_block

    made = screens()
    if "--write" not in argv:
        print("".join(f"--- {n}\n{screen}" for n, (screen, _) in made.items()), end="")
        return 0
    SCREENS.mkdir(exist_ok=True)
    for name, (screen, record) in made.items():
        path = screen_path(name)
        changed = not path.is_file() or path.read_text(encoding="utf-8") != screen
        path.write_text(screen, encoding="utf-8", newline="\n")
        path.with_suffix(".json").write_text(dumps(record), encoding="utf-8", newline="\n")
        print(f"{shown(path)}: {'updated' if changed else 'unchanged'}")
    if "lab-01" in made:
        changed = write_block(README, "first-check", first_check(made["lab-01"][0]))
        print(f"README.md first-check: {'updated' if changed else 'unchanged'}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO_ROOT))
    sys.exit(main(sys.argv[1:]))
