"""Each handout's symptom table, written from its step's bugs.py: `python -m tools.symptoms --write-docs`.

Here too the in-process scan of a step's suite with a curated bug in, which holds the table true."""

import contextlib
import io
import sys
from types import ModuleType

import pytest

from common import STEPS_DIR
from common.bugs import broken_copy, recognised_by
from common.course import course, course_step
from common.docs import markdown_table, write_block
from common.loader import override
from tools import run_pytest

# The same arguments for the unbroken guard and every variant, so a kill can only be the variant's.
# Slow tests sit out: in the steps they only render figures, which takes seconds. So do the tests
# marked course (they never run the module a bug is put in; Step 6's train a model per bug) and
# those marked whole_run: the check holds their failures back while a TODO's own tests fail, as a
# curated bug's do, so a student never meets them (Step 5's train the quick run twice per bug).
SUITE_ARGS = [
    *("--impl", "solution", "-x", "-qq", "--no-header", "--tb=no"),
    *("-m", "not slow and not course and not whole_run"),
]
EVERY = [arg for arg in SUITE_ARGS if arg != "-x"]  # every failure: a row may need a test to pass


def targets() -> list[tuple[str, str, list]]:
    """(step, the module its curated bugs replace, the bugs), for every step with bugs: its
    bugs.py's BUGS, each in its step.toml's [mutation] target unless it names its module."""
    return [(s.name, s.mutation.get("target", ""), bugs) for s in course() if (bugs := s.bugs())]


class Failures:
    """A pytest plugin: tests of the code itself run first; of each failure, in order, the short
    traceback the check shows (`errors`) and its AssertionError's message (`messages`)."""

    def __init__(self):
        self.errors: dict[str, str] = {}  # nodeid -> short traceback
        self.messages: dict[str, str | None] = {}  # test -> message (None: no AssertionError)
        self.ran = 0

    @property
    def first(self) -> str | None:
        """The first test to fail, as a handout names it (file::function[case])."""
        return next(iter(self.messages), None)

    def pytest_collection_modifyitems(self, items):
        items.sort(key=lambda item: item.get_closest_marker("whole_run") is not None)  # stable

    def pytest_runtest_logreport(self, report):
        self.ran += report.when == "call"

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        # here: common.check is the conftest's plugin, which pytest must import first to rewrite it
        from common.check import short_traceback

        report = yield
        if report.failed and call.excinfo is not None:
            self.errors[report.nodeid] = "\n".join(short_traceback(call.excinfo))
            asserted = call.excinfo.errisinstance(AssertionError)
            message = str(call.excinfo.value) if asserted else None
            self.messages.setdefault(report.nodeid.split("tests/")[-1], message)
        return report


def failures_with(step: str, module: str, copy: ModuleType | None, args=()) -> Failures:
    """`step`'s suite run quietly in process, `module` replaced by `copy` (None: as it is)."""
    replaced = contextlib.nullcontext() if copy is None else override(step, module, copy)
    plugin = Failures()
    with contextlib.redirect_stdout(io.StringIO()), replaced:
        run_pytest([str(course_step(step).tests), *EVERY, *args], plugins=[plugin])
    return plugin


def scan(step: str, module: str, bug=None) -> Failures:
    """Every failure of `step`'s suite with `bug` in a copy of `module` (None: unbroken)."""
    copy = None if bug is None else broken_copy(course_step(step).solution, module, bug)
    return failures_with(step, module, copy)


def failures(step: str, module: str, copy: ModuleType, tests: list[str]) -> dict[str, str]:
    """nodeid -> short traceback of `step`'s test functions `tests`, `module` replaced by `copy`."""
    return failures_with(step, module, copy, ["-k", " or ".join(sorted(set(tests)))]).errors


def table(step: str) -> str:
    """The handout's table, every step's one format, written from its bugs.py and never read back:
    what each bug does, the test that catches it first, what else the check recognises it by, the
    fix (tests/test_curated_bugs.py runs the suite to hold each `fails` true)."""
    cell = lambda text: text.replace("|", "\\|")  # noqa: E731 (a pipe would end the cell)
    rows = [
        [cell(b.breaks), f"`{b.fails}`", cell(recognised_by(b)), cell(b.fix)]
        for b in course_step(step).bugs()
    ]
    return markdown_table(["Symptom", "First test to fail", "Recognised by", "Fix"], rows)


if __name__ == "__main__":
    if "--write-docs" in sys.argv:
        for step, _, _ in targets():
            changed = write_block(STEPS_DIR / step / "README.md", "symptoms", table(step))
            print(f"steps/{step}/README.md: {'updated' if changed else 'already up to date'}")
