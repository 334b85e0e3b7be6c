"""The layers point one way: common/ at the bottom, bench/ a leaf, tests/ imported by tests alone."""

import ast
from pathlib import Path

import pytest

from common import REPO_ROOT

SKIP = {".venv", "out", "backups", "fixtures", ".git", "__pycache__"}
FILES = sorted(p for p in REPO_ROOT.rglob("*.py") if not SKIP & set(p.relative_to(REPO_ROOT).parts))


def _imports(path: Path) -> set[str]:
    """The top-level package of every import in `path`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def _where(path: Path) -> str:
    return path.relative_to(REPO_ROOT).as_posix()


@pytest.mark.parametrize(
    ("package", "outside"),
    [
        ("tests", lambda top: top != "tests"),  # maintainer tools live in tools/
        ("bench", lambda top: top in ("common", "steps", "solutions", "tools")),
        ("tools", lambda top: top in ("common", "steps", "solutions")),
    ],
    ids=["tests", "bench", "tools"],
)
def test_a_layer_is_imported_only_from_above(package, outside):
    wrong = [
        f"{_where(p)} imports {package}"
        for p in FILES
        if outside(p.relative_to(REPO_ROOT).parts[0]) and package in _imports(p)
    ]
    assert not wrong, "\n".join(wrong)


def test_a_steps_code_imports_pytest_only_in_its_tests():
    """A student's run never loads the test runner: only a step's tests/ import pytest at the top."""
    wrong = [
        _where(p)
        for p in FILES
        if p.relative_to(REPO_ROOT).parts[0] in ("steps", "solutions")
        and "tests" not in p.relative_to(REPO_ROOT).parts
        and any(
            isinstance(node, ast.Import | ast.ImportFrom)
            and "pytest"
            in {a.name.split(".")[0] for a in node.names} | {getattr(node, "module", None) or ""}
            for node in ast.parse(p.read_text(encoding="utf-8")).body
        )
    ]
    assert not wrong, "import pytest inside the function that needs it:\n" + "\n".join(wrong)


def test_a_step_reaches_another_step_only_through_reference():
    """load(<another step>, ...) or a path into another step's folder would bypass the one route."""
    wrong = []
    for path in FILES:
        parts = path.relative_to(REPO_ROOT).parts
        if parts[0] != "steps" or parts[2] in ("starter", "solution"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") in (
                "load",
                "course_step",
            ):
                first = node.args[0] if node.args else None
                if isinstance(first, ast.Constant) and first.value != parts[1]:
                    wrong.append(
                        f"{_where(path)}:{node.lineno} loads {first.value!r}: "
                        f"use common.loader.reference({first.value!r}, module)"
                    )
    assert not wrong, "\n".join(wrong)


def test_common_stays_readable_in_pieces():
    """No file of common/ over 400 lines and no function over 60 (issue 27): a maintainer finds,
    reads and changes one piece at a time."""
    long = []
    for path in sorted((REPO_ROOT / "common").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        if (lines := len(text.splitlines())) > 400:
            long.append(f"{_where(path)}: {lines} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if (size := node.end_lineno - node.lineno + 1) > 60:
                    long.append(f"{_where(path)}:{node.lineno} {node.name}: {size} lines")
    assert not long, "\n".join(long)
