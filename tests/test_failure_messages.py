"""Every curated bug of every step, injected: each assertion its suite fails says what it expected and
what came, never a bare `assert False`, a bare tuple or a bare `assert x <= y`."""

import ast

import pytest

from common.bugs import broken_copy
from common.course import course_step
from tools.symptoms import SUITE_ARGS, injector, run_with, targets

# All the failures, not the first only; slow tests only draw figures
ARGS = [arg for arg in SUITE_ARGS if arg != "-x"]
CASES = [(step, module, bug) for step, module, bugs in targets() for bug in bugs]


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


class Messages:
    """A pytest plugin: by test, the message of each failure (None: not an AssertionError)."""

    def __init__(self):
        self.seen: dict[str, str | None] = {}

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if report.failed and call.excinfo is not None:
            asserted = call.excinfo.errisinstance(AssertionError)
            self.seen[item.nodeid.split("tests/")[-1]] = (
                str(call.excinfo.value) if asserted else None
            )
        return report


@pytest.mark.parametrize("message", ["assert False", "assert 0.49 <= 1e-06", "(8.4, 1.05)", ""])
def test_a_message_without_names_is_bare(message):
    assert bare(message), f"{message!r} names no value, yet bare() let it through"


@pytest.mark.parametrize(
    "message", ["max |yours - SDPA|: expected <= 1e-06, got 0.49", "y[:, t] must be x[:, t + 1]"]
)
def test_a_message_that_names_its_value_is_not_bare(message):
    assert not bare(message), f"{message!r} names its value, yet bare() calls it bare"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("step", "module", "bug"), CASES, ids=[f"{s}-{b.name}" for s, _, b in CASES]
)
def test_every_failure_of_a_curated_bug_names_what_was_expected(step, module, bug):
    layout = course_step(step)
    copy = broken_copy(layout.solution, module, bug, injector(layout))
    seen = run_with(step, module, copy, Messages(), [str(layout.tests), *ARGS]).seen
    assert seen, f"{step}'s suite passes with '{bug.name}': the scan saw no failure to judge"
    bad = [
        f"  {test}: {message.strip()[:100]!r}"
        for test, message in seen.items()
        if message is not None and bare(message)
    ]
    assert not bad, (
        f"{step} with '{bug.name}': {len(bad)} failure(s) name no value (expected what, got what?)\n"
        + "\n".join(bad)
    )
