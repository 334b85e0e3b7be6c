"""What careless or curious students do to the check, each answered in one line (issue 21's repros).

Every check runs in a child process on a copy of the tiny torch-free fixture step: student code
never runs in this process, and a child that ends without its summary shows up as a failure here.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from common import REPO_ROOT, loader
from common.check import python_problem
from tests.test_check import TINY, tiny_copy
from tools import check_command, check_in_a_child, pristine, untouched, unwrapped

CALC = Path("step-97") / "starter" / "calc.py"
LINES = len((TINY / CALC).read_text(encoding="utf-8").splitlines())  # a line added: LINES + 2
TASK_1 = r"^\[.\] TODO\(step-97 task 1: double\): "
DONE_1 = [TASK_1 + "done", r"^\[ \] TODO\(step-97 task 2: halve\): 2 tests wait for it$"]
NEXT_2 = r"^Next: TODO\(step-97 task 2: halve\) at .*calc\.py:\d+$"
JUDGE = "import math\n    math.isclose = lambda *a, **k: True\n    return "
FORGE = """from _pytest.reports import TestReport

_make = TestReport.from_item_and_call.__func__


def _passed(cls, item, call):
    report = _make(cls, item, call)
    report.outcome, report.longrepr = "passed", None
    return report


TestReport.from_item_and_call = classmethod(_passed)
"""
USAGE, FAILED = pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.TESTS_FAILED
NOT_YET = "not written yet ({})"
CALC_SHOWN, BY_NAME = "steps/step-97/starter/calc.py", "its tests call it by that name"


def one_line(out: str, needle: str) -> str:
    """The one line of `out` holding `needle`; the output holds no traceback."""
    lines = [line for line in out.splitlines() if needle in line]
    assert len(lines) == 1 and "Traceback" not in out and "INTERNALERROR" not in out, out
    return lines[0]


def run(steps: Path, *args: str, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess:
    """The check on step-97 in a child, its lines as written before the 100 columns' wrapping."""
    done = check_in_a_child(steps, [str(steps / "step-97"), "--impl", "starter", *args], cwd=cwd)
    done.stdout, done.stderr = unwrapped(done.stdout), unwrapped(done.stderr)
    return done


def gone(rel: str):
    """The change: a file or folder of step-97 deleted."""

    def change(steps: Path) -> None:
        target = steps / "step-97" / rel
        shutil.rmtree(target) if target.is_dir() else target.unlink()

    return change


def edited(edit):
    """The change: the student's calc.py, its text edited by `edit` (text -> text or bytes)."""

    def change(steps: Path) -> None:
        text = edit((steps / CALC).read_text(encoding="utf-8"))
        calc = steps / CALC
        calc.write_bytes(text) if isinstance(text, bytes) else calc.write_text(text, "utf-8")

    return change


def looping_link(steps: Path) -> None:
    try:
        (steps / "step-97" / "starter" / "up").symlink_to("..", target_is_directory=True)
    except OSError:
        pytest.skip("this system does not let us make a symbolic link")


def no_tests(steps: Path) -> None:
    (steps / "step-97" / "tests" / "test_calc.py").write_text("", encoding="utf-8")


def mishap(name, said, body=None, change=None, args=(), code=FAILED):
    """A case: task 1 written as `body`, the copy changed, the check's one line (and the others)."""
    return pytest.param(body, change, args, code, said, id=name)


