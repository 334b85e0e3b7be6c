"""What a failure's message must name: what it expected and what came, never a bare `assert False`,
a bare tuple or a bare `assert x <= y` (every curated bug's failures: tests/test_curated_bugs.py)."""

import ast

import pytest


def bare(message: str) -> bool:
    """Is this AssertionError's first line pytest's own (`assert ...`), empty, or a bare value?"""
    first = message.strip().splitlines()[0].strip() if message.strip() else ""
    if not first or first.startswith("assert "):
        return True
    try:
        ast.literal_eval(first)  # a tuple, a number, a list: the values with no names
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


@pytest.mark.parametrize(
    ("message", "names_it"),
    [
        *[(bare, False) for bare in ["assert False", "assert 0.49 <= 1e-06", "(8.4, 1.05)", ""]],
        ("max |yours - SDPA|: expected <= 1e-06, got 0.49", True),
        ("y[:, t] must be x[:, t + 1]", True),
    ],
)
def test_a_message_that_names_no_value_is_bare(message, names_it):
    assert bare(message) != names_it, f"{message!r}: expected bare() {not names_it}, got the other"
