"""Predictions: one empty file per step, made like a starter, answered by the run, never graded."""

import tomllib

import pytest

from common import STEPS_DIR
from common.course import at, course, predictions
from common.course.todos import split_id
from common.loader import load_file
from common.run import runnable
from grader.tests.test_loop import END_TO_END, KEPT_RUN, reference_quick, run_files
from tools import clean_clone
from tools.starters import starters

STEPS = [s.name for s in course() if (s.solution / predictions.FILE).is_file()]
NUMBER = predictions.Answer("raw_std", "raw std", 7.95, "7.95")
CHOICE = predictions.Answer("family", "pattern", "near-uniform")
SHOWN = END_TO_END  # the step whose reference quick run grader/tests/test_loop.py's loop makes and keeps


@pytest.fixture
def mine(tmp_path, monkeypatch):
    """A steps folder holding one step's template and the student's file, to write into."""
    (tmp_path / "s" / "solution").mkdir(parents=True)
    (tmp_path / "s" / "starter").mkdir()
    template = 'raw_std = ""  # at d_k = 64\nfamily = ""  # a pattern\n'
    (tmp_path / "s" / "solution" / predictions.FILE).write_text(template, encoding="utf-8")
    monkeypatch.setattr(predictions, "course_step", lambda name: at(tmp_path / name))
    return tmp_path / "s" / "starter" / predictions.FILE


def test_each_step_ships_an_empty_template_in_its_starter_and_its_run_answers_every_slot():
    """Every slot empty; the starter's copy the generator's; the run's declared slots the template's
    keys, in its order."""
    assert STEPS == ["lab-01", "step-04", "step-05", "step-06", "lab-02"]
    for step in STEPS:
        text = predictions.path(step, "solution").read_text(encoding="utf-8")
        template = tomllib.loads(text)
        assert template and set(template.values()) == {predictions.EMPTY}, step
        assert starters(STEPS_DIR / step)[STEPS_DIR / step / "starter" / predictions.FILE] == text
        run = load_file(runnable()[step]).RUN
        assert [s.key for e in run.experiments for s in e.slots] == list(template), step


@pytest.mark.parametrize(
    "value, answer, line",
    [
        ("", NUMBER, "no prediction written; measured 7.95"),
        ("  ", NUMBER, "no prediction written; measured 7.95"),
        (8, NUMBER, "you wrote 8; measured 7.95 (off by +0.05, 1%)"),
        ("7", NUMBER, "you wrote 7; measured 7.95 (off by -0.95, 12%)"),
        ("211,072", predictions.Answer("n", "n", 211072), "you wrote 211,072; measured 211072 (off by +0, 0%)"),
        (8, predictions.Answer("s", "s", 7.9481, "7.95"), "you wrote 8; measured 7.95 (off by +0.05, 1%)"),
        (200000, predictions.Answer("p", "p", 211072, "211,072"), "you wrote 200000; measured 211,072 (off by -11,072, 5%)"),
        ("eight", NUMBER, "you wrote 'eight', which is not a number; measured 7.95"),
        ("Near uniform", CHOICE, "you wrote Near uniform; measured near-uniform (the same answer)"),
        ("scattered", CHOICE, "you wrote scattered; measured near-uniform (another answer)"),
        ("", predictions.Answer("k", "k", None, waits="TODO(x) not written"), "no prediction written; not measured yet: TODO(x) not written"),
    ],
)  # fmt: skip
def test_a_prediction_is_printed_beside_the_answer_and_how_far_off_it_was(value, answer, line):
    assert predictions.compare(value, answer) == line


def test_the_report_and_progress_read_the_students_file(mine):
    mine.write_text('raw_std = 8\nfamily = ""\n', encoding="utf-8")
    lines = predictions.report("s", [NUMBER, CHOICE])
    assert lines[1:] == [
        "  raw_std, raw std: you wrote 8; measured 7.95 (off by +0.05, 1%)",
        "  family, pattern: no prediction written; measured near-uniform",
        "  (your own record: nothing grades a prediction)",
    ]
    assert predictions.progress_note("s") == "; predictions written: 1 of 2"
    assert predictions.progress_note("no-such-step") == ""  # a step without slots says nothing


@pytest.mark.parametrize("text", [None, "raw_std = [unclosed\n", b"\xff\xfe raw_std = 8"])
def test_a_missing_or_broken_file_is_one_line_and_every_slot_counts_as_empty(mine, text):
    if isinstance(text, bytes):
        mine.write_bytes(text)
    elif text is not None:
        mine.write_text(text, encoding="utf-8")
    lines = predictions.report("s", [NUMBER, CHOICE])
    assert ("is missing" if text is None else "is not valid TOML") in lines[1], lines
    assert all("no prediction written" in line for line in lines[2:4]), lines
    assert predictions.progress_note("s") == "; predictions written: 0 of 2"


@pytest.mark.process
@pytest.mark.slow  # the reference quick run grader/tests/test_loop.py keeps: made once, then read
@KEPT_RUN
def test_a_caught_up_run_prints_each_prediction_beside_its_answer(tmp_path):
    """What a student sees after catch-up (the reference's code, the template's empty slots): each
    slot beside what the quick run measured, in the run grader/tests/test_loop.py makes and keeps."""
    repo = clean_clone(tmp_path)
    out = reference_quick(repo, SHOWN, run_files(repo), tmp_path / SHOWN)
    said = "no prediction written; measured"
    assert f"combined_allowed, cells the combined mask allows, third sequence: {said} 18\n" in out
    assert (
        f"leaks, exhibit cells with weight on a later key, as future_leak counts them: {said} 6\n"
        in out
    )


@pytest.mark.parametrize("step", STEPS)
def test_the_slots_asked_before_a_todo_are_slots_of_that_todos_step(step):
    """step.toml [predictions]: each task names a TODO of the step, each slot one of its template."""
    layout = next(s for s in course() if s.name == step)
    tasks = {split_id(todo)[1] for todo in layout.regions()}
    for task, slots in layout.predictions.items():
        assert task in tasks, (
            f"steps/{step}/step.toml [predictions]: expected a task of {tasks}, got {task!r}"
        )
        unknown = set(slots) - set(predictions.slots(step))
        assert not unknown, f"steps/{step}/step.toml [predictions] {task!r}: no such slot {unknown}"


def test_the_next_todo_names_its_empty_slots_once(monkeypatch):
    """The check's Next names the slots of its TODO still empty: one line, only when there is one."""
    from common.check.screen import _next_lines
    from common.check.status import Place, StepStatus

    status = StepStatus("lab-01", {}, {}, {}, {}, None, [], "lab-01 task 3: causal_mask", None, "")
    status.todos = {status.next: predictions_todo_status()}
    status.next_place = Place("steps/lab-01/starter/attention.py", 1, "a contract")
    assert not any(line.startswith("Predict first") for line in _next_lines(status))
    status.unpredicted = ("combined_allowed",)
    said = [line for line in _next_lines(status) if line.startswith("Predict first")]
    assert said == [
        "Predict first, in steps/lab-01/starter/predictions.toml: combined_allowed (still empty)"
    ], f"expected one line naming the empty slot, got {said}"


def predictions_todo_status():
    """A TODO still to write, as the screen's Next reads it."""
    from common.check.status import TodoStatus

    return TodoStatus("todo", False, 0, 0, 1, "")
