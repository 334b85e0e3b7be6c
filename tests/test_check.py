"""The student's check: one screen on an untouched starter, ticks as TODOs get written."""

import functools
import json
import math
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

import execnet
import pytest

from common import REPO_ROOT, STEPS_DIR
from common.check import _steps_under_test, misplaced_markers
from common.check.screen import k_name, next_step
from common.course import course, course_step
from common.docs import read_block
from tools import check_in_a_child, pristine, run_pytest
from tools.screens import README, first_check, screen_path, untouched_screen


def live(step: str) -> bool:
    """Is the check's first screen of `step` made in a child (lab-01's, the README's), not read?"""
    return step == "lab-01" or not screen_path(step).is_file()


@functools.cache
def shown(step: str) -> str:
    """What the check prints on the shipped starter: in a child, or the recording the model draws
    byte for byte from the recorded results (tests/test_screens.py)."""
    if not live(step):
        return screen_path(step).read_text(encoding="utf-8").removesuffix("\n")
    return untouched_screen(step)[0].removesuffix("\n")


STEPS = [s.name for s in course() if not s.checkpoint]  # from each step.toml, in course order


@pytest.mark.parametrize(
    "step",  # a child runs the check of lab-01 and of a step not recorded yet; the others replay
    [pytest.param(s, marks=[pytest.mark.process] if live(s) else []) for s in STEPS],
)
def test_first_check_fits_one_screen_and_names_what_to_write(step):
    text = shown(step)
    lines = text.splitlines()
    assert len(lines) <= 40, text
    todos = [line for line in lines if line.startswith("[ ] TODO(")]
    regions = course_step(step).regions()
    assert len(todos) == len(regions), f"one line per TODO of {step}:\n" + "\n".join(todos)
    waiting = [t for t in todos if re.search(r": (optional; )?\d+ tests? waits? for it", t)]
    assert len(waiting) >= len(todos) / 2, "most TODOs hold tests back:\n" + "\n".join(todos)
    assert re.search(
        rf"^Next: TODO\({step} [^)]+\) at steps/{step}/starter/\S+\.py:\d+$", text, re.M
    )
    assert re.search(
        rf"^One test in full: pixi run check-{step} -v -k( \\\n +| )"  # a long name: its own line
        rf"(test_\w+|\"test_\w+\[[^] ]+\]\")$",
        text,
        re.M,
    )
    assert "Traceback" not in text and re.search(r"^\d+ failed", lines[-1])
    if (recorded := screen_path(step)).is_file():  # a step just made has no recording yet
        assert text + "\n" == recorded.read_text(encoding="utf-8"), (  # lab-01's, from a child
            "the screen changed: if on purpose, run python -m tools.screens --write"
        )
    if step == "lab-01":  # the README shows it (one run serves both checks)
        assert read_block(README, "first-check") == first_check(text + "\n"), (
            "run: python -m tools.screens --write"
        )


TINY = REPO_ROOT / "tests" / "fixtures" / "tiny_step" / "steps"  # two TODOs, no torch: fast
TODO_1 = 'raise NotImplementedError("TODO(step-97 task 1: double): return x * 2")'


def tiny_copy(tmp_path, body: str | None = None) -> Path:
    """A copy of the tiny fixture's steps folder, its task 1 written as `body` (None: untouched)."""
    steps = shutil.copytree(TINY, tmp_path / "steps")
    if body is not None:
        calc = steps / "step-97" / "starter" / "calc.py"
        calc.write_text(calc.read_text(encoding="utf-8").replace(TODO_1, body), encoding="utf-8")
    return steps


def check_a_copy(tmp_path, body: str | None = None, args=(), steps: Path | None = None) -> str:
    """What the check prints (stdout, then stderr) on a tiny copy, run in a child process."""
    steps = steps or tiny_copy(tmp_path, body)
    done = check_in_a_child(steps, [str(steps / "step-97"), "--impl", "starter", *args])
    return done.stdout + done.stderr