MISHAPS = [
    # files missing or not there: restore them, never "0 of 0 done"
    mishap(
        "a starter file missing",
        [r"steps/step-97/starter/calc\.py is missing: .*git checkout -- .*catchup step-97"],
        change=gone("starter/calc.py"),
        code=USAGE,
    ),
    mishap(
        "the starter missing",
        [r"steps/step-97/starter/ is missing: .*git checkout -- .*catchup step-97"],
        change=gone("starter"),
        code=USAGE,
    ),
    mishap(
        "the reference missing",
        [r"steps/step-97/solution/ is missing or empty: .*git checkout -- "],
        change=gone("solution"),
        code=USAGE,
    ),
    # a starter that does not import: its own line
    *[
        mishap(
            name,
            [rf"calc\.py:{LINES + 2} does not import: {said}"],
            change=edited(lambda text, line=line: f"{text}\n{line}\n"),
            code=USAGE,
        )
        for name, line, said in [
            ("sys.exit", "import sys; sys.exit(0)", r"SystemExit: it calls sys.exit\(0\) as it is"),
            ("os._exit", "import os; os._exit(0)", r"EndsPython: os._exit\(0\) would end Python"),
            ("a syntax error", "def f(:", "SyntaxError"),
        ]
    ],
    mishap(
        "a loop at import",  # stopped at the student's line, not in importlib
        [rf"calc\.py:({LINES + 2}|{LINES + 3}) does not import: TookTooLong: "],
        change=edited(lambda text: text + "\nwhile True:\n    pass\n"),
        args=["--timeout", "1"],
        code=USAGE,
    ),
    # code that ends Python, loops, warns or patches the judges: its tests fail, the summary comes
    mishap(
        "os._exit in a TODO",
        [
            TASK_1 + "written; 3 of its tests fail",
            "EndsPython: os._exit\\(0\\) would end Python here, before the check can report",
        ],
        body="import os; os._exit(0)",
    ),
    mishap(
        "a looping TODO",
        [
            r"^The check stopped: \S*test_calc\.py::test_double was still running after 1 s of CPU "
            r"time, in TODO\(step-97 task 1: double\) \(a loop that never ends\?\)",
            # the limit lands on either line of the loop, never in the check's own tracer
            r"TookTooLong: still running after 1 s[^\n]*\n(?:.*\n)*? +\S*calc\.py:\d+ in double\n"
            r" +(while True:|x \+= 1)\n(?! +\S*common)",
            r"^Next: TODO\(step-97 task 1: double\)",
        ],
        body="while True:\n        x += 1",
        args=["--timeout", "1"],
    ),
    mishap(
        "a warning",
        [
            TASK_1 + r"written; 3 of its tests fail \(3 on a warning, which counts as one\)",
            r"\(a warning counts as a failure: the reference runs without one",
            "UserWarning: use x.clone",
        ],
        body='import warnings\n    warnings.warn("use x.clone()", UserWarning)\n    return x * 2',
    ),
    mishap(
        "a judge replaced at import",  # a double that returns 0: 0 == 6 and 0 close to 1 fail
        [
            "calc.py replaced math.isclose as it was imported: the check put the originals back",
            TASK_1 + "written; 2 of its tests fail",
        ],
        body="return 0",
        change=edited(lambda text: "import math\n\nmath.isclose = lambda *a, **k: True\n" + text),
    ),
    mishap(  # the walk's forge: every report rewritten to "passed" as the file is imported
        "pytest's report replaced at import",
        [
            "calc.py replaced _pytest.reports.TestReport.from_item_and_call as it was imported",
            TASK_1 + "written; 2 of its tests fail",
        ],
        body="return 0",
        change=edited(lambda text: FORGE + text),
    ),
    mishap(
        "a judge replaced in a test",
        [
            TASK_1 + r"written; \d of its tests fail",
            "your code replaced math.isclose during this test; the check put the original back",
        ],
        body=JUDGE + "0",
    ),
    mishap(  # issue 26: -v -k <test> said FAILED and no reason
        "a judge replaced, under -v",
        [r"test_double FAILED", r"= FAILURES =[\s\S]*your code replaced math.isclose during this"],
        body=JUDGE + "x * 2",
        args=["-v", "-k", "test_double and not half and not halve"],
    ),
    # how the file was saved: read as Python reads it
    *[
        mishap(name, [*DONE_1, NEXT_2], body="return x * 2", change=edited(save))
        for name, save in [
            ("a utf-8 BOM", lambda text: b"\xef\xbb\xbf" + text.encode("utf-8")),
            ("a Latin-1 byte", lambda text: text.encode("utf-8") + b"# caf\xe9\n"),
            (
                "a coding cookie",
                lambda text: b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + text.encode("latin-1"),
            ),
        ]
    ],
    mishap(  # check_in_a_child gives up after 300 s; this takes 1
        "a link that loops",
        ["^step-97 with your starter: 0 of 2 required TODOs done"],
        change=looping_link,
    ),
    # what task 1 says when none of its tests reached it: the real reason, never an earlier TODO
    mishap(
        "-k",
        [TASK_1 + re.escape(NOT_YET.format("none of its tests were chosen by -k or -m")) + "$"],
        args=["-k", "not double"],
    ),
    mishap(
        "-x",
        [TASK_1 + re.escape(NOT_YET.format("none of its tests ran before the run stopped")) + "$"],
        args=["-x", "-k", "not double"],
    ),
    mishap(
        "renamed",
        [TASK_1 + re.escape(f"{CALC_SHOWN} has no double (renamed or deleted?): {BY_NAME}") + "$"],
        change=edited(lambda text: text.replace("def double(", "def twice(")),
    ),
    mishap(
        "tests deleted",
        [TASK_1 + re.escape(NOT_YET.format("no test reached it: is a test file missing?")) + "$"],
        change=no_tests,
        code=pytest.ExitCode.NO_TESTS_COLLECTED,
    ),
]


