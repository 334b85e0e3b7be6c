"""The maintainer's room: starters, new steps, the handouts' generated blocks (symptom tables, the
first check, test counts, CONTRIBUTING's maps), the check's recorded screens, mutation testing and
the suite's process marker; the instructor's grader is tools/grading/. Here: running pytest in this
process, and pristine or cloned copies of the course. Nothing in steps/ or common/ imports these."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from common import REPO_ROOT, STEPS_DIR, pytest_command
from common.course import step_names
from common.loader import py_files

# What a pristine copy leaves out: the student's side of a step, and what runs make
NOT_COPIED = shutil.ignore_patterns(
    "starter", "backups", ".starter-*", ".catch-up.lock", "__pycache__"
)


def run_pytest(args: list[str], steps_dir: Path | None = None, plugins=()) -> int:
    """pytest in this process (fast: torch is already imported), or in a child for another steps dir."""
    # unraisableexception runs gc.collect() five times per session: 0.5 s each with torch loaded
    args = [*args, "-p", "no:unraisableexception"]
    if steps_dir is not None:  # STEPS_DIR is fixed at import, so another one needs a new process
        cmd, env = check_command(steps_dir, args)
        return subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True).returncode
    args += ["-p", "no:cacheprovider", f"--rootdir={REPO_ROOT}"]
    return pytest.main(args, plugins=list(plugins))


def untouched(folder: Path) -> bool:
    """Does the step's starter/ hold exactly the generated files (no edit, no file added)?"""
    from common.course import at
    from tools.starters import (  # here: `python -m tools.starters` imports tools/ first
        stale,
        starters,
    )

    made = starters(folder)  # .py files and predictions.toml; a student adds only .py files
    return not stale(folder) and set(py_files(at(folder).starter)) == {
        p for p in made if p.suffix == ".py"
    }


def pristine(steps: list[str], dest: Path, source: Path = STEPS_DIR) -> Path:
    """A steps folder under `dest` with these steps as shipped: each starter made from its solution.

    What the student did to steps/ (edits, a catch-up, a deleted file) is not in it.
    """
    from tools.starters import write  # here, as in untouched()

    root = dest / "steps"
    for step in steps:
        write(shutil.copytree(source / step, root / step, ignore=NOT_COPIED))  # no starter: all
    return root


def check_command(steps_dir: Path, args: list[str], env: dict | None = None):
    """(command, environment) of `python -m pytest <args>` with the check on `steps_dir` (may be
    outside the repository), for a child process."""
    env = os.environ | {"COURSE_STEPS_DIR": str(steps_dir), "COLUMNS": "100"} | (env or {})
    return pytest_command(steps_dir, [*args, "-p", "no:cacheprovider"]), env


def check_in_a_child(
    steps_dir: Path, args: list[str], env: dict | None = None, cwd: Path = REPO_ROOT
):
    """Run the check_command in a new process: student code never runs in the process of the
    repository's own tests."""
    cmd, env = check_command(steps_dir, args, env)
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


# What a clean clone does not have: git's and the tools' own folders, what runs and students make
NOT_CLONED = shutil.ignore_patterns(
    ".git", ".venv", "out", "backups", "starter", ".starter-*", ".catch-up.lock", "__pycache__",
    ".pytest_cache", ".ruff_cache", "*.egg-info",
)  # fmt: skip


def clean_clone(dest: Path) -> Path:
    """The repository as a fresh clone has it, under `dest`: every starter made from its solution.

    A student's edits and catch-ups, and every run's output, stay behind.
    """
    from tools.starters import write

    root = shutil.copytree(REPO_ROOT, dest / "repo", ignore=NOT_CLONED)
    for name in step_names(root / "steps"):
        write(root / "steps" / name)
    return root
