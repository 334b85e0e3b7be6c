"""The handouts' Python code is laid out as the lecture lays it out: each comment (`# @ = matrix
multiply`) beside the syntax it names, which a formatter would cut away (ruff leaves them alone)."""

import re
from pathlib import Path

import pytest

from common import STEPS_DIR, shown

HANDOUTS = sorted(STEPS_DIR.glob("*/README.md")) + sorted(STEPS_DIR.glob("*/background/README.md"))
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
# A comment's words that name a piece of syntax, and the text that piece is written as.
WORDS = {"semicolon": ";", "None": "None"}
# `code` in backticks; a call such as super() or float('-inf'); a bare token in brackets, (==)
NAMED = [re.compile(r"`([^`]+)`"), re.compile(r"\b(\w+\([^()\s]*\))"), re.compile(r"\((\S+)\)")]
# the start of a clause "@ = matrix multiply": a token with no letter, then " = "
DEFINED = re.compile(r"(?:^|;)\s*([^\w\s]+|-?\d+)\s=\s")


def split_comment(line: str) -> tuple[str, str]:
    """The code and the comment of one line (a `#` inside a string does not start a comment)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            return line[:i].rstrip(), line[i + 1 :].strip()
    return line.rstrip(), ""


def named_syntax(comment: str) -> list[str]:
    """The pieces of syntax a comment names, each as it is written in code."""
    found = [m for pattern in NAMED for m in pattern.findall(comment)]
    found += DEFINED.findall(comment)
    found += [code for word, code in WORDS.items() if re.search(rf"\b{word}\b", comment)]
    return [piece for piece in found if not re.fullmatch(r"[\w ,]*,[\w ,]*", piece)]


def normal(code: str) -> str:
    """Code with one kind of quote and no spaces, so `float('-inf')` finds float("-inf")."""
    return code.replace("'", '"').replace(" ", "")


def layout_problems(code: str) -> list[tuple[int, str]]:
    """Each line (number, what is wrong) of a Python block whose comment is away from its syntax."""
    lines = code.splitlines()
    problems = []
    for n, line in enumerate(lines, 1):
        before, comment = split_comment(line)
        if not comment:
            continue
        if before.strip() and not before.strip(" )]},"):
            problems.append((n, f"holds only brackets and a comment: {line.strip()!r}"))
            continue
        # a comment on its own line speaks of the statement under it
        later = [split_comment(x)[0] for x in lines[n:] if split_comment(x)[0].strip()]
        target = before if before.strip() else (later[0] if later else "")
        missing = [p for p in named_syntax(comment) if normal(p) not in normal(target)]
        if missing:
            what = f"its comment names {', '.join(f'`{m}`' for m in missing)}, which is not in the code beside it"
            problems.append((n, f"{what}: {line.strip()!r}"))
    return problems


@pytest.mark.parametrize("handout", HANDOUTS, ids=lambda p: str(p.relative_to(STEPS_DIR)))
def test_each_comment_sits_beside_the_syntax_it_names(handout: Path):
    text = handout.read_text(encoding="utf-8")
    problems = []
    for block in FENCE.finditer(text):
        first = text[: block.start(1)].count("\n") + 1
        for n, what in layout_problems(block[1]):
            problems.append(f"{shown(handout)}:{first + n - 1} {what}")
    expected = "every comment on the line whose syntax it names, one statement a line"
    assert not problems, "\n".join([f"expected {expected}; got:", *problems])


def test_the_layout_check_catches_what_the_formatter_did():
    formatted = (
        "scores = (\n"
        "    q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5\n"
        ")  # @ = matrix multiply; ** = power; -1 = last index\n"
        "idx = torch.tensor(encode(text[:64]))[\n"
        "    None, :\n"
        "]  # indexing with None adds an axis\n"
        'plt.imshow(a, cmap="Blues")\n'
        "plt.colorbar()  # semicolon: two statements on one line\n"
        "x = f(a)  # float('-inf')\n"
    )
    problems = layout_problems(formatted)
    lines = [n for n, _ in problems]
    assert lines == [3, 6, 8, 9], f"expected lines 3, 6, 8 and 9 to be named; got {problems}"
    lecture = (
        "scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5  # @ = matrix multiply; ** = power; -1 = last index\n"
        "mask = m.masked_fill(t == 0, float('-inf'))  # boolean mask (==); float('-inf')\n"
        "import torch, torch.nn as nn  # import with alias (as)\n"
        "# causal mask; `register_buffer` = state that isn't a parameter\n"
        'self.register_buffer("tril", t)\n'
        "B, T, d = x.shape  # tuple unpacking; (B, T, d)\n"
        'plt.imshow(a, cmap="Blues"); plt.colorbar()  # semicolon: two statements on one line\n'
    )
    assert layout_problems(lecture) == [], f"expected no problem; got {layout_problems(lecture)}"