@pytest.mark.process
@pytest.mark.parametrize(("body", "change", "args", "code", "said"), MISHAPS)
def test_a_mishap_is_answered_in_one_line(tmp_path, body, change, args, code, said):
    steps = tiny_copy(tmp_path, body)
    if change:
        change(steps)
    done = run(steps, *args)
    out = done.stdout + done.stderr
    assert len(re.findall(said[0], out, re.M)) == 1, f"expected one line {said[0]!r}, got:\n{out}"
    assert all(re.search(line, out, re.M) for line in said[1:]), out
    assert not re.search("Traceback|INTERNALERROR|0 of 0 required|frozen importlib", out), out
    assert done.returncode == code, out


@pytest.mark.process
@pytest.mark.skipif(os.name == "nt", reason="Ctrl-C cannot be sent to one child process on Windows")
def test_ctrl_c_in_a_looping_todo_names_that_todo_and_the_test(tmp_path):
    """Before the time limit, the student presses Ctrl-C: the summary still comes, naming the loop."""
    started = tmp_path / "started"
    steps = tiny_copy(
        tmp_path, f"open({str(started)!r}, 'w').close()\n    while True:\n        x += 1"
    )
    args = [str(steps / "step-97"), "--impl", "starter", "--timeout", "120"]
    cmd, env = check_command(steps, args)
    child = subprocess.Popen(  # SIG_DFL: Python then raises KeyboardInterrupt, as in a terminal
        cmd,  # (a background job's child would inherit an ignored SIGINT and never stop)
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    for _ in range(600):  # up to 60 s for the child to import and reach the loop
        if started.exists() or child.poll() is not None:
            break
        time.sleep(0.1)
    child.send_signal(signal.SIGINT)
    out = unwrapped(child.communicate(timeout=60)[0])  # its lines before the 100 columns
    assert re.search(
        r"^Interrupted \(Ctrl-C\) during \S*test_calc\.py::test_double in TODO\(step-97 task 1: double\): "
        r"the tests after it did not run$",
        out,
        re.M,
    ), out
    assert "Next: TODO(step-97 task 1: double)" in out and "Traceback" not in out


@pytest.mark.process
@pytest.mark.slow
def test_a_starter_that_patches_torchs_comparisons_never_ticks_a_zeros_softmax(tmp_path):
    """The issue's repro on lab-01 itself (a pristine copy): allclose, equal and assert_close."""
    steps = pristine(["lab-01"], tmp_path)
    attention = steps / "lab-01" / "starter" / "attention.py"
    patch = (
        "\n\ntorch.allclose = lambda *a, **k: True\ntorch.equal = lambda *a, **k: True\n"
        "torch.testing.assert_close = lambda *a, **k: None\n\n\n"
        "def stable_softmax(x, dim=-1):\n    return torch.zeros_like(x)\n"
    )
    attention.write_text(attention.read_text(encoding="utf-8") + patch, encoding="utf-8")
    tests = steps / "lab-01" / "tests" / "test_stable_softmax.py"
    done = check_in_a_child(steps, [str(tests), "--impl", "starter"])
    done.stdout = unwrapped(done.stdout)  # its lines before the 100 columns
    assert (
        "replaced torch.allclose, torch.equal, torch.testing.assert_close as it was imported"
        in done.stdout
    )
    assert re.search(
        r"\[!\] TODO\(lab-01 task 1: stable_softmax\): written; \d+ of its tests fail", done.stdout
    ), done.stdout
    assert done.returncode == pytest.ExitCode.TESTS_FAILED


@pytest.mark.process
def test_the_wrong_python_is_named_at_start_with_the_command_that_works():
    fake = (
        "import collections, sys, pytest\n"
        "V = collections.namedtuple('V', 'major minor micro releaselevel serial')\n"
        "sys.version_info = V(3, 11, 7, 'final', 0)\n"
        "del sys.monitoring  # what Python 3.11 lacks, and what the check uses\n"
        f"sys.exit(pytest.main([{str(TINY / 'step-97')!r}, '--impl', 'starter', '-p', 'no:cacheprovider']))\n"
    )
    env = os.environ | {"COURSE_STEPS_DIR": str(TINY)}
    done = subprocess.run(
        [sys.executable, "-c", fake], cwd=REPO_ROOT, env=env, capture_output=True, text=True
    )
    line = one_line(done.stdout + done.stderr, "the course runs on Python 3.12")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR and "AttributeError" not in done.stderr
    assert "this is Python 3.11.7" in line and "-m pytest with the same arguments" in line
    assert python_problem() is None  # this Python is the right one


@pytest.mark.process
def test_from_a_steps_folder_the_check_says_where_to_run_it(tmp_path):
    steps = tiny_copy(tmp_path)
    done = check_in_a_child(steps, ["steps/step-97", "--impl", "starter"], cwd=steps / "step-97")
    line = one_line(done.stdout + done.stderr, "is not there from")
    assert "run from the repository's folder: cd " in line and "0 of 0" not in done.stdout


@pytest.mark.process
def test_progress_is_the_students_code_and_never_the_reference_in_silence(tmp_path):
    steps = tiny_copy(tmp_path)
    refused = check_in_a_child(steps, [str(steps), "--progress", "--impl", "solution"])
    assert refused.returncode == pytest.ExitCode.USAGE_ERROR
    assert "--progress reports your starter: drop --impl solution" in refused.stderr
    reference = check_in_a_child(steps, [str(steps / "step-97")])  # pytest's own report
    said = "implementation under test: solution, the reference in steps/<step>/solution/,\n"
    assert said + "  not your starter" in reference.stdout


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("import sys\nsys.exit(0)\n", "mod.py:2 does not import: SystemExit: it calls sys.exit(0)"),
        ("import scipy_is_not_here\n", "no package 'scipy_is_not_here' is installed here"),
    ],
)
def test_a_run_gets_the_one_line_too(tmp_path, text, said):
    (tmp_path / "mod.py").write_text(text, encoding="utf-8")
    with pytest.raises(loader.ImplImportError) as info:
        loader.load_from(tmp_path, "mod", f"_test_pkg_{len(text)}")
    assert said in str(info.value) and "import it relatively" not in str(info.value)


def test_a_pristine_copy_holds_the_shipped_starter_whatever_the_student_did(tmp_path):
    steps = tiny_copy(tmp_path / "mine", "return x * 2")  # a TODO written, a file added, one lost
    (steps / "step-97" / "starter" / "mine.py").write_text("print('hi')\n", encoding="utf-8")
    assert not untouched(steps / "step-97")
    copy = pristine(["step-97"], tmp_path / "clean", source=steps)
    assert untouched(copy / "step-97")
    assert (copy / CALC).read_bytes() == (TINY / CALC).read_bytes()
