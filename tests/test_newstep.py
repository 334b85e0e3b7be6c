"""`new-step` writes a step that passes every contract at once: nothing to edit by hand outside it."""

import re
import shutil
import subprocess
import sys

import pytest

from common import REPO_ROOT

STEP = "step-77"


def _git(root, *args) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout


@pytest.mark.process
@pytest.mark.slow  # copies the repository and runs the new step's contracts in it: ~20 s
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git for the copy's status")
def test_a_new_step_passes_every_contract_with_nothing_edited_by_hand(tmp_path):
    files = _git(REPO_ROOT, "ls-files", "--cached", "--others", "--exclude-standard", "-z")
    copy = tmp_path / "repo"
    for rel in filter(None, files.split("\0")):
        if (REPO_ROOT / rel).is_file():  # a file deleted but not yet committed is left out
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO_ROOT / rel, copy / rel)
    _git(copy, "init", "-q")
    _git(copy, "add", "-A")
    _git(copy, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "copy")
    made = subprocess.run(
        [sys.executable, "-m", "tools.newstep", STEP, "Scratch"],
        cwd=copy,
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    assert "pixi.toml step-tasks: updated" in made.stdout, made.stdout  # nothing left to paste
    chosen = f"{STEP} or step_77 or course_map or written_where_it_is_read or every_pixi_run"
    chosen += " or layer or no_module_holds or docstrings_say"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", chosen]
    cmd += ["tests", f"steps/{STEP}"]  # every repository test that takes its steps from step.toml
    suite = subprocess.run(cmd, cwd=copy, capture_output=True, text=True)
    assert suite.returncode == 0, suite.stdout[-3000:]
    passed = re.search(r"(\d+) passed", suite.stdout)
    assert passed and int(passed[1]) >= 15, suite.stdout[-3000:]  # the new step's contracts ran
    changed = sorted(line[3:] for line in _git(copy, "status", "--porcelain").splitlines())
    assert changed == ["CONTRIBUTING.md", "README.md", "pixi.toml", f"steps/{STEP}/"], changed
