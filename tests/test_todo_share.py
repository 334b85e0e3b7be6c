"""The first screen gives the contract, not the code: at most 25% of a TODO's solution is shown.

A solution token is shown when it lies in a run of solution tokens (Python's tokenize; comments and
strings split into words) that appears in order in what the student reads first: the starter's
function holding the TODO (its docstring, comments and NotImplementedError message), runs of 3;
that and the handout's fenced blocks, inline code and symptom-table cells, runs of 6 (so an idiom
such as `self.x(y)` does not count). `python -m tests.test_todo_share` prints the table."""

import ast
import contextlib
import io
import re
import sys
import textwrap
import tokenize
from collections import defaultdict
from pathlib import Path

import pytest

from common.course import at, course, todos
from common.course.bugs import Bug, recognised_by
from tools.starters import starters

RUN = 3  # the shortest run of tokens that counts as transcribed, in the starter
HANDOUT_RUN = 6  # the same, over the starter and the handout together
LIMIT = 0.25
EXEMPT = {"step-04 4.1: Head.forward"}  # the lecture hands this code out to be read (handout 4.1)
SKIP = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENDMARKER,
}


def _tokens(text: str) -> list[tokenize.TokenInfo]:
    """Python's tokens of `text`, as many as it yields before an error (prose is not code)."""
    found = []
    with contextlib.suppress(tokenize.TokenError, SyntaxError):
        found.extend(tokenize.generate_tokens(io.StringIO(text).readline))
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
    """TODO id -> the token streams of every function of the shipped starter (made from the
    solution) that raises its NotImplementedError."""
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
    for path in sorted(at(step).solution.rglob("*.py")):
        for region in todos.parse(path.read_text(encoding="utf-8"), str(path))[1]:
            code = textwrap.dedent("\n".join(region.code))
            found[region.id] += [t.string for t in _tokens(code) if t.type not in SKIP]
    return dict(found)


FENCED = re.compile(r"^ *```[^\n]*\n(.*?)^ *```", re.S | re.M)
INLINE = re.compile(r"(`+)(.+?)\1", re.S)


def handout_streams(step: Path, bugs: list[Bug] | None = None) -> list[list[str]]:
    """The token streams of the handout's fenced blocks, inline code and symptom-table cells (the
    step's bugs, whose words the table shows)."""
    text = (step / "README.md").read_text(encoding="utf-8")
    streams = [s for block in FENCED.findall(text) for s in streams_of(textwrap.dedent(block))]
    streams += [prose(span) for _, span in INLINE.findall(FENCED.sub("", text))]
    rows = at(step).bugs() if bugs is None else bugs
    return streams + [prose(cell) for b in rows for cell in (b.breaks, recognised_by(b), b.fix)]


def shown_share(tokens: list[str], streams: list[list[str]], run: int = RUN) -> float:
    """The share of `tokens` inside a run of `run` or more that some stream holds in order."""
    grams = {tuple(s[i : i + run]) for s in streams for i in range(len(s) - run + 1)}
    covered = [False] * len(tokens)
    for i in range(len(tokens) - run + 1):
        if tuple(tokens[i : i + run]) in grams:
            covered[i : i + run] = [True] * run
    return sum(covered) / len(tokens) if tokens else 0.0


def shares() -> dict[str, tuple[float, float, int]]:
    """TODO id -> (share shown by the starter, by starter and handout, solution tokens)."""
    table = {}
    for step in [s.folder for s in course() if not s.checkpoint]:
        streams, handout = shown_streams(step), handout_streams(step)
        for todo, tokens in solution_tokens(step).items():
            both = shown_share(tokens, streams[todo] + handout, HANDOUT_RUN)
            table[todo] = (shown_share(tokens, streams[todo]), both, len(tokens))
    return table


SHARES = shares()


@pytest.mark.parametrize("todo", sorted(set(SHARES) - EXEMPT))
def test_the_starter_and_the_handout_show_at_most_a_quarter_of_the_solution(todo):
    share, both, n = SHARES[todo]
    assert share <= LIMIT, f"TODO({todo}): {share:.0%} of its {n} solution tokens are shown"
    where = f"steps/{todos.split_id(todo)[0]}/README.md"
    assert both <= LIMIT, (
        f"TODO({todo}): {both:.0%} of its {n} solution tokens are shown in runs of "
        f"{HANDOUT_RUN} by its starter and {where} (fenced code, inline code, symptom table): "
        "say what is wrong and where to look, not the line to type"
    )


def test_the_measure_sees_a_hint_that_gives_the_code_away():
    """A message that spells out the code is measured as shown: the test can fail."""
    tokens = [t.string for t in _tokens("return torch.tril(torch.ones(T, T)).bool()")]
    tokens = [t for t in tokens if t.strip()]
    message = "TODO(x): return torch.tril(torch.ones(T, T)).bool()"
    assert shown_share(tokens, [prose(message)]) == 1.0
    assert shown_share(tokens, [prose("TODO(x): a [T, T] bool lower triangle")]) < LIMIT


def test_the_measure_reads_the_handouts_code_and_its_symptom_table(tmp_path):
    """Fenced code, inline code and a symptom table's cells (a bug's words) count; prose does not."""
    tokens = [t.string for t in _tokens("x = x + self.attn(self.ln1(x))") if t.type not in SKIP]
    code, words = "x = x + self.attn(self.ln1(x))", "add the attention of the normalised stream"
    cases = {
        ("```python\nx = x + self.attn(self.ln1(x))  # (B, T, d)\n```\n", ""): 1.0,
        ("Write `x = x + self.attn(self.ln1(x))` here.\n", ""): 1.0,
        ("x = x + self.attn(self.ln1(x)) written as prose, outside any code\n", ""): 0.0,
        ("", code): 1.0,
        ("", words): 0.0,
    }
    for (readme, fix), expected in cases.items():
        (tmp_path / "README.md").write_text(readme, encoding="utf-8")
        bugs = [Bug("a", "a symptom", fix)] if fix else []
        got = shown_share(tokens, handout_streams(tmp_path, bugs), HANDOUT_RUN)
        assert got == expected, (readme, fix, got)


if __name__ == "__main__":
    print(f"| TODO | solution tokens | shown by the starter (runs of {RUN}) ", end="")
    print(f"| by starter and handout (runs of {HANDOUT_RUN}) |\n| --- | --- | --- | --- |")
    for todo, (share, both, n) in SHARES.items():
        note = " (exempt: the handout gives this code)" if todo in EXEMPT else ""
        print(f"| {todo} | {n} | {share:.0%} | {both:.0%}{note} |")
    sys.exit(0)
