"""`new-step` writes a step that passes every contract at once: nothing to edit by hand outside it."""

import re
import subprocess
import sys

import pytest

from tools import clean_clone

STEP = "step-77"
# every repository test that takes its steps from step.toml, on the new step
TESTS = ["contracts", "readme", "docs", "layers", "curated_bugs"]
CHOSEN = f"{STEP} or step_77 or course_map or written_where or every_pixi_run or layer"
CHOSEN += " or curated_bug_is_in or docstrings_say"


def snapshot(root) -> dict[str, bytes]:
    """Every file of the copy but Python's caches: path -> bytes."""
    files = [p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in files}


@pytest.mark.process
@pytest.mark.slow  # copies the repository and runs the new step's contracts in it
def test_a_new_step_passes_every_contract_with_nothing_edited_by_hand(tmp_path):
    copy = clean_clone(tmp_path)
    before = snapshot(copy)
    made = subprocess.run(
        [sys.executable, "-m", "tools.newstep", STEP, "Scratch"],
        cwd=copy,
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    assert "pixi.toml step-tasks: updated" in made.stdout, made.stdout  # nothing left to paste
    after = snapshot(copy)
    changed = {re.sub(r"^(steps/[^/]+/).*", r"\1", p) for p in after if after[p] != before.get(p)}
    assert sorted(changed) == ["CONTRIBUTING.md", "README.md", "pixi.toml", f"steps/{STEP}/"]
    files = [f"tests/test_{name}.py" for name in TESTS] + [f"steps/{STEP}"]
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", CHOSEN, *files]
    suite = subprocess.run(cmd, cwd=copy, capture_output=True, text=True)
    assert suite.returncode == 0, suite.stdout[-3000:]
    passed = re.search(r"(\d+) passed", suite.stdout)
    assert passed and int(passed[1]) >= 15, suite.stdout[-3000:]  # the new step's contracts ran
