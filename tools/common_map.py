"""CONTRIBUTING.md's map of common/, made from each module's docstring: `python -m tools.common_map --write-docs`."""

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


if __name__ == "__main__":
    sys.path.insert(0, str(REPO_ROOT))
    from common.docs import write_block

    if "--write-docs" in sys.argv:
        changed = write_block(CONTRIBUTING, "common-map", common_map())
        print("CONTRIBUTING.md common-map " + ("updated" if changed else "already up to date"))
    else:
        print(common_map(), end="")
