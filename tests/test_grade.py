"""tools.grade: the grade is the check's own screen as scores, TODO by TODO (hostile code:
tests/test_grade_hostile.py; the autograder bundle: tests/test_autograder.py)."""

import json
from pathlib import Path

import pytest

from common.catchup import catch_up
from tools import pristine
from tools.grade import MARKS, Grade, grade, gradescope, main, text
from tools.screens import BUGS

STEP = "lab-01"
PER_TEST = 2.0  # CPU seconds per test: the reference's slowest lab-01 test needs far less


def shipped_starter(dest: Path) -> Path:
    """A lab-01 starter as shipped (made from the solution, whatever the student did to theirs)."""
    return pristine([STEP], dest) / STEP / "starter"


def caught_up_starter(dest: Path) -> Path:
    """A caught-up student's starter: common.catchup run on a copy of lab-01."""
    step = pristine([STEP], dest) / STEP
    catch_up(step)
    return step / "starter"


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    return caught_up_starter(tmp_path_factory.mktemp("caught-up"))


def with_change(starter: Path, dest: Path, old: str, new: str) -> Path:
    """A copy of `starter` with `old` replaced once by `new` in attention.py (a submission)."""
    for path in starter.rglob("*.py"):
        target = dest / path.relative_to(starter)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    attention = dest / "attention.py"
    code = attention.read_text(encoding="utf-8")
    assert code.count(old) == 1, old
    attention.write_text(code.replace(old, new), encoding="utf-8")
    return dest


def marks(g: Grade) -> dict[str, str]:
    """TODO id -> its mark on the check's screen of the same run (x, !, ?, or a space)."""
    return {todo: mark for mark, todo, _ in MARKS.findall(g.screen)}


def assert_matches_the_screen(g: Grade) -> None:
    """Every TODO the screen marks [x] earns its full weight, and no other does."""
    screen = marks(g)
    assert list(screen) == [line.todo for line in g.lines], g.screen
    for line in g.lines:
        assert (screen[line.todo] == "x") == (line.state == "done"), (line, g.screen)
        if line.counted:
            assert (line.score == line.weight) == (screen[line.todo] == "x"), (line, g.screen)


FIRST_BUG = list({b[3]: b for b in reversed(BUGS)}.values())[::-1]  # test_blame's first per TODO


@pytest.mark.slow  # one contained check of lab-01 per bug, about 4 s each
@pytest.mark.parametrize("bug", FIRST_BUG[1:], ids=[b[0] for b in FIRST_BUG[1:]])
def test_the_grade_matches_the_checks_screen_todo_by_todo(reference, tmp_path, bug):
    """The untouched starter, the reference and the first bug are graded the same way by the
    autograder's test (tests/test_autograder.py), which compares its screen too."""
    _, old, new, task, _ = bug
    g = grade(STEP, with_change(reference, tmp_path / "sub", old, new), per_test=PER_TEST)
    assert_matches_the_screen(g)
    bad = [line for line in g.lines if line.score < line.weight]
    assert [line.todo.split(":")[0] for line in bad] == [f"{STEP} {task}"], text(g)
    assert bad[0].state == "bug" and bad[0].reason, text(g)


def test_gradescope_results_and_the_class_csv_say_why_a_submission_could_not_be_graded(
    tmp_path, capsys
):
    """No run needed: a zip without the starter's files and an empty folder score 0, each with
    its one line, in results.json and in the class's CSV."""
    (tmp_path / "class" / "empty").mkdir(parents=True)
    (tmp_path / "class" / "notes.zip").write_bytes(b"not a zip")
    assert main([STEP, "--class", str(tmp_path / "class")]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].startswith("student,score,max_score,lab-01 task 1: stable_softmax,"), rows
    assert rows[1].startswith("empty,0,7,0,") and "none of the starter's files" in rows[1], rows
    assert rows[2].startswith("notes,0,7,0,") and "neither a folder nor a zip" in rows[2], rows
    out = tmp_path / "results.json"
    assert (
        main([STEP, str(tmp_path / "class" / "empty"), "--format", "gradescope", "--out", str(out)])
        == 0
    )
    results = json.loads(out.read_text(encoding="utf-8"))
    assert results["score"] == 0 and len(results["tests"]) == 7
    assert all("none of the starter's files" in t["output"] for t in results["tests"])
    assert gradescope(grade(STEP, tmp_path / "class" / "empty"))["tests"][0]["max_score"] == 1
