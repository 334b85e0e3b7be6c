"""Issue 42: lab-02 caught up, then one bug a student made, and the check's first screen: the TODO and
line it names, its symptom row (its own or none), expected against got in words, no torch error."""

import itertools
import re

import pytest

from common.course import course_step
from common.course.bugs import Bug, committed
from grader.engine import reference_files, starter_files
from grader.tests.test_loop import worker  # noqa: F401 (the fixture: a grading worker per step)

CURATED = {bug.name: bug for bug in course_step("lab-02").bugs()}
# the findings (and the student walk's): (bug, its TODO's task, its row is shown)
CASES = [
    ("RoPE turned the wrong way", "task 1.2", True),
    ("sin and cos swapped in each pair", "task 1.1", True),
    ("angles in float32", "task 1.1", True),
    ("RoPE returns float64", "task 1.2", True),
    ("p kept, not dropped", "task 2", True),
    ("dropout in place", "task 2", True),
    ("append along the last axis", "task 3a", True),
    ("the mask cut to the new positions", "task 3b", True),
    ("no residual around the cached attention", "task 3c", True),
    (
        Bug(
            "P read after the append",
            "",
            "",
            module="kvcache",
            old="    T = K.shape[2]\n",
            new="    T = cache.length\n",
        ),
        "task 3b",
        False,
    ),
]


def first_screen(grader, bug: Bug) -> tuple[str, list[str]]:
    """(the check's screen on lab-02 caught up with `bug`, the buggy file's lines): the grader's
    worker runs it in a fork of a process that imported torch once."""
    files = starter_files("lab-02") | reference_files("lab-02")  # caught up: the reference
    rel = f"{bug.module or 'layers'}.py"
    files[rel] = committed(files[rel], bug, rel)
    run = grader("lab-02").run(bug.name, files, ["steps/lab-02/tests"], ["-m", "not slow"])
    return run.screen, files[rel].splitlines()


def function_of(lines: list[str], number: int) -> str:
    """The `def` line above line `number` (1-based) of a file."""
    return next(
        (line.strip() for line in reversed(lines[:number]) if line.lstrip().startswith("def ")), ""
    )


@pytest.mark.process
@pytest.mark.slow
@pytest.mark.xdist_group("loop-worker:lab-02")  # test_loop.py's lab-02 worker runs every case
@pytest.mark.parametrize(
    ("bug", "task", "row"), CASES, ids=[b if isinstance(b, str) else b.name for b, _, _ in CASES]
)
def test_the_first_screen_names_the_todo_the_row_and_expected_against_got(request, bug, task, row):
    bug = CURATED[bug] if isinstance(bug, str) else bug
    screen, lines = first_screen(request.getfixturevalue("worker"), bug)
    where = re.search(
        r"^Next: TODO\(lab-02 ([^:)]+)[^)]*\) at \S+\.py:(\d+)(?:-\d+)?$", screen, re.M
    )
    assert where and where[1] == task, f"expected Next: TODO(lab-02 {task}), got:\n{screen}"
    assert "grader-worker" not in screen, f"the grader's own frame is shown:\n{screen}"
    changed = next(i for i, line in enumerate(lines, 1) if bug.new.splitlines()[0].strip() in line)
    assert function_of(lines, int(where[2])) == function_of(lines, changed), (
        f"expected the Next line in the function of line {changed}, got line {where[2]}:\n{screen}"
    )
    shown = screen.split("(shortened; -v shows all):\n", 1)[-1].splitlines()
    at = next(i for i, line in enumerate(shown) if re.match(r"  \w*(Error|Exception)\b", line))
    more = itertools.takewhile(lambda line: line.startswith("    "), shown[at + 1 :])
    error = " ".join([shown[at], *(line.strip() for line in more)])  # wrapped at 100 columns
    assert "expected" in error and "got" in error and not error.startswith("  RuntimeError"), (
        f"expected the first failure to say expected and got in words, got {error!r}:\n{screen}"
    )
    rows = " ".join(line.strip() for line in shown if line.startswith(("  Symptom", "    ")))
    if row:
        mine = " ".join(bug.breaks.split()[:6])
        assert "Symptom table:" in rows and mine in rows, (
            f"expected its own row ({mine} ...), got:\n{screen}"
        )
    else:
        assert "Symptom table" not in rows, f"expected no row for {bug.name}, got:\n{screen}"
