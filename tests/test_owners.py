"""Each test names the TODO it belongs to (`todo`), or says what else it tests (`given`: code the
starter gives; `whole_run`: a whole run, counted for no TODO unless it names one; `course`: none of
the student's code): the check and the grader read the marker, nothing works it out by running the
reference (issue 52). The marker is held here to the TODO the test runs last on the reference."""

import json
import shutil

import pytest

from common.course import course, course_step, step_names
from common.course.todos import order_key, split_id
from tools import check_in_a_child, pristine

STEPS = [s.name for s in course() if not s.checkpoint]
KINDS = ("todo", "given", "whole_run", "course")


class Marks:
    """A plugin that keeps each collected test's markers of KINDS."""

    def __init__(self):
        self.items: dict[str, dict] = {}

    def pytest_collection_modifyitems(self, items):
        for i in items:
            self.items[i.nodeid] = {k: i.get_closest_marker(k) for k in KINDS}


@pytest.fixture(scope="module")
def marks() -> dict[str, dict]:
    """nodeid -> its markers of KINDS, for every test of every step (one collection)."""
    found = Marks()
    pytest.main(["steps", "--collect-only", "-q", "-p", "no:cacheprovider"], plugins=[found])
    return found.items


def unnamed(marks: dict[str, dict], step: str) -> list[str]:
    """The tests of `step` that name no TODO and no other kind, or a TODO the step does not have."""
    todos = course_step(step).regions()
    tasks = {split_id(t)[1] for t in todos} | set(todos)
    mine = {n: m for n, m in marks.items() if f"steps/{step}/" in n}
    bare = [f"{n}: names no TODO, nor given" for n, m in mine.items() if not any(m.values())]
    return bare + [
        f"{n}: todo({m['todo'].args[0]!r}) is no TODO of {step}"
        for n, m in mine.items()
        if m["todo"] and m["todo"].args[0] not in tasks
    ]


@pytest.mark.parametrize("step", STEPS)
def test_each_test_names_its_todo_or_what_else_it_tests(marks, step):
    assert any(f"steps/{step}/" in n for n in marks), f"no test of {step} collected"
    assert unnamed(marks, step) == [], "add @pytest.mark.todo('task N') (or given, whole_run)"


@pytest.mark.process
@pytest.mark.slow
def test_each_marker_is_the_todo_its_test_runs_last_on_the_reference(marks, tmp_path):
    """The check on each step caught up (the reference as its starter): each test marked todo
    runs that TODO, and no later one (a test whose code runs in a child, a whole run, runs none
    here, and is not asked)."""
    steps = pristine(step_names(), tmp_path)
    wrong = []
    for step in STEPS:
        todos = course_step(step).regions()
        starter = steps / step / "starter"
        shutil.rmtree(starter)
        shutil.copytree(steps / step / "solution", starter)
        record = tmp_path / f"{step}.json"
        check_in_a_child(steps, [str(steps / step), "--impl", "starter", f"--check-json={record}"])
        for nodeid, t in json.loads(record.read_text(encoding="utf-8"))[step]["tests"].items():
            marked, ran = t["marked"], t["ran"]
            if marked and ran:
                named = next(todo for todo in todos if marked in (todo, split_id(todo)[1]))
                if named != max(ran, key=order_key):
                    wrong.append(f"{nodeid}: marked {marked!r}, runs {ran}")
    assert wrong == [], "\n".join(wrong)


def test_a_test_that_names_nothing_or_another_steps_task_is_found(marks):
    """The contract bites: a test with no marker, and one marked with a task lab-01 lacks."""
    none = dict.fromkeys(KINDS)
    fake = {
        "steps/lab-01/tests/test_x.py::test_bare": none,
        "steps/lab-01/tests/test_x.py::test_y": none | {"todo": pytest.mark.todo("task 99").mark},
    }
    found = unnamed(fake, "lab-01")
    assert len(found) == 2 and "test_bare" in found[0] and "task 99" in found[1], found
