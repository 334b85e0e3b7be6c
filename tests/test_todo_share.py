"""The first screen gives the contract, not the code: at most 25% of a TODO's solution is shown.

A solution token counts as shown when it lies in a run of 3 or more consecutive solution tokens
that also appears, in the same order, in what the student sees of that TODO before asking for
help: the starter's function that holds it (signature, docstring, the given checks, comments and
the NotImplementedError message, which is also what the check's "Next:" prints). Tokens come from
Python's tokenize module; comments and strings are split into words and symbols the same way.
`python -m tests.test_todo_share` prints the table.
"""

import ast
import io
import re
import sys
import textwrap
import tokenize
from collections import defaultdict
from pathlib import Path

import pytest

from common import STEPS_DIR, todos
from tools.starters import starters

RUN = 3  # the shortest run of tokens that counts as transcribed
LIMIT = 0.25
EXEMPT = {"step-04 4.1: Head.forward"}  # the lecture hands this code out to be read (handout 4.1)
SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
SKIP |= {tokenize.ENDMARKER}


def _tokens(text: str) -> list[tokenize.TokenInfo]:
    """Python's tokens of `text`, as many as it yields before an error (prose is not code)."""
    found = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            found.append(token)
    except (tokenize.TokenError, SyntaxError):
        pass
    return found


def prose(text: str) -> list[str]:
    """The tokens of a comment or string, line by line, with quotes taken out."""
    words = []
    for line in re.sub(r"[\"'`]", " ", text).splitlines():
        words += [t.string for t in _tokens(line.strip()) if t.type not in SKIP and t.string]
    return words


def streams_of(source: str) -> list[list[str]]:
    """Every token sequence a student reads in `source`: its code, and each comment or string."""
    streams, code = [], []
    for token in _tokens(source):
        if token.type in (tokenize.COMMENT, tokenize.STRING, tokenize.FSTRING_MIDDLE):
            streams.append(prose(token.string.lstrip("#")))
        if token.type not in SKIP:
            code.append(token.string)
    return [*streams, code]


def shown_streams(step: Path) -> dict[str, list[list[str]]]:
    """TODO id -> the token streams of every starter function that raises its NotImplementedError.

    The starter as shipped (made from the solution): a student's edits or a catch-up do not count.
    """
    found = defaultdict(list)
    for _, text in sorted(starters(step).items()):
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef):
                source = textwrap.dedent("\n".join(lines[node.lineno - 1 : node.end_lineno]))
                for todo in dict.fromkeys(todos.TODO.findall(source)):
                    found[todo] += streams_of(source)
    return found


def solution_tokens(step: Path) -> dict[str, list[str]]:
    """TODO id -> the code tokens of its solution regions (their reference lines, level 4)."""
    found = defaultdict(list)
    for path in sorted((step / "solution").rglob("*.py")):
        for region in todos.parse(path.read_text(encoding="utf-8"), str(path))[1]:
            code = textwrap.dedent("\n".join(region.code))
            found[region.id] += [t.string for t in _tokens(code) if t.type not in SKIP]
    return dict(found)


def shown_share(tokens: list[str], streams: list[list[str]]) -> float:
    """The share of `tokens` inside a run of RUN or more that some stream holds in order."""
    grams = {tuple(s[i : i + RUN]) for s in streams for i in range(len(s) - RUN + 1)}
    covered = [False] * len(tokens)
    for i in range(len(tokens) - RUN + 1):
        if tuple(tokens[i : i + RUN]) in grams:
            covered[i : i + RUN] = [True] * RUN
    return sum(covered) / len(tokens) if tokens else 0.0


def shares() -> dict[str, tuple[float, int]]:
    """TODO id -> (share shown, number of solution tokens), for every step."""
    table = {}
    for step in sorted(p for p in STEPS_DIR.iterdir() if (p / "solution").is_dir()):
        streams = shown_streams(step)
        for todo, tokens in solution_tokens(step).items():
            table[todo] = (shown_share(tokens, streams[todo]), len(tokens))
    return table


SHARES = shares()


@pytest.mark.parametrize("todo", sorted(set(SHARES) - EXEMPT))
def test_the_starter_shows_at_most_a_quarter_of_the_solution(todo):
    share, n = SHARES[todo]
    assert share <= LIMIT, f"TODO({todo}): {share:.0%} of its {n} solution tokens are shown"


def test_the_measure_sees_a_hint_that_gives_the_code_away():
    """A message that spells out the code is measured as shown: the test can fail."""
    tokens = [t.string for t in _tokens("return torch.tril(torch.ones(T, T)).bool()")]
    tokens = [t for t in tokens if t.strip()]
    message = "TODO(x): return torch.tril(torch.ones(T, T)).bool()"
    assert shown_share(tokens, [prose(message)]) == 1.0
    assert shown_share(tokens, [prose("TODO(x): a [T, T] bool lower triangle")]) < LIMIT


if __name__ == "__main__":
    print("| TODO | solution tokens | shown |\n| --- | --- | --- |")
    for todo, (share, n) in SHARES.items():
        note = " (exempt: the handout gives this code)" if todo in EXEMPT else ""
        print(f"| {todo} | {n} | {share:.0%}{note} |")
    sys.exit(0)