@pytest.mark.process
def test_a_bug_is_shown_written_as_check_json_and_the_hint_answers_for_it(tmp_path):
    """One check of a TODO with a bug: its short traceback into the student's code; --check-json,
    whose keys graders read; the hint answers for the TODO the check named (issue 26)."""
    steps, path = tiny_copy(tmp_path, "return x + undefined_name"), tmp_path / "check.json"
    out = check_a_copy(tmp_path, args=["--check-json", str(path)], steps=steps)
    assert "[!] TODO(step-97 task 1: double): written; 3 of its tests fail" in out, out
    assert re.search(r"calc\.py:\d+ in double\n +return x \+ undefined_name", out)
    assert "NameError: name 'undefined_name' is not defined" in out
    assert "Next: TODO(step-97 task 1: double)" in out
    data = json.loads(path.read_text(encoding="utf-8"))["step-97"]
    failed = [t for t in data["tests"].values() if t["outcome"] == "failed"]
    mine = [t for t in failed if "step-97 task 1: double" in t["ran"] and "NameError" in t["error"]]
    assert len(mine) == 3, data  # the three the screen counts
    assert failed[0]["error"] == "NameError: name 'undefined_name' is not defined", failed
    assert failed[0]["refused"] is None and data["stopped"] == "", data
    counts = ("state", "optional", "passed", "failing", "waiting", "reason")
    assert {todo: tuple(s[k] for k in counts) for todo, s in data["todos"].items()} == {
        "step-97 task 1: double": ("bug", False, 0, 3, 0, failed[0]["error"]),
        "step-97 task 2: halve": ("todo", False, 0, 0, 1, ""),
    }
    assert [set(s) for s in data["todos"].values()] == [set(counts)] * 2
    state = tmp_path / "out" / "hints" / "step-97.json"  # beside the check's Next (steps/../out)

    def hint() -> str:
        env = os.environ | {"COURSE_STEPS_DIR": str(steps)}
        cmd = [sys.executable, "-m", "common.hint", "step-97", "--state", str(state)]
        return subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True).stdout

    assert hint().startswith("TODO(step-97 task 1: double) in ")
    check_a_copy(tmp_path, args=["-k", "test_halve"], steps=steps)  # it names task 2 alone
    assert hint().startswith("TODO(step-97 task 1: double) in ")  # a chosen test's run: kept
    calc = steps / "step-97" / "starter" / "calc.py"
    calc.write_text(calc.read_text(encoding="utf-8") + "# changed since\n", encoding="utf-8")
    assert hint().startswith("TODO(step-97 task 2: halve) in ")  # the first open TODO again


def test_the_check_shows_the_steps_in_course_order():
    """`pixi run progress` (the check of steps/) lists lab-02 after Step 6, as the course map does."""
    config = SimpleNamespace(invocation_params=SimpleNamespace(dir=REPO_ROOT), args=["steps"])
    course_order = [s.name for s in course() if not s.checkpoint]
    assert _steps_under_test(config) == course_order, f"expected {course_order}"


@pytest.mark.process
def test_progress_is_one_line_per_step_and_never_red(tmp_path):
    steps = tiny_copy(tmp_path)
    shutil.copytree(TINY.parent.parent / "broken_import" / "steps" / "step-98", steps / "step-98")
    (steps / "notes").mkdir()  # a folder of the student's own: not a step
    (steps / "notes" / "ideas.md").write_text("later\n", encoding="utf-8")
    done = check_in_a_child(steps, [str(steps), "--progress"])  # --progress implies --impl starter
    lines = [line for line in done.stdout.splitlines() if re.match(r"^step-9\d ", line)]
    assert done.returncode == pytest.ExitCode.OK, done.stdout + done.stderr
    assert re.match(
        r"step-97 +0 of 2 required TODOs done; 0 of 4 tests pass; next: TODO\(", lines[0]
    )
    # a starter that does not import hides only its own step, in one line
    assert re.match(
        r"step-98 +steps/step-98/starter/mod\.py:5 does not import: SyntaxError", lines[1]
    )
    assert len(lines) == 2 and "notes" not in done.stdout


@pytest.mark.parametrize(
    ("nodeid", "expected"),
    [
        ("tests/test_head.py::test_rows_sum_to_one", "test_rows_sum_to_one"),
        ("tests/test_x.py::test_figure[cost.png]", '"test_figure[cost.png]"'),
        ("tests/test_x.py::test_case[a b]", '"test_case and a and b"'),  # -k cannot take a space
        ("t.py::test_each[PyTorch's default init]", '"test_each and PyTorch and default and init"'),
    ],
)
def test_one_test_command_picks_exactly_that_test(nodeid, expected):
    assert k_name(nodeid) == expected


