"""The check's model on hand-made results: which failure the screen shows first."""

from pathlib import Path

from common.status import Place, StarterFacts, TestResult, step_status
from common.todos import Todo

TODOS = {t: Todo(t, "gpt", Path("gpt.py"), ["GPT.forward"]) for t in ["s task 1", "s task 2"]}
FORWARD = ("s task 2", "GPT.forward")
LINE = Place("steps/s/starter/gpt.py", 9)


def test_a_curated_bug_case_is_shown_after_the_students_own_failures():
    """A curated-bug test patches a fresh copy of the student's module: the check sees the line
    that raised, but none of the student's functions run (their code objects are the copy's)."""
    raised = {"outcome": "failed", "step": "s", "raised_in": FORWARD, "raised_at": LINE}
    error = ("  RuntimeError: Expected target size [32, 16], got [32, 8]",)
    copy = TestResult("tests/test_checks.py::test_each[default init]", error=error, **raised)
    own = TestResult(
        "tests/test_gpt.py::test_loss", error=error, ran=frozenset({FORWARD}), **raised
    )
    results = {r.nodeid: r for r in (copy, own)}  # the curated case came first
    facts = StarterFacts({}, frozenset(), {(t, "GPT.forward"): LINE for t in TODOS})
    status = step_status("s", results, TODOS, facts)
    assert status.next == "s task 2" and status.shown == [own.nodeid, copy.nodeid]
    assert status.first_test == own.nodeid
