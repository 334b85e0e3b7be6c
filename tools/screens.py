"""The check's screens, recorded in tests/screens/ (lab-01's also as the top README's first check):
`python -m tools.screens --write` records them again.

Each step's untouched starter, and lab-01 caught up with each of its curated bugs written into its
attention.py: what the check prints (in a child, as inside pixi; the run's time left out), and
beside it (.json) what the check's model took in, so tests replay the model without a child."""

import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

from common import REPO_ROOT, shown
from common.course import course_step, step_names
from common.course.bugs import committed
from common.course.todos import parse, split_id
from common.docs import write_block
from tools import check_in_a_child, pristine

SCREENS = REPO_ROOT / "tests" / "screens"
README = REPO_ROOT / "README.md"
BUGGY_FILE = Path("starter") / "attention.py"  # under steps/lab-01/


def bugs() -> dict:
    """name -> Bug: lab-01's one catalogue, each a replacement in attention.py, each recorded."""
    return {bug.name: bug for bug in course_step("lab-01").bugs()}


def task(bug) -> str:
    """The TODO of lab-01 whose reference code holds the bug's first line: 'task 2'."""
    solution = course_step("lab-01").solution / BUGGY_FILE.name
    first = bug.old.splitlines()[0]
    regions = parse(solution.read_text(encoding="utf-8"))[1]
    return next(split_id(r.id)[1] for r in regions if first in "\n".join(r.code))


def screen_path(name: str) -> Path:
    """Where a screen is recorded: a step's name, or lab-01 with a bug of its catalogue."""
    if name.startswith(("lab-", "step-")):
        return SCREENS / f"{name}.txt"
    return SCREENS / f"lab-01-{re.sub(r'[^a-z0-9]+', '-', name.lower()).strip('-')}.txt"


def checked(steps: Path, step: str, args=()) -> tuple[str, dict]:
    """(what the check prints on `step` of a steps folder, as inside pixi; the model's input)."""
    record = steps.parent / "record.json"
    pixi = {"PIXI_PROJECT_ROOT": str(REPO_ROOT)}  # as inside a pixi task
    cmd = [str(steps / step), "--impl", "starter", f"--check-record={record}", *args]
    done = check_in_a_child(steps, cmd, env=pixi)
    recorded = json.loads(record.read_text(encoding="utf-8"))[step]
    screen = re.sub(r" in [\d.]+s( \([\d:]+\))?$", " in ...s", done.stdout.strip(), flags=re.M)
    return screen + "\n", {"step": step, **recorded}  # the run's time, which changes, left out


def untouched_screen(step: str) -> tuple[str, dict]:
    """The check on a step's untouched starter (a pristine copy of every step)."""
    with tempfile.TemporaryDirectory() as tmp:
        return checked(pristine(step_names(), Path(tmp)), step)


def bug_screen(bug) -> tuple[str, dict, list[str]]:
    """(the check's screen on lab-01 with this bug, the model's input, the buggy file's lines):
    lab-01 caught up (the reference as its starter), then the bug committed in its attention.py."""
    with tempfile.TemporaryDirectory() as tmp:
        steps = pristine(["lab-01"], Path(tmp))
        starter = steps / "lab-01" / "starter"
        shutil.rmtree(starter)
        shutil.copytree(steps / "lab-01" / "solution", starter)
        path = steps / "lab-01" / BUGGY_FILE
        text = committed(path.read_text(encoding="utf-8"), bug, path.name)
        path.write_text(text, encoding="utf-8")
        screen, record = checked(steps, "lab-01", ["-m", "not slow"])
    return screen, record, text.splitlines()


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
    # here: common.check is the conftest's plugin, which pytest must import first to rewrite it
    from common.check.screen import RunFacts, step_lines, symptom_tests
    from common.check.status import replay, step_status

    step = record["step"]
    results, facts = replay(record)
    status = step_status(step, results, course_step(step).regions(), facts, symptom_tests(step))
    return "\n".join(step_lines(status, RunFacts())) + "\n"


def dumps(record: dict) -> str:
    """A recording as JSON, one test result (or list item) a line: a diff names what changed."""

    def value(v) -> str:
        if isinstance(v, list) and v:
            return "[\n" + ",\n".join(json.dumps(x, separators=(",", ":")) for x in v) + "\n]"
        return json.dumps(v, separators=(",", ":"))

    return "{\n" + ",\n".join(f"{json.dumps(k)}: {value(v)}" for k, v in record.items()) + "\n}\n"


def main(argv: list[str]) -> int:
    made = {n: untouched_screen(n) for n in step_names()}
    made |= {name: bug_screen(bug)[:2] for name, bug in bugs().items()}
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
    changed = write_block(README, "first-check", first_check(made["lab-01"][0]))
    print(f"README.md first-check: {'updated' if changed else 'unchanged'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
