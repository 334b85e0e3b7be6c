"""Every curated bug of every step, injected once: a step's suite (slow tests out) is collected once
per session of up to BATCH bugs, runs the tests those bugs name unbroken, then runs once with each
bug in, from fresh fixtures each time, and three contracts read a bug's run: the suite kills the
variant with the test the handout names, a test that passes unbroken; each assertion it fails says
what it expected and what came; the symptom table recognises the failure as the bug's own row
(issue 33)."""

import functools
import os
from unittest import mock

import pytest

from common import STEPS_DIR
from common.check.screen import recognised, symptom_rows
from common.course import course_step
from common.course.bugs import committed
from common.docs import read_block
from tests.test_failure_messages import bare
from tools.symptoms import function, runs_of, scan_all, table, targets

TARGETS = targets()  # from each step.toml's [mutation]: every step's one catalogue
CASES = [(step, bug.module or module, bug) for step, module, bugs in TARGETS for bug in bugs]
IDS = [f"{s}-{b.name}" for s, _, b in CASES]
WRITE = "python -m tools.symptoms --write-docs"


BY_STEP = {step: (module, bugs) for step, module, bugs in TARGETS}
BATCH = 6  # bugs one session scans: all of lab-02's 24 in one would keep one worker busy alone


def batch_of(step: str, bug) -> tuple[str, int]:
    """(step, which of its sessions scans `bug`)."""
    return step, BY_STEP[step][1].index(bug) // BATCH


def same_worker(step: str, bug):
    """One xdist group per session: the one process that makes it serves all its tests."""
    step, batch = batch_of(step, bug)
    return pytest.mark.xdist_group(f"curated-bugs:{step}:{batch}")


SCANNED = [
    pytest.param(step, bug, marks=same_worker(step, bug), id=i)
    for (step, _, bug), i in zip(CASES, IDS, strict=True)
]


@pytest.fixture(scope="module")
def runs():
    """(step, batch) -> its session's runs: "" (its bugs' tests, unbroken) or a bug's name -> failures."""

    def scanned(step: str, batch: int):
        module, bugs = BY_STEP[step]
        return scan_all(step, module, bugs[batch * BATCH : (batch + 1) * BATCH])

    return functools.cache(scanned)


def named_tests(rows) -> list[str]:
    """The test functions the rows name: each row's test and those it needs to pass."""
    return [test.split("::")[-1].split("[")[0] for r in rows for test in (r.fails, *r.passes)]


@pytest.mark.parametrize(("step", "module", "bug"), CASES, ids=IDS)
def test_each_bug_commits_into_its_reference_and_names_the_test_it_fails(step, module, bug):
    source = (course_step(step).solution / f"{module}.py").read_text(encoding="utf-8")
    assert committed(source, bug, f"{module}.py") != source, f"{bug.name!r} changes nothing"
    assert bug.fails, f"steps/{step}/bugs.py: {bug.name!r} names no test it fails first (fails=)"


@pytest.mark.slow
@pytest.mark.parametrize(("step", "bug"), SCANNED)
def test_suite_kills_the_variant_with_the_test_its_bug_names(runs, step, bug):
    session = runs(*batch_of(step, bug))
    unbroken, run = session[""], session[bug.name]
    # so a kill means the variant failed the test, not that the test fails in a nested run
    assert unbroken.ran > 0 and bug.fails not in unbroken.messages, (
        f"steps/{step}: {bug.fails} fails in process without a bug (ran {unbroken.ran} tests): "
        f"{(unbroken.messages.get(bug.fails) or '')[:200]}"
    )
    assert run.first, f"{step}'s tests all pass with a copy broken by '{bug.name}': {bug.breaks}"
    assert bug.fails == run.first, (
        f"steps/{step}/bugs.py: {bug.name!r} says fails={bug.fails!r}, but the suite's first "
        f"failure is {run.first!r}: set fails to it, then run {WRITE}"
    )


@pytest.mark.parametrize("step", [step for step, _, _ in TARGETS])
def test_the_handouts_symptom_table_is_written_from_its_bugs(step):
    readme = STEPS_DIR / step / "README.md"
    assert read_block(readme, "symptoms") == table(step), (
        f"steps/{step}/README.md's symptom table is stale: run {WRITE}"
    )


@pytest.mark.slow
@pytest.mark.parametrize(("step", "bug"), SCANNED)
def test_every_failure_of_a_curated_bug_names_what_was_expected(runs, step, bug):
    run = runs(*batch_of(step, bug))[bug.name]
    bad = [f"  {t}: {m.strip()[:100]!r}" for t, m in run.messages.items() if m and bare(m)]
    assert run.messages and not bad, (
        f"{step} with '{bug.name}': failures that name no value (expected what, got what?)\n"
        + "\n".join(bad)
    )


@pytest.mark.slow
@pytest.mark.parametrize(("step", "bug"), SCANNED)
def test_each_curated_bug_is_recognised_as_its_own_row(runs, step, bug):
    run = runs(*batch_of(step, bug))[bug.name]
    named = set(named_tests(symptom_rows(step)))
    found = {n: e for n, e in run.errors.items() if function(n).split("::")[-1] in named}
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


# A suite whose fixtures keep the variant they were made in: one made for another run fails a test.
KEEPS_ITS_VARIANT = """
import os
import pytest

@pytest.fixture(scope="session")
def made_in():
    return os.environ["SCANNED_VARIANT"]

@pytest.fixture(scope="module")
def made_in_module(made_in):
    return made_in

def test_fixtures_are_made_in_this_run(made_in_module):
    assert made_in_module == os.environ["SCANNED_VARIANT"], f"made in {made_in_module}"

def test_b_fails():
    assert os.environ["SCANNED_VARIANT"] != "b", "expected any variant but b, got b"
"""


def test_each_run_of_a_scan_makes_its_fixtures_anew(tmp_path):
    """A bug's run never reads a fixture made with the unbroken code or another bug (one session
    serves a step's runs: the session- and module-scoped fixtures are torn down between two)."""
    suite = tmp_path / "test_variants.py"
    suite.write_text(KEEPS_ITS_VARIANT, encoding="utf-8")
    variant = lambda name: functools.partial(mock.patch.dict, os.environ, SCANNED_VARIANT=name)  # noqa: E731
    # as the unbroken run of a bug's named test (outside the rootdir, pytest names the file "")
    only = {"c": {"::test_b_fails"}}
    runs = runs_of([str(suite)], {n: variant(n) for n in "abc"}, only)
    failed = {name: [t.split("::")[-1] for t in run.messages] for name, run in runs.items()}
    assert failed == {"a": [], "b": ["test_b_fails"], "c": []}, (
        f"expected only b's own failure, got {failed}"
    )
    ran = [run.ran for run in runs.values()]
    assert ran == [2, 2, 1], f"expected the whole suite twice, then c's one test, got {ran}"
