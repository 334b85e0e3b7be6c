"""Each handout's symptom table, written from its step's bugs.py: `python -m tools.symptoms --write-docs`.

Here too the in-process scan of a step's suite with a curated bug in, which holds the table true."""

import contextlib
import io
import sys
from collections.abc import Callable
from functools import partial
from types import ModuleType

import pytest

from common import STEPS_DIR
from common.course import course, course_step
from common.course.bugs import broken_copy, recognised_by
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
    """Of one run of a suite, in order, each failure's short traceback as the check shows it
    (`errors`) and its AssertionError's message (`messages`); how many tests ran."""

    def __init__(self):
        self.errors: dict[str, str] = {}  # nodeid -> short traceback
        self.messages: dict[str, str | None] = {}  # test -> message (None: no AssertionError)
        self.ran = 0

    @property
    def first(self) -> str | None:
        """The first test to fail, as a handout names it (file::function[case])."""
        return next(iter(self.messages), None)

    def add(self, report, call) -> None:
        """Keep a failed phase's traceback (the check's own, made once) and message."""
        # here: common.check is the conftest's plugin, which pytest must import first to rewrite it
        from common.check import short_traceback

        self.errors[report.nodeid] = "\n".join(
            getattr(report, "bug", None) or short_traceback(call.excinfo)
        )
        asserted = call.excinfo.errisinstance(AssertionError)
        message = str(call.excinfo.value) if asserted else None
        self.messages.setdefault(handout_name(report.nodeid), message)


class Runs:
    """A pytest plugin: the suite, collected once, run once per variant (a name, and a `with` that
    puts it in), each from fresh fixtures as a session of its own would; tests of the code itself
    first; of each run, its Failures. A variant `only` names runs only those test functions."""

    def __init__(self, variants: dict[str, Callable[[], contextlib.AbstractContextManager]], only):
        self.variants, self.only = variants, only  # only: variant -> {"file.py::test_function"}
        self.runs: dict[str, Failures] = {}
        self.current = Failures()

    def pytest_collection_modifyitems(self, items):
        items.sort(key=lambda item: item.get_closest_marker("whole_run") is not None)  # stable

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session):
        if session.testsfailed or session.config.option.collectonly:
            return None  # pytest's own loop: stop at a collection error, run nothing when asked
        for name, put_in in self.variants.items():
            self.current = self.runs[name] = Failures()
            kept = self.only.get(name)
            with put_in():
                run_items([i for i in session.items if kept is None or function(i.nodeid) in kept])
        return True

    def pytest_runtest_logreport(self, report):
        self.current.ran += report.when == "call"

    @pytest.hookimpl(wrapper=True, tryfirst=True)  # outside the check's: its report.bug is made
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if report.failed and call.excinfo is not None:
            self.current.add(report, call)
        return report


def handout_name(nodeid: str) -> str:
    """A test as a handout names it: file::function[case], without the folders before tests/."""
    return nodeid.split("tests/")[-1]


def function(test: str) -> str:
    """A test's file::function, as a handout names it, without its case."""
    return handout_name(test).split("[")[0]


def run_items(items: list) -> None:
    """pytest's run of `items`, down to the last teardown (session-scoped fixtures too)."""
    session = items[0].session if items else None
    for item, nextitem in zip(items, [*items[1:], None], strict=True):
        item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        if session.shouldfail or session.shouldstop:  # a test out of time: this run ends here
            session.shouldfail = session.shouldstop = False
            session._setupstate.teardown_exact(None)
            return


def runs_of(args: list[str], variants: dict, only=None) -> dict[str, Failures]:
    """pytest `args`, quietly in process: collected once, run once per variant (each, or only the
    test functions `only` names for it)."""
    plugin = Runs(variants, only or {})
    with contextlib.redirect_stdout(io.StringIO()):
        run_pytest(args, plugins=[plugin])
    return plugin.runs


def scan_all(step: str, module: str, bugs) -> dict[str, Failures]:
    """Every failure of `step`'s suite with each bug in turn (by its name), in one session, each
    bug in a fresh copy of its module (`bug.module`, or `module`); first (as "") the test functions
    the bugs name, unbroken: a kill is a test that passes without the bug."""
    if len({b.name for b in bugs}) != len(bugs):
        raise ValueError(f"{step}'s bugs.py names two bugs alike: {[b.name for b in bugs]}")

    def broken(bug):
        copy = broken_copy(course_step(step).solution, bug.module or module, bug)
        return override(step, bug.module or module, copy)

    variants = {"": contextlib.nullcontext} | {b.name: partial(broken, b) for b in bugs}
    named = {"": {function(b.fails) for b in bugs}}
    return runs_of([str(course_step(step).tests), *EVERY], variants, named)


def failures(step: str, module: str, copy: ModuleType, tests: list[str]) -> dict[str, str]:
    """nodeid -> short traceback of `step`'s test functions `tests`, `module` replaced by `copy`."""
    args = [str(course_step(step).tests), *EVERY, "-k", " or ".join(sorted(set(tests)))]
    run = runs_of(args, {"": partial(override, step, module, copy)}).get("", Failures())
    return run.errors


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
