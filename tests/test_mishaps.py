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
from tests.test_check import TINY, check_a_copy, tiny_copy
from tools import check_command, check_in_a_child, pristine, untouched

CALC = Path("step-97") / "starter" / "calc.py"
WRITTEN = "return x * 2"


def one_line(out: str, needle: str) -> str:
    """The one line of `out` holding `needle`; the output holds no traceback."""
    lines = [line for line in out.splitlines() if needle in line]
    assert len(lines) == 1 and "Traceback" not in out and "INTERNALERROR" not in out, out
    return lines[0]


def run(steps: Path, *args: str, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess:
    return check_in_a_child(steps, [str(steps / "step-97"), "--impl", "starter", *args], cwd=cwd)


# --- files missing or not there -------------------------------------------------------------------


@pytest.mark.process
@pytest.mark.parametrize(
    ("gone", "said"),
    [
        ("starter/calc.py", "starter/calc.py is missing"),
        ("starter", "starter/ is missing"),
        ("solution", "solution/ is missing or empty"),  # not "0 of 0 done"
    ],
)
def test_a_missing_starter_or_reference_is_one_line(tmp_path, gone, said):
    steps = tiny_copy(tmp_path)
    target = steps / "step-97" / gone
    shutil.rmtree(target) if target.is_dir() else target.unlink()
    done = run(steps)
    line = one_line(done.stdout + done.stderr, said)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR and "0 of 0" not in done.stdout
    assert f"steps/step-97/{gone}" in line and "git checkout -- " in line
    assert gone == "solution" or "catchup step-97" in line


# --- code that ends Python, loops, or patches the judges --------------------------------------------


@pytest.mark.process
@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("import sys; sys.exit(0)", "SystemExit: it calls sys.exit(0) as it is imported"),
        ("import os; os._exit(0)", "EndsPython: os._exit(0) would end Python here"),
        ("def f(:", "SyntaxError"),
        ("while True:\n    pass", "TookTooLong: "),  # stopped at the student's line
    ],
    ids=["sys.exit", "os._exit", "a syntax error", "a loop"],
)
def test_a_starter_that_does_not_import_is_one_line(tmp_path, line, said):
    steps = tiny_copy(tmp_path)
    before = len((steps / CALC).read_text(encoding="utf-8").splitlines())
    with (steps / CALC).open("a", encoding="utf-8") as f:
        f.write(f"\n{line}\n")
    done = run(steps, "--timeout", "1")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR  # never 0 without the summary
    where = re.search(
        r"calc\.py:(\d+) does not import: ", one_line(done.stdout + done.stderr, said)
    )
    assert where and int(where[1]) in (before + 2, before + 3), done.stdout + done.stderr
    assert "frozen importlib" not in done.stdout + done.stderr


@pytest.mark.process
@pytest.mark.parametrize(
    ("body", "said"),
    [
        (
            "import os; os._exit(0)",
            [
                r"written; 3 of its tests fail",
                "EndsPython: os._exit(0) would end Python here, before the check can report",
            ],
        ),
        (
            "import math\n    math.isclose = lambda *a, **k: True\n    return 0",
            [
                r"written; \d of its tests fail",
                "your code replaced math.isclose during this test; the check put the original back",
            ],
        ),
        (
            'import warnings\n    warnings.warn("use x.clone()", UserWarning)\n    return x * 2',
            [
                r"written; 3 of its tests fail \(3 on a warning, which counts as one\)",
                "(a warning counts as a failure: the reference runs without one",
                "UserWarning: use x.clone()",
            ],
        ),
    ],
    ids=["os._exit", "a judge replaced in a test", "a warning"],
)
def test_a_todo_that_ends_python_patches_a_judge_or_warns_fails_and_the_summary_comes(
    tmp_path, body, said
):
    out = check_a_copy(tmp_path, body)
    assert re.search(rf"^\[!\] TODO\(step-97 task 1: double\): {said[0]}", out, re.M), out
    assert all(line in out for line in said[1:]), out


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


@pytest.mark.process
def test_a_looping_todo_fails_naming_the_todo_and_the_test(tmp_path):
    out = check_a_copy(tmp_path, "while True:\n        x += 1", args=["--timeout", "1"])
    assert re.search(
        r"^The check stopped: \S*test_calc\.py::test_double was still running after 1 s of CPU time, "
        r"in TODO\(step-97 task 1: double\) \(a loop that never ends\?\)",
        out,
        re.M,
    ), out
    assert re.search(
        r"calc\.py:\d+ in double\n +while True:\n +TookTooLong: still running after 1 s", out
    )
    assert "Next: TODO(step-97 task 1: double)" in out


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
    out = child.communicate(timeout=60)[0]
    assert re.search(
        r"^Interrupted \(Ctrl-C\) during \S*test_calc\.py::test_double in TODO\(step-97 task 1: double\): "
        r"the tests after it did not run$",
        out,
        re.M,
    ), out
    assert "Next: TODO(step-97 task 1: double)" in out and "Traceback" not in out


