"""The maintainer's room: starters, new steps, the handouts' generated blocks (symptom tables, the
first check, test counts, CONTRIBUTING's maps), the check's recorded screens, mutation testing and
the suite's process marker; the instructor's grader is grader/. Here: running pytest in this
process, and pristine or cloned copies of the course. Nothing in steps/ or common/ imports these."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from common import REPO_ROOT, STEPS_DIR, py_files, pytest_command
from common.course import step_names

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
    from tools.starters import stale, starters  # here, as in _shipped()

    made = starters(folder)  # .py files and predictions.toml; a student adds only .py files
    return not stale(folder) and set(py_files(folder / "starter")) == {
        p for p in made if p.suffix == ".py"
    }


def pristine(steps: list[str], dest: Path, source: Path = STEPS_DIR) -> Path:
    """A steps folder under `dest` with these steps as shipped: each starter made from its solution
    (what the student did to steps/, edits, a catch-up, a deleted file, is not in it)."""
    root = dest / "steps"
    return _shipped(root, [shutil.copytree(source / s, root / s, ignore=NOT_COPIED) for s in steps])


def _shipped(root: Path, steps: list[Path]) -> Path:
    """`root`, with the starter of each of `steps` written from its solution."""
    from tools.starters import write  # here: `python -m tools.starters` imports tools/ first

    for step in steps:
        write(step)
    return root


def check_command(steps_dir: Path, args: list[str], env: dict | None = None):
    """(command, environment) of a child `python -m pytest <args>` on `steps_dir` (anywhere)."""
    env = os.environ | {"COURSE_STEPS_DIR": str(steps_dir), "COLUMNS": "100"} | (env or {})
    return pytest_command(steps_dir, [*args, "-p", "no:cacheprovider"]), env


def check_in_a_child(
    steps_dir: Path, args: list[str], env: dict | None = None, cwd: Path = REPO_ROOT
):
    """The check_command run in a child: student code never runs in the repository's tests."""
    cmd, env = check_command(steps_dir, args, env)
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


# What a clean clone does not have: git's and the tools' own folders, what runs and students make
NOT_CLONED = shutil.ignore_patterns(
    ".git", ".venv", "out", "backups", "starter", ".starter-*", ".catch-up.lock", "__pycache__",
    ".pytest_cache", ".ruff_cache", "*.egg-info",
)  # fmt: skip


def clean_clone(dest: Path) -> Path:
    """The repository as a fresh clone has it, under `dest`: every starter made from its solution
    (a student's edits and catch-ups, and every run's output, stay behind)."""
    root = shutil.copytree(REPO_ROOT, dest / "repo", ignore=NOT_CLONED)
    return _shipped(root, [root / "steps" / name for name in step_names(root / "steps")])


def unwrapped(screen: str) -> str:
    """A screen's lines as the check wrote them before fitting them to its 100 columns: each
    continuation (2 deeper, under a full line) joined back, so a test matches a message whole."""
    lines: list[str] = []
    for line in screen.splitlines():
        last = lines[-1] if lines else ""
        deeper = len(last) - len(last.lstrip(" ")) + 2
        if len(last) > 70 and line.startswith(" " * deeper) and line[deeper : deeper + 1] != " ":
            lines[-1] = f"{last} {line.strip()}"
        else:
            lines.append(line)
    return "\n".join(lines) + ("\n" if screen.endswith("\n") else "")
