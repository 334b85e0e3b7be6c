"""Maintainer tools: the handouts' symptom tables, mutation testing, the first-check block, suite timing.

Nothing in steps/ or common/ imports these; tests/ may."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from common import REPO_ROOT


def run_pytest(args: list[str], steps_dir: Path | None = None, plugins=()) -> int:
    """pytest in this process (fast: torch is already imported), or in a child for another steps dir."""
    # unraisableexception runs gc.collect() five times per session: 0.5 s each with torch loaded
    args = [
        *args,
        "-p",
        "no:cacheprovider",
        "-p",
        "no:unraisableexception",
        f"--rootdir={REPO_ROOT}",
    ]
    if steps_dir is not None:  # STEPS_DIR is fixed at import, so another one needs a new process
        env = os.environ | {"COURSE_STEPS_DIR": str(steps_dir)}
        cmd = [sys.executable, "-m", "pytest", *args]
        return subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True).returncode
    return pytest.main(args, plugins=list(plugins))
