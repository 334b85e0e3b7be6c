"""Generated blocks in handouts: `<!-- BEGIN name -->` ... `<!-- END name -->`, written by the code."""

import re
from pathlib import Path


def _block(path: Path, name: str) -> tuple[str, re.Match]:
    """The text of `path` and the match of its block `name` (group 1 is the body)."""
    text = path.read_text(encoding="utf-8")
    tag = re.escape(name)
    if m := re.search(rf"<!-- BEGIN {tag} -->\n(.*?)<!-- END {tag} -->", text, re.S):
        return text, m
    raise ValueError(f"{path}: no generated block named {name!r}")


def read_block(path: Path, name: str) -> str:
    """The text between the BEGIN/END markers called `name` in `path`."""
    return _block(path, name)[1][1]


def write_block(path: Path, name: str, body: str) -> bool:
    """Replace the block `name` in `path` with `body`; return True if the file changed."""
    text, m = _block(path, name)
    new = text[: m.start(1)] + body.rstrip("\n") + "\n" + text[m.end(1) :]
    path.write_text(new, encoding="utf-8", newline="\n")
    return new != text


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def parse_table(block: str) -> list[list[str]]:
    """Rows (header excluded) of the first Markdown table in `block`, cells stripped of backticks."""
    rows = [line for line in block.splitlines() if line.startswith("|")][2:]  # header, rule
    return [[c.strip().strip("`") for c in re.split(r"(?<!\\)\|", r.strip()[1:-1])] for r in rows]
