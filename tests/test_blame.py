"""The check names an injected bug's TODO and line on its first screen (at most 40 lines).

Each case copies lab-01 with the reference in place of the starter (a caught-up student), makes
one mistake a student makes in steps/lab-01/starter/attention.py, runs the check in a subprocess
and reads what it prints; the screen is the one recorded in tests/screens/ (tools/screens.py).
"""

import re

import pytest

from tools.screens import BUGS, bug_screen, screen_path


@pytest.mark.slow  # one check of lab-01 in a subprocess per bug: about 6 s each
@pytest.mark.parametrize("name, old, new, task, raises", BUGS, ids=[b[0] for b in BUGS])
def test_the_first_screen_names_the_todo_and_the_line_of_an_injected_bug(
    tmp_path, name, old, new, task, raises
):
    out, lines = bug_screen(old, new)
    recorded = screen_path(name).read_text(encoding="utf-8")
    assert out == recorded, "the screen changed: if on purpose, run python -m tools.screens --write"
    screen = out.strip().splitlines()
    assert len(screen) <= 40, out
    todo = re.escape(f"TODO(lab-01 {task}")
    assert re.search(rf"^\[!\] {todo}", out, re.M), out  # marked as the one with the bug
    where = re.search(rf"^Next: {todo}[^)]*\) at \S+/attention\.py:(\d+)$", out, re.M)
    assert where, out
    bug_line = next(i for i, line in enumerate(lines, 1) if new.strip() in line)
    if raises:
        assert int(where[1]) == bug_line, out
    else:  # a wrong result raises nowhere: Next points into the function that holds the bug
        start = max(i for i, line in enumerate(lines[:bug_line], 1) if "def " in line)
        assert start < int(where[1]) <= bug_line + 8, out
    others = re.findall(r"^\[!\] TODO\(lab-01 (task \d)", out, re.M)
    assert others == [task], out  # no other TODO is blamed
