"""Every curated bug of every step, injected once: the step's suite (slow tests out) runs one time
with the bug, and three contracts read that one run. The suite kills the variant with the test the
handout names (mutation score); each assertion it fails says what it expected and what came
(never a bare `assert False`); the symptom table recognises the failure as the bug's own row
(issue 33). The scan is a module-scoped fixture parametrized by the bug, so pytest runs the three
tests of one bug together, on one process of xdist, and the run is not repeated."""

import pytest

from common import STEPS_DIR
from common.bugs import Bug, broken_copy
from common.check import short_traceback
from common.check.screen import recognised, symptom_rows
from common.course import course_step
from common.docs import read_block
from tests.test_failure_messages import bare
from tools.symptoms import SUITE_ARGS, run_with, table, targets

TARGETS = targets()  # from each step.toml's [mutation]: every step's one catalogue
CASES = [(step, bug.module or module, bug) for step, module, bugs in TARGETS for bug in bugs]
IDS = [f"{s}-{b.name}" for s, _, b in CASES]
WRITE = "python -m tools.symptoms --write-docs"
EVERY = [arg for arg in SUITE_ARGS if arg != "-x"]  # every failure: a row may need a test to pass


class Scan:
    """A pytest plugin: tests of the code itself first (as tools.symptoms.FirstFailure), and of
    each failure its test, its short traceback and, for an AssertionError, its message."""

    def __init__(self):
        self.first: str | None = None  # the first test to fail, as the handout names it
        self.errors: dict[str, str] = {}  # nodeid -> the short traceback the check would show
        self.messages: dict[str, str | None] = {}  # test -> message (None: no AssertionError)

    def pytest_collection_modifyitems(self, items):
        items.sort(key=lambda item: item.get_closest_marker("whole_run") is not None)  # stable

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if report.failed and call.excinfo is not None:
            self.first = self.first or report.nodeid.split("tests/")[-1]
            self.errors[report.nodeid] = "\n".join(short_traceback(call.excinfo))
            asserted = call.excinfo.errisinstance(AssertionError)
            self.messages[item.nodeid.split("tests/")[-1]] = (
                str(call.excinfo.value) if asserted else None
            )
        return report


def scan_of(step: str, module: str, bug: Bug) -> Scan:
    """The step's suite with `bug` in a copy of `module`, the step's [mutation] target."""
    layout = course_step(step)
    copy = broken_copy(layout.solution, module, bug)
    return run_with(step, module, copy, Scan(), [str(layout.tests), *EVERY])


@pytest.fixture(scope="module")
def scan(request) -> tuple[str, Bug, Scan]:
    """(step, bug, its suite's run): one run per bug, shared by the tests below."""
    step, module, bug = request.param
    return step, bug, scan_of(step, module, bug)


def named_tests(rows: list[Bug]) -> list[str]:
    """The test functions the rows name: each row's test and those it needs to pass."""
    return [test.split("::")[-1].split("[")[0] for r in rows for test in (r.fails, *r.passes)]


def function(test: str) -> str:
    """A table's test without its case: the test function the row's failure comes from."""
    return test.split("[")[0]


@pytest.mark.slow
@pytest.mark.parametrize("scan", CASES, ids=IDS, indirect=True)
def test_suite_kills_the_variant_with_the_test_its_bug_names(scan):
    step, bug, run = scan
    assert run.first, f"{step}'s tests all pass with a copy broken by '{bug.name}': {bug.breaks}"
    assert bug.fails == run.first, (
        f"steps/{step}/bugs.py: {bug.name!r} says fails={bug.fails!r}, but the suite's first "
        f"failure is {run.first!r}: set fails to it, then run {WRITE}"
    )


@pytest.mark.parametrize("step", [step for step, _, _ in TARGETS])
def test_the_handouts_symptom_table_is_written_from_its_bugs(step):
    readme = STEPS_DIR / step / "README.md"
    try:
        block = read_block(readme, "symptoms")
    except ValueError:
        pytest.fail(
            f"steps/{step}/README.md has no symptoms block: add the two lines "
            f"'<!-- BEGIN symptoms -->' and '<!-- END symptoms -->', then run {WRITE}"
        )
    assert block == table(step), f"steps/{step}/README.md's symptom table is stale: run {WRITE}"


@pytest.mark.slow
@pytest.mark.parametrize("scan", CASES, ids=IDS, indirect=True)
def test_every_failure_of_a_curated_bug_names_what_was_expected(scan):
    step, bug, run = scan
    assert run.messages, f"{step}'s suite passes with '{bug.name}': the scan saw no failure"
    bad = [
        f"  {test}: {message.strip()[:100]!r}"
        for test, message in run.messages.items()
        if message is not None and bare(message)
    ]
    assert not bad, (
        f"{step} with '{bug.name}': {len(bad)} failure(s) name no value (expected what, got what?)\n"
        + "\n".join(bad)
    )


@pytest.mark.slow
@pytest.mark.parametrize("scan", CASES, ids=IDS, indirect=True)
def test_each_curated_bug_is_recognised_as_its_own_row(scan):
    step, bug, run = scan
    named = set(named_tests(symptom_rows(step)))
    found = {n: e for n, e in run.errors.items() if function(n).split("::")[-1] in named}
    assert found, f"{step} with {bug.name!r} failed none of the tests its symptom table names"
    shown = recognised(symptom_rows(step), found)
    assert bug in shown, (
        f"{step} with {bug.name!r}: expected its row {bug.breaks!r} among the rows recognised, "
        f"got {[r.breaks for r in shown]} from the failures {sorted(found)}"
    )
    foreign = [r.breaks for r in shown if function(r.fails) != function(bug.fails)]
    assert not foreign, (
        f"{step} with {bug.name!r}: expected only rows that share its failing test "
        f"{bug.fails}, got also {foreign}"
    )