class Collected:
    """A pytest plugin: the tests a run selected, each with its markers' names."""

    def pytest_collection_finish(self, session):
        self.items = {i.nodeid: {m.name for m in i.iter_markers()} for i in session.items}
        self.ids = list(self.items)


def test_one_test_command_picks_one_curated_bug_case_of_twelve():
    """Issue 26: the -k for a case `[PyTorch's default init]` was its function's, all twelve."""
    tests = STEPS_DIR / "step-05" / "tests" / "test_checks.py"
    everything = Collected()
    run_pytest([str(tests), "--collect-only", "-qq"], plugins=[everything])
    cases = [n for n in everything.ids if "[" in n and " " in n]
    assert len(cases) >= 2
    for nodeid in cases:
        chosen = Collected()
        run_pytest(
            [str(tests), "--collect-only", "-qq", "-k", k_name(nodeid)[1:-1]], plugins=[chosen]
        )
        assert chosen.ids == [nodeid], k_name(nodeid)


class Sent:
    """A pytest plugin: every failed report, serialised as pytest-xdist sends it to its controller."""

    def __init__(self):
        self.sent = []

    def pytest_configure(self, config):
        self.config = config

    def pytest_runtest_logreport(self, report):
        if report.failed:
            data = self.config.hook.pytest_report_to_serializable(config=self.config, report=report)
            self.sent.append(execnet.loads(execnet.dumps(data)))  # DumpError on a code object


def test_a_failure_report_can_cross_processes():
    sent = Sent()
    fixture = REPO_ROOT / "tests" / "fixtures" / "failing" / "test_fails.py"
    code = run_pytest([str(fixture), "-qq", "--tb=no"], plugins=[sent])
    assert code == pytest.ExitCode.TESTS_FAILED and len(sent.sent) == 1
    # (file, first line) of each function the failure passed through, ending in the test's own
    assert sent.sent[0]["frames"][-2:] == [(str(fixture), 8), (str(fixture), 4)]


def test_the_check_refuses_to_run_spread_over_processes(capsys):
    code = run_pytest([str(STEPS_DIR / "lab-01"), "--impl", "starter", "-n", "2"])
    assert code == pytest.ExitCode.USAGE_ERROR
    assert (
        "the check's summary needs one process: drop -n (or add --full)" in capsys.readouterr().err
    )


def test_when_every_todo_is_done_the_check_names_the_next_step():
    """The course order of the step.toml files: lab-01 leads to Step 4, the last step to none."""
    assert (
        next_step("lab-01") == "step-04, A causal self-attention head: read steps/step-04/README.md"
    )
    steps = [s.name for s in course() if not s.checkpoint]  # whatever step is last today
    assert [next_step(s).split(",")[0] for s in steps[:-1]] == steps[1:]
    assert next_step(steps[-1]) is None
    assert next_step("notes") is None  # a folder that is no step has no place in the course


@pytest.mark.process
def test_progress_prints_no_scorecard_above_its_line(tmp_path):
    """Issue 33: Step 4's written proofs printed their 20-line scorecard above --progress's line."""
    steps = pristine(["lab-01", "step-04"], tmp_path)  # Step 4 reaches lab-01's broken heads
    step = steps / "step-04"
    shutil.rmtree(step / "starter")
    shutil.copytree(step / "solution", step / "starter")  # caught up: the proofs are written
    done = check_in_a_child(steps, [str(step), "--progress", "-k", "proof"])
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith(" ")]  # a line's continuations
    assert lines and lines[0].startswith("step-04 "), (
        f"expected --progress's line for step-04 first, got:\n{done.stdout}{done.stderr}"
    )
    assert len(lines) == 2, f"expected that line and pytest's counts alone, got:\n{done.stdout}"


@pytest.mark.parametrize("step", STEPS)
def test_a_starters_run_leaves_out_exactly_the_tests_of_the_courses_own_code(step):
    tests = str(course_step(step).folder / "tests")
    suite, check = Collected(), Collected()
    run_pytest([tests, "--collect-only", "-qq"], plugins=[suite])
    run_pytest([tests, "--collect-only", "-qq", "--impl", "starter", "--full"], plugins=[check])
    own = {nodeid for nodeid, names in suite.items.items() if "course" in names}
    assert set(check.items) == set(suite.items) - own
    assert not any("course" in names for names in check.items.values())


