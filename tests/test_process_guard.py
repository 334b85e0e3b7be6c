"""The `process` marker is kept true: a test that starts a process without it fails, itself or
through a fixture (tools/process_guard.py, which the root conftest.py registers for the suite)."""

import os
import shutil
import subprocess
import sys

import pytest

from common import REPO_ROOT
from common.course import step_names
from tools import pristine
from tools.process_guard import MARKER, RUNNING

TESTS = """
import os
import subprocess
import sys

import pytest


def test_unmarked_child():
    subprocess.run([sys.executable, "-c", ""], check=True)


def test_unmarked_system():
    assert os.system("true") == 0


@pytest.mark.process
def test_marked_child():
    subprocess.run([sys.executable, "-c", ""], check=True)


def test_no_child():
    assert sum([1, 2]) == 3


@pytest.fixture(scope="module")
def server():
    return subprocess.run([sys.executable, "-c", ""], check=True)


@pytest.mark.process
def test_marked_first_user_of_a_fixture_that_starts_one(server):
    assert server.returncode == 0


def test_unmarked_later_user_of_that_fixture(server):
    assert server.returncode == 0
"""

CONFTEST = f'''
from tools.process_guard import register


def pytest_configure(config):
    config.addinivalue_line("markers", "{MARKER}: starts a process")
    register(config)
'''


class Outcomes:
    """Each inner test's failure, if any of its phases failed."""

    def __init__(self):
        self.failed, self.seen = {}, set()

    def pytest_runtest_logreport(self, report):
        name = report.nodeid.split("::")[-1]
        self.seen.add(name)
        if report.failed:
            self.failed[name] = str(report.longrepr)


@pytest.mark.process
def test_a_test_that_starts_a_process_unmarked_fails_itself_or_through_a_fixture(
    tmp_path, monkeypatch
):
    (tmp_path / "test_children.py").write_text(TESTS, encoding="utf-8")
    (tmp_path / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    monkeypatch.delenv(RUNNING, raising=False)  # as the suite's own session, not a child's
    outcomes = Outcomes()
    pytest.main(
        [str(tmp_path), f"--rootdir={tmp_path}", "-q", "-p", "no:cacheprovider"], [outcomes]
    )
    unmarked = {
        "test_unmarked_child",
        "test_unmarked_system",
        "test_unmarked_later_user_of_that_fixture",
    }
    assert len(outcomes.seen) == 6, f"expected 6 tests to run, ran {sorted(outcomes.seen)}"
    assert set(outcomes.failed) == unmarked, (
        f"expected {sorted(unmarked)} to fail: {outcomes.failed}"
    )
    said = outcomes.failed["test_unmarked_later_user_of_that_fixture"]
    assert "subprocess.Popen (python" in said and "in fixture server" in said, said
    assert f"@pytest.mark.{MARKER}" in said, said


@pytest.mark.process
@pytest.mark.slow
def test_a_caught_up_starters_run_in_a_child_is_marked(tmp_path):
    """Issue 54: after a catch-up, the untouched-starter contract runs a pristine copy in a child,
    which it did unmarked: the suite failed it as soon as a student caught a step up."""
    steps = pristine(step_names(), tmp_path)
    shutil.rmtree(steps / "step-04" / "starter")
    shutil.copytree(steps / "step-04" / "solution", steps / "step-04" / "starter")  # caught up
    test = "tests/test_contracts.py::test_untouched_starter_fails_only_with_not_implemented"
    cmd = [sys.executable, "-m", "pytest", f"{test}[step-04]", "-q", "-p", "no:cacheprovider"]
    # The suite's own session (watched), on a student's machine: CI's strictness would fail the
    # caught-up starter before the child ran, which is the point of CI, not of this test.
    dropped = {RUNNING, "CI", "STRICT_STARTERS"}
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["COURSE_STEPS_DIR"] = str(steps)
    run = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "1 passed" in run.stdout, (
        f"expected the contract to pass on a caught-up step-04, got exit {run.returncode}:\n"
        + run.stdout[-2000:]
    )
