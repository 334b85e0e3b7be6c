"""Generated blocks in handouts: `<!-- BEGIN name -->` ... `<!-- END name -->` (in a TOML file
`# BEGIN name` ... `# END name`), written by the code."""

import re
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

# a number as printed: 3, -0.25, 1.19e-07, 9.4 (of 9.4%); a minus after a letter or digit is not its sign
NUMBER = re.compile(r"(?:(?<![\w.])-)?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def _block(path: Path, name: str) -> tuple[str, re.Match]:
    """The text of `path` and the match of its block `name` (group 1 is the body)."""
    text, tag = path.read_text(encoding="utf-8"), re.escape(name)
    begin = rf"(?:<!-- BEGIN {tag} -->|# BEGIN {tag}(?::[^\n]*)?)\n"
    if m := re.search(rf"{begin}(.*?)(?:<!--|#) END {tag}\b", text, re.S):
        return text, m
    raise ValueError(
        f"{path}: no generated block named {name!r}: add the two lines <!-- BEGIN {name} --> and "
        f"<!-- END {name} --> where it belongs, then write it again"
    )


def holding(name: str, root: Path) -> list[Path]:
    """The handouts under `root` (README.md up to two folders down) that hold the block `name`."""
    paths = sorted(p for pattern in ("", "*/", "*/*/") for p in root.glob(pattern + "README.md"))
    return [
        path
        for path in paths
        if not any(part.startswith(".") for part in path.relative_to(root).parts)
        and f"<!-- BEGIN {name} -->" in path.read_text(encoding="utf-8")
    ]


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


def within(tol: float, e: float | None = None) -> Callable[[str, str], bool]:
    """Numbers agree within `tol` (`e` for e-notation); one written without a '.' must be equal."""

    def close(a: str, b: str) -> bool:
        if "." not in a or "." not in b:  # counts, shapes, seeds and thresholds such as 1e-06
            return a == b
        return abs(float(a) - float(b)) <= (e if e is not None and "e" in a else tol)

    return close


def last_digit(noise: float) -> Callable[[str, str], bool]:
    """Numbers agree within one unit of the last digit printed; both below `noise` always agree."""

    def close(a: str, b: str) -> bool:
        x, y = Decimal(a), Decimal(b)
        if abs(x) < Decimal(noise) and abs(y) < Decimal(noise):
            return True
        return abs(x - y) <= Decimal(1).scaleb(x.as_tuple().exponent)  # "4.01" -> 0.01

    return close


def exact(a: str, b: str) -> bool:
    return a == b


def disagreements(documented: str, fresh: str, close: Callable[[str, str], bool]) -> list[str]:
    """Lines of a handout's block that a fresh run does not reproduce: same words, close numbers.

    A fresh table alone is compared with the block's table lines alone: the rest of such a block
    (the environment it was recorded in) is not the same on every machine."""
    old, new = documented.splitlines(), fresh.splitlines()
    if all(line.startswith("|") for line in new):
        old = [line for line in old if line.startswith("|")]
    if len(old) != len(new):
        return [f"the block has {len(old)} lines, a fresh run prints {len(new)}:", *new]
    problems = []
    for n, (a, b) in enumerate(zip(old, new, strict=True), start=1):
        words_a, words_b = NUMBER.sub("#", a), NUMBER.sub("#", b)
        numbers = zip(NUMBER.findall(a), NUMBER.findall(b), strict=False)
        if words_a != words_b or not all(close(x, y) for x, y in numbers):
            problems.append(f"line {n}: handout {a.strip()!r}; fresh run {b.strip()!r}")
    return problems