@pytest.mark.process
def test_replacing_the_judges_ticks_nothing(tmp_path):
    # math.isclose made to say yes, and a double that returns 0: test_double_of_a_half uses it
    patch = "import math\n\nmath.isclose = lambda *a, **k: True\n"
    steps = tiny_copy(tmp_path, "return 0")
    (steps / CALC).write_text(patch + (steps / CALC).read_text(encoding="utf-8"), encoding="utf-8")
    out = run(steps).stdout
    assert (
        "calc.py replaced math.isclose as it was imported: the check put the originals back" in out
    )
    assert "[!] TODO(step-97 task 1: double): written; 2 of its tests fail" in out, (
        out
    )  # 0 == 6, 0 close to 1


@pytest.mark.process
def test_a_test_failed_for_replacing_a_judge_says_why_under_v(tmp_path):
    """Issue 26: `-v -k <test>` printed FAILED and no reason when the test passed but had replaced a
    judge (the check fails it); the reason is now that test's report."""
    body = "import math\n    math.isclose = lambda *a, **k: True\n    return x * 2"
    full = check_a_copy(tmp_path, body, ["-v", "-k", "test_double and not half and not halve"])
    assert re.search(r"test_double FAILED", full), full
    failures = full.split("= FAILURES =")[-1]
    assert "your code replaced math.isclose during this test" in failures, full


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
    assert (
        "replaced torch.allclose, torch.equal, torch.testing.assert_close as it was imported"
        in done.stdout
    )
    assert re.search(
        r"\[!\] TODO\(lab-01 task 1: stable_softmax\): written; \d+ of its tests fail", done.stdout
    ), done.stdout
    assert done.returncode == pytest.ExitCode.TESTS_FAILED


# --- how the file was saved -----------------------------------------------------------------------


@pytest.mark.process
@pytest.mark.parametrize(
    "save",
    [
        pytest.param(lambda text: b"\xef\xbb\xbf" + text.encode("utf-8"), id="utf-8 BOM"),
        pytest.param(lambda text: text.encode("utf-8") + b"# caf\xe9\n", id="a Latin-1 byte"),
        pytest.param(
            lambda text: b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + text.encode("latin-1"),
            id="a coding cookie",
        ),
    ],
)
def test_any_encoding_python_accepts_is_read_as_python_reads_it(tmp_path, save):
    steps = tiny_copy(tmp_path, WRITTEN)
    (steps / CALC).write_bytes(save((steps / CALC).read_text(encoding="utf-8")))
    out = run(steps).stdout
    assert "[x] TODO(step-97 task 1: double): done" in out and "Traceback" not in out, out
    assert "[ ] TODO(step-97 task 2: halve): 2 tests wait for it" in out, out
    assert re.search(r"^Next: TODO\(step-97 task 2: halve\) at .*calc\.py:\d+$", out, re.M)


@pytest.mark.process
def test_a_link_that_loops_in_the_starter_does_not_hang_the_check(tmp_path):
    steps = tiny_copy(tmp_path)
    try:
        (steps / "step-97" / "starter" / "up").symlink_to("..", target_is_directory=True)
    except OSError:
        pytest.skip("this system does not let us make a symbolic link")
    out = run(steps).stdout  # check_in_a_child gives up after 300 s; this takes 1
    assert "step-97 with your starter: 0 of 2 required TODOs done" in out, out


# --- the wrong Python, the wrong package, the wrong folder, the wrong mode ------------------------


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
    assert (
        "implementation under test: solution, the reference in steps/<step>/solution/, not your starter"
        in reference.stdout
    )


# --- what a TODO line says when none of its tests reached it --------------------------------------


@pytest.mark.process
@pytest.mark.parametrize(
    ("change", "args", "said"),
    [
        (
            "none",
            ["-k", "not double"],
            "not written yet (none of its tests were chosen by -k or -m)",
        ),
        (
            "none",
            ["-x", "-k", "not double"],
            "not written yet (none of its tests ran before the run stopped)",
        ),
        (
            "rename",
            [],
            "calc.py has no double (renamed or deleted?): its tests call it by that name",
        ),
        ("delete tests", [], "not written yet (no test reached it: is a test file missing?)"),
    ],
)
def test_task_1_never_waits_for_an_earlier_todo(tmp_path, change, args, said):
    steps = tiny_copy(tmp_path)
    if change == "rename":
        text = (steps / CALC).read_text(encoding="utf-8")
        (steps / CALC).write_text(text.replace("def double(", "def twice("), encoding="utf-8")
    if change == "delete tests":
        (steps / "step-97" / "tests" / "test_calc.py").write_text("", encoding="utf-8")
    out = run(steps, *args).stdout
    line = one_line(out, "] TODO(step-97 task 1: double)")
    assert said in line and "earlier TODO" not in line, out


# --- the repository's own tests, whatever the student did -----------------------------------------


def test_a_pristine_copy_holds_the_shipped_starter_whatever_the_student_did(tmp_path):
    steps = tiny_copy(tmp_path / "mine", WRITTEN)  # a TODO written, a file added, one lost
    (steps / "step-97" / "starter" / "mine.py").write_text("print('hi')\n", encoding="utf-8")
    assert not untouched(steps / "step-97")
    copy = pristine(["step-97"], tmp_path / "clean", source=steps)
    assert untouched(copy / "step-97")
    assert (copy / CALC).read_bytes() == (TINY / CALC).read_bytes()
