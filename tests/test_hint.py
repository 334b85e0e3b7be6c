"""`pixi run hint <step>`: one more level each time, the reference lines only when asked."""

import json

import pytest

from common import hint
from common.course import course_step

TASK_1 = "lab-01 task 1: stable_softmax"


@pytest.fixture
def ask(tmp_path, capsys):
    """Run the hint command for lab-01 with its state in tmp_path; return what it printed."""

    def run(*args: str) -> str:
        assert hint.main(["lab-01", "--state", str(tmp_path / "hints.json"), *args]) == 0
        return capsys.readouterr().out

    return run


def test_four_runs_show_four_growing_levels_for_task_1(ask, monkeypatch):
    """Runs 1-3 add HINT 1, 2, 3; run 4 says the hints are used up; no run shows the code."""
    monkeypatch.setattr(hint, "first_open", lambda step, regions: TASK_1)  # the untouched starter's
    region = course_step("lab-01").regions()[TASK_1].regions[0]
    runs = [ask() for _ in range(4)]
    assert len(set(runs)) == 4
    for earlier, later in zip(runs, runs[1:], strict=False):
        assert len(later) > len(earlier)
        assert all(line in later for line in earlier.splitlines() if line.startswith("  "))
    assert [run.count(" of 3:") for run in runs] == [1, 2, 3, 3]
    assert "No hints left" in runs[3] and "--solution" in runs[3]
    code = [line.strip() for line in region.code if line.strip()]
    assert not any(line in run for run in runs for line in code)  # the reference stays hidden
    solution = ask("--solution")
    assert all(line in solution for line in code)


def test_levels_used_are_kept_and_reported(ask, tmp_path, monkeypatch):
    monkeypatch.setattr(hint, "first_open", lambda step, regions: TASK_1)
    ask(), ask(), ask("--todo", "6")
    assert json.loads((tmp_path / "hints.json").read_text(encoding="utf-8")) == {
        TASK_1: 2,
        "lab-01 task 6: MultiHeadSelfAttention": 1,
    }
    used = ask("--used")
    assert f"TODO({TASK_1}): 2 of 3 hints" in used
    assert "TODO(lab-01 task 7: future_leak): 0 of 3 hints" in used


def test_the_hint_follows_the_first_open_todo(ask, monkeypatch):
    monkeypatch.setattr(hint, "first_open", lambda step, regions: "lab-01 task 3: causal_mask")
    assert ask().startswith("TODO(lab-01 task 3: causal_mask) in steps/lab-01/starter/")
    monkeypatch.setattr(hint, "first_open", lambda step, regions: None)
    said = ask()  # what next, when a failing test may be in a written TODO: the check says
    assert "every TODO is written" in said and ("check-lab-01" in said or "--impl starter" in said)
    assert "--todo N" in said, said


def test_the_footer_repeats_the_todo_asked_about_as_a_number_that_pastes_back(ask, capsys):
    """--todo with a whole id (or 6, "task 6", 6B-style case): the next command names the TODO by
    its number, so pasting it stays on that TODO; every line fits the screen's 100 columns."""
    first = ask("--todo", "lab-01 task 6: MultiHeadSelfAttention")
    assert "--todo 6 (hint 2 next)" in first, first
    assert ask("--todo", "task 6").count(" of 3:") == 2  # the footer's command, pasted back
    runs = [first] + [ask("--todo", "6") for _ in range(3)]
    assert all(len(line) <= 100 for run in runs for line in run.splitlines()), runs
    assert hint.main(["lab-01", "--todo", "9"]) == 1
    said = capsys.readouterr().out
    assert "no such TODO in lab-01: 9 (its TODOs: 1, 2, 3, 4, 5, 6, 7)" in said, said
