"""CONTRIBUTING.md's maps of common/ and of each step's own modules, made from their docstrings:
`python -m tools.common_map --write-docs`."""

import ast
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
CONTRIBUTING = REPO_ROOT / "CONTRIBUTING.md"


def summary(path: Path) -> str:
    """A module's docstring's first paragraph, on one line."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return " ".join(doc.split("\n\n")[0].split()).replace("|", "\\|")


def common_map() -> str:
    """One row per module of common/: its file and what its docstring says it is."""
    from common.docs import markdown_table

    rows = [[f"`common/{p.name}`", summary(p)] for p in sorted((REPO_ROOT / "common").glob("*.py"))]
    return markdown_table(["module", "what it is"], rows)


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
