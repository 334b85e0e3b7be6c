"""`new-step` writes a step that passes every contract at once, touching nothing but its own."""

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
def test_a_new_step_with_its_printed_tasks_passes_every_contract(tmp_path):
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
    lines = [line for line in made.stdout.splitlines() if line.endswith('" }')]
    assert len(lines) == 3, made.stdout  # run, test- and check- tasks
    with (copy / "pixi.toml").open("a", encoding="utf-8") as toml:  # [tasks] is its last table
        toml.write("\n".join(lines) + "\n")
    chosen = f"{STEP} or course_map or course_graph or every_step_has_its_tasks or every_pixi_run"
    chosen += " or layer"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", chosen]
    cmd += ["tests", f"steps/{STEP}"]  # every repository test that takes its steps from step.toml
    suite = subprocess.run(cmd, cwd=copy, capture_output=True, text=True)
    assert suite.returncode == 0, suite.stdout[-3000:]
    passed = re.search(r"(\d+) passed", suite.stdout)
    assert passed and int(passed[1]) >= 15, suite.stdout[-3000:]  # the new step's contracts ran
    changed = sorted(line[3:] for line in _git(copy, "status", "--porcelain").splitlines())
    assert changed == ["CONTRIBUTING.md", "README.md", "pixi.toml", f"steps/{STEP}/"], changed
