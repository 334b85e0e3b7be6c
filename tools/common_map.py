"""CONTRIBUTING.md's maps of the rooms (common/, tools/ and their packages) and of each step's
own modules, made from their docstrings: `python -m tools.common_map --write-docs`."""

import ast
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
CONTRIBUTING = REPO_ROOT / "CONTRIBUTING.md"


def summary(path: Path) -> str:
    """A module's docstring's first paragraph, on one line."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return " ".join(doc.split("\n\n")[0].split()).replace("|", "\\|")


ROOMS = ("common", "common/check", "common/run", "tools", "tools/grading")


def common_map() -> str:
    """Each room: who it is for (its package's docstring), then a row per module of it."""
    from common.docs import markdown_table

    parts = []
    for room in ROOMS:
        folder = REPO_ROOT / room
        files = sorted(
            p for p in folder.glob("*.py") if p.name not in ("__init__.py", "__main__.py")
        )
        rows = [[f"`{room}/{p.name}`", summary(p)] for p in files]
        parts.append(f"**`{room}/`** {summary(folder / '__init__.py')}\n")
        parts.append(markdown_table(["module", "what it is"], rows) if rows else "")
    return "\n".join(part for part in parts if part)


def step_files() -> str:
    """One row per module a step keeps beside solution/, starter/ and tests/: what it is."""
    from common.course import course
    from common.docs import markdown_table

    steps = [step for step in course() if not step.checkpoint]  # a checkpoint is all solution
    files = sorted(p for step in steps for p in step.folder.glob("*.py"))
    rows = [[f"`{p.relative_to(REPO_ROOT).as_posix()}`", summary(p)] for p in files]
    return markdown_table(["module", "what it is"], rows)


BLOCKS = {"common-map": common_map, "step-files": step_files}

if __name__ == "__main__":
    sys.path.insert(0, str(REPO_ROOT))
    from common.docs import write_block

    for name, made in BLOCKS.items():
        if "--write-docs" in sys.argv:
            changed = write_block(CONTRIBUTING, name, made())
            print(f"CONTRIBUTING.md {name} " + ("updated" if changed else "already up to date"))
        else:
            print(made(), end="")
