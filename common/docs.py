"""Generated blocks in handouts: `<!-- BEGIN name -->` ... `<!-- END name -->`, written by the code."""

import re
from pathlib import Path


def _pattern(name: str) -> re.Pattern:
    return re.compile(
        rf"(<!-- BEGIN {re.escape(name)} -->\n)(.*?)(<!-- END {re.escape(name)} -->)", re.S
    )


def read_block(path: Path, name: str) -> str:
    """The text between the BEGIN/END markers called `name` in `path`."""
    m = _pattern(name).search(path.read_text(encoding="utf-8"))
    if not m:
        raise ValueError(f"{path}: no generated block named {name!r}")
    return m[2]


def write_block(path: Path, name: str, body: str) -> bool:
    """Replace the block `name` in `path` with `body`; return True if the file changed."""
    text = path.read_text(encoding="utf-8")
    if not _pattern(name).search(text):
        raise ValueError(f"{path}: no generated block named {name!r}")
    new = _pattern(name).sub(lambda m: m[1] + body.rstrip("\n") + "\n" + m[3], text)
    path.write_text(new, encoding="utf-8", newline="\n")
    return new != text


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def parse_table(block: str) -> list[list[str]]:
    """Rows (header excluded) of the first Markdown table in `block`, cells stripped of backticks."""
    rows = [line for line in block.splitlines() if line.startswith("|")]
    cells = [[c.strip().strip("`") for c in re.split(r"(?<!\\)\|", r.strip()[1:-1])] for r in rows]
    return cells[2:]