def test_a_given_test_without_impl_and_a_course_test_with_it_are_refused():
    def item(nodeid: str, marker: str, fixtures: list[str]) -> SimpleNamespace:
        return SimpleNamespace(
            nodeid=nodeid,
            fixturenames=fixtures,
            get_closest_marker=lambda name: name if name == marker else None,
        )

    items = [
        item("t.py::test_given_ok", "given", ["attention", "impl"]),
        item("t.py::test_course_ok", "course", ["run", "tmp_path"]),
        item("t.py::test_given_bad", "given", ["run"]),
        item("t.py::test_course_bad", "course", ["train", "impl"]),
    ]
    assert misplaced_markers(items) == [
        "t.py::test_given_bad is marked given but runs none of the student's code: mark it course",
        "t.py::test_course_bad is marked course but tests the code under test (impl)",
    ]


def test_pythons_own_error_is_said_so_with_the_none_it_met():
    """Issue 54 (the student walk): lab-02's next_logits returning no cache showed the test's
    `cache.length` as 'torch refused it' over an AttributeError, naming no value."""
    import torch

    from common.check import in_course_words

    cache, T_MAX = None, 8
    with pytest.raises(AttributeError) as info:
        expect_length(cache.length, T_MAX)
    said = " ".join(in_course_words(info))
    assert "cache = None" in said and "T_MAX = 8" in said, said
    assert said.endswith("at cache.length, Python refused it:"), said
    with pytest.raises(RuntimeError) as info:
        torch.zeros(2) + torch.zeros(3)
    said, meaning = in_course_words(info)  # walk 7: torch's words, then the course's
    assert said.endswith("torch refused it:") and "axis 0 is 2 in one and 3 in the other" in meaning
    p = 0.5  # walk 3: torch's own TypeErrors were said Python's
    for torchs in (lambda: torch.cos(3.14 * p), lambda: torch.cat((None, torch.zeros(2)))):
        with pytest.raises(TypeError) as info:
            torchs()
        assert in_course_words(info)[0].endswith("torch refused it:")
    loss = torch.ones(2, requires_grad=True).sum()  # walk 11: a loss returned, not its .item()
    with warnings.catch_warnings(), pytest.raises(UserWarning) as info:
        warnings.simplefilter("error")  # as the check runs: a warning fails its test
        math.isfinite(loss)
    said, meaning = in_course_words(info)
    assert said.endswith("torch warned:") and ".item() gives the same number" in meaning, said
    pair = (torch.zeros(4, 8), torch.zeros(4, 8))  # walk 20: a pair looped over, not a batch
    with pytest.raises(ValueError) as info:
        [x + y for x, y in pair]  # noqa: B018 (it raises)
    said, meaning = in_course_words(info)
    assert said.endswith("Python refused it:") and "a tensor's rows" in meaning, said


def expect_length(length, T_max):  # a stand-in for the test's expect.equal
    return length == T_max


def test_arguments_are_computed_again_only_from_torchs_and_pythons_own_code():
    """The course's words compute an argument written as an expression again (randint's bound),
    but never by running a function or a method of the student's."""
    import types

    import torch

    from common.check import _arguments

    data, B, calls = torch.arange(50), 64, []
    theirs = types.ModuleType("theirs")  # a student's module with a function named like torch's
    theirs.arange = lambda *a: calls.append(a) or torch.arange(*a)
    scope = {"torch": torch, "theirs": theirs}
    said = _arguments("torch.randint(len(data) - B, (B,))", scope, {"data": data, "B": B})
    assert said == ["len(data) - B = -14"], said
    assert _arguments("f(theirs.arange(3)[:, None])", scope, {}) == []
    assert _arguments("f(torch.arange(3)[:, None])", scope, {}) == [
        "torch.arange(3)[:, None] (3, 1) int64"
    ]
    len_ = {"len": lambda x: calls.append(x) or 0, "data": data}  # len shadowed by theirs
    assert _arguments("f(len(data) - 1)", scope, len_) == []
    assert calls == [], calls
