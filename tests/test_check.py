"""The student's check: one screen on an untouched starter, ticks as TODOs get written."""

import os
import re
import shutil
import subprocess
import sys

import pytest

from common import REPO_ROOT, STEPS_DIR
from common.docs import read_block
from tests.contracts import run_pytest
from tests.first_check import README, first_check


@pytest.fixture(scope="module", params=["lab-01", "step-04"])
def untouched(request):
    """(step, what its check prints on the untouched starter)."""
    return request.param, first_check(request.param)


def test_first_check_fits_one_screen_and_names_what_to_write(untouched):
    step, text = untouched
    lines = text.splitlines()
    assert len(lines) <= 40, text
    todos = [line for line in lines if line.startswith("[ ] TODO(")]
    assert (
        len(todos) >= 5
        and sum(bool(re.search(r": (optional; )?\d+ tests? wait", t)) for t in todos) >= 4
    )
    assert re.search(
        rf"^Next: TODO\({step} [^)]+\) at steps/{step}/starter/\S+\.py:\d+$", text, re.M
    )
    assert f"One test in full: pixi run check-{step} -v -k test_" in text
    assert "Traceback" not in text and re.search(r"^\d+ failed", lines[-1])


def test_readme_shows_the_real_first_check():
    expected = "```text\n$ pixi run check-lab-01\n" + first_check() + "\n```\n"
    assert read_block(README, "first-check") == expected, (
        "run: python tests/first_check.py --write-docs"
    )


@pytest.mark.slow
def test_a_written_todo_is_ticked(tmp_path):
    steps = tmp_path / "steps"
    step = shutil.copytree(
        STEPS_DIR / "lab-01", steps / "lab-01", ignore=shutil.ignore_patterns("backups")
    )
    starter = (step / "starter" / "attention.py").read_text(encoding="utf-8")
    solution = (step / "solution" / "attention.py").read_text(encoding="utf-8")
    body = re.search(
        r"# BEGIN SOLUTION TODO\(lab-01 task 1[^\n]*\n(.*?)\n\s*# END", solution, re.S
    )[1]
    todo = re.search(
        r'    raise NotImplementedError\(\n?\s*"TODO\(lab-01 task 1.*?\n(\s*\)\n)?', starter, re.S
    )
    (step / "starter" / "attention.py").write_text(
        starter.replace(todo[0], body + "\n"), encoding="utf-8"
    )
    env = os.environ | {"COURSE_STEPS_DIR": str(steps), "COLUMNS": "100"}
    cmd = [sys.executable, "-m", "pytest", str(step / "tests" / "test_stable_softmax.py")]
    cmd += ["--impl", "starter", "-p", "no:cacheprovider", f"--rootdir={REPO_ROOT}"]
    cmd += [
        "-c",
        str(REPO_ROOT / "pyproject.toml"),
        "-p",
        "conftest",
    ]  # the copy is outside the repo
    done = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    assert "[x] TODO(lab-01 task 1: stable_softmax): done" in done.stdout, done.stdout
    assert "Next: TODO(lab-01 task 2" in done.stdout


def test_progress_is_one_line_per_step_and_never_red(capsys):
    code = run_pytest([str(STEPS_DIR), "--impl", "starter", "--progress", "-p", "no:cacheprovider"])
    lines = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    steps = [line for line in lines if re.match(r"^(lab-01|step-04) +\d+ of \d+ required", line)]
    assert code == pytest.ExitCode.OK
    assert [line.split()[0] for line in steps] == ["lab-01", "step-04"]
    assert all("tests pass; next: TODO(" in line for line in steps)
