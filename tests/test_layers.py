"""The layers point one way: common/ at the bottom, bench/ a leaf, tests/ imported by tests alone, the
grader (grader/) by its own tests alone."""

import ast
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


@pytest.mark.parametrize(
    ("package", "outside"),
    [
        ("tests", lambda p: p.relative_to(REPO_ROOT).parts[0] != "tests"),  # tools live in tools/
        ("bench", lambda p: p.relative_to(REPO_ROOT).parts[0] in ("common", "steps", "solutions", "tools")),
        ("tools", lambda p: p.relative_to(REPO_ROOT).parts[0] in ("common", "steps", "solutions")),
        ("grader", lambda p: p.relative_to(REPO_ROOT).parts[0] in ("common", "steps", "solutions", "tools", "tests")),
        ("pytest", _step_code),  # a student's run never loads the test runner (inside a function may)
    ],
    ids=["tests", "bench", "tools", "grader", "pytest"],
)  # fmt: skip
def test_a_layer_is_imported_only_from_above(package, outside):
    top_only = package == "pytest"
    wrong = [p for p in FILES if outside(p) and package in _imports(p, top_only)]
    assert not wrong, "\n".join(
        f"{p.relative_to(REPO_ROOT).as_posix()} imports {package}" for p in wrong
    )


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
