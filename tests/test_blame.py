"""The check names an injected bug's TODO and line on its first screen (at most 40 lines): lab-01
caught up with each bug of its catalogue, drawn from the recorded results (two also in a child)."""

import re

import pytest

from common import REPO_ROOT
from common.course import course_step
from common.course.bugs import committed
from tools.screens import BUGGY_FILE, bug_screen, bugs, recording, replayed, task

CURATED = bugs()
RAISES = {"view after a transpose"}  # the bugs that raise in the student's own line

# one raises in the student's line, one not; neither screen shows a float that another CPU may
# round otherwise in its last digits (the in-process cases replay those as recorded)
IN_A_CHILD = ["view after a transpose", "no max shift"]


@pytest.mark.parametrize("name", CURATED)
def test_the_first_screen_names_the_todo_and_the_line_of_an_injected_bug(name, monkeypatch):
    monkeypatch.setenv("PIXI_PROJECT_ROOT", str(REPO_ROOT))  # recorded as inside a pixi task
    bug, holder = CURATED[name], task(CURATED[name])
    out = replayed(recording(name)[1])
    solution = course_step("lab-01").solution / BUGGY_FILE.name
    lines = committed(solution.read_text(encoding="utf-8"), bug, solution.name).splitlines()
    screen = out.strip().splitlines()
    assert len(screen) <= 40, out
    todo = re.escape(f"TODO(lab-01 {holder}")
    assert re.search(rf"^\[!\] {todo}", out, re.M), out  # marked as the one with the bug
    where = re.search(rf"^Next: {todo}[^)]*\) at \S+/attention\.py:(\d+)(?:-(\d+))?$", out, re.M)
    assert where, out
    first = bug.new.splitlines()[0].strip()  # the bug's (first) line in the caught-up starter
    code = [(i, line) for i, line in enumerate(lines, 1) if not line.strip().startswith("#")]
    bug_line = next(i for i, line in code if first in line)  # not a hint's comment
    if name in RAISES:  # the line that raised, or the lines that fed it up to that line
        assert int(where[2] or where[1]) == bug_line, out
    else:  # a wrong result raises nowhere: Next points into the function that holds the bug
        start = max(i for i, line in enumerate(lines[:bug_line], 1) if "def " in line)
        assert start < int(where[1]) <= bug_line + 8, out
        if where[2]:  # the lines that made the returned value: the bug's among them
            assert int(where[1]) <= bug_line <= int(where[2]), out
    others = re.findall(r"^\[!\] TODO\(lab-01 (task \d)", out, re.M)
    assert others == [holder], out  # no other TODO is blamed


@pytest.mark.process
@pytest.mark.slow  # the check of lab-01 in a child: about 6 s each
@pytest.mark.parametrize("name", IN_A_CHILD)
def test_the_check_in_a_child_prints_the_recorded_screen_from_the_recorded_results(name):
    screen, record, _ = bug_screen(CURATED[name])
    recorded_screen, recorded = recording(name)
    assert screen == recorded_screen, "if on purpose, run python -m tools.screens --write"
    assert without_messages(record) == without_messages(recorded)  # what the collector saw


def without_messages(record: dict) -> dict:
    """A recording with each error's text left out (numbers in it may differ in the last digit)."""
    results = [{**r, "error": len(r["error"])} for r in record["results"]]
    return {**record, "results": results}
