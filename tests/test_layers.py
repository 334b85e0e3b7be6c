"""The layers point one way. Among the packages import-linter holds it (.importlinter, a pre-commit
hook); a step's code, in folders that are not packages, is read here."""

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from common import REPO_ROOT

SKIP = {".venv", "out", "backups", "fixtures", ".git", "__pycache__"}
# the top folders are pruned before the walk: a .venv inside the repository holds 10,000 files
TOPS = [d for d in REPO_ROOT.iterdir() if d.is_dir() and d.name not in SKIP]
FOUND = [*REPO_ROOT.glob("*.py"), *(p for top in TOPS for p in top.rglob("*.py"))]
FILES = sorted(p for p in FOUND if not SKIP & set(p.relative_to(REPO_ROOT).parts))


def _imports(path: Path, top_only: bool = False) -> set[str]:
    """The top-level package of every import in `path` (only the module's own lines: top_only)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in tree.body if top_only else ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def _step_code(path: Path) -> bool:
    """A step's own code: under steps/ or solutions/, outside its tests."""
    parts = path.relative_to(REPO_ROOT).parts
    return parts[0] in ("steps", "solutions") and "tests" not in parts


STEP_CODE = [p for p in FILES if _step_code(p)]
STEP_FILES = [p for p in FILES if p.relative_to(REPO_ROOT).parts[0] in ("steps", "solutions")]


@pytest.mark.parametrize("package", ["tests", "bench", "tools", "grader"])
def test_a_step_imports_no_room_above_the_course_library(package):
    """A step's code and tests, which the student edition ships without these rooms. Steps are
    folders, not packages: import-linter (.importlinter) holds the packages' rooms."""
    wrong = [p for p in STEP_FILES if package in _imports(p)]
    assert not wrong, "\n".join(
        f"{p.relative_to(REPO_ROOT).as_posix()} imports {package}" for p in wrong
    )


def test_a_steps_run_never_loads_the_test_runner():
    """A student's run never imports pytest at its module's top (inside a function may)."""
    wrong = [p for p in STEP_CODE if "pytest" in _imports(p, top_only=True)]
    assert not wrong, "\n".join(
        f"{p.relative_to(REPO_ROOT).as_posix()} imports pytest" for p in wrong
    )


@pytest.mark.process
def test_the_rooms_contract_fails_on_an_import_that_points_up(tmp_path):
    """lint-imports (the pre-commit hook) passes on the repository and fails when the course's
    library imports the maintainer's tools: its contracts bite."""
    for room in ("common", "tools", "grader", "bench", "tests"):
        shutil.copytree(
            REPO_ROOT / room, tmp_path / room, ignore=shutil.ignore_patterns("fixtures")
        )
    shutil.copy2(REPO_ROOT / ".importlinter", tmp_path)
    lint = [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"]
    ok = subprocess.run(lint, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stdout[-2000:]
    docs = tmp_path / "common" / "docs.py"
    docs.write_text(docs.read_text(encoding="utf-8") + "\nimport tools  # noqa\n", "utf-8")
    broken = subprocess.run(lint, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert broken.returncode == 1, broken.stdout[-2000:]
    assert "common.docs -> tools" in broken.stdout, broken.stdout[-2000:]


def test_a_step_reaches_another_step_only_through_reference():
    """load(<another step>, ...) or a path into another step's folder would bypass the one route."""
    wrong = []
    for path in FILES:
        parts = path.relative_to(REPO_ROOT).parts
        if parts[0] != "steps" or parts[2] in ("starter", "solution"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            called = isinstance(node, ast.Call) and getattr(node.func, "id", "")
            first = node.args[0] if called in ("load", "course_step") and node.args else None
            if isinstance(first, ast.Constant) and first.value != parts[1]:
                where = f"{path.relative_to(REPO_ROOT).as_posix()}:{node.lineno}"
                wrong.append(f"{where} loads {first.value!r}: use common.loader.reference(...)")
    assert not wrong, "\n".join(wrong)
