"""CONTRIBUTING.md's maps of the rooms (common/, tools/ and their packages) and of each step's
own modules, made from their docstrings: `python -m tools.common_map --write-docs`."""

import ast
import sys
from pathlib import Path

from common import REPO_ROOT
from common.course import course
from common.docs import markdown_table, write_block

CONTRIBUTING = REPO_ROOT / "CONTRIBUTING.md"
ROOMS = ("common", "common/course", "common/check", "common/run", "tools", "grader")


def summary(path: Path) -> str:
    """A module's docstring's first paragraph, on one line."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return " ".join(doc.split("\n\n")[0].split()).replace("|", "\\|")


def rows(files: list[Path]) -> str:
    """A table of modules: each one's path and what its docstring says it is."""
    made = [[f"`{p.relative_to(REPO_ROOT).as_posix()}`", summary(p)] for p in sorted(files)]
    return markdown_table(["module", "what it is"], made) if made else ""


def common_map() -> str:
    """Each room: who it is for (its package's docstring), then a row per module of it."""
    parts = []
    for room in ROOMS:
        folder = REPO_ROOT / room
        parts.append(f"**`{room}/`** {summary(folder / '__init__.py')}\n")
        parts.append(
            rows([p for p in folder.glob("*.py") if p.stem not in ("__init__", "__main__")])
        )
    return "\n".join(part for part in parts if part)


def step_files() -> str:
    """One row per module a step keeps beside solution/, starter/ and tests/: what it is."""
    return rows([p for step in course() if not step.checkpoint for p in step.folder.glob("*.py")])


BLOCKS = {"common-map": common_map, "step-files": step_files}

if __name__ == "__main__":
    for name, made in BLOCKS.items():
        if "--write-docs" in sys.argv:
            changed = write_block(CONTRIBUTING, name, made())
            print(f"CONTRIBUTING.md {name} " + ("updated" if changed else "already up to date"))
        else:
            print(made(), end="")
