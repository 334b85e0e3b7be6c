"""The check's model on hand-made results: which failure the screen shows first."""

from pathlib import Path

from common.check.screen import RunFacts, cut, fitted, step_lines
from common.check.status import Place, StarterFacts, TestResult, step_status
from common.course.todos import Todo

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


def test_a_failure_of_no_todo_is_named_so_and_counted_apart():
    """Issue 33: a failure no TODO's code ran read 'TODO(None)', and '3 failures are bugs' stood
    beside its TODO's '2 of its tests fail'."""
    error = ("  AssertionError: the tests' tiny GPT",)
    mine = {"outcome": "failed", "step": "s", "error": error, "ran": frozenset({FORWARD})}
    results = {
        n: TestResult(n, **mine) for n in ("tests/test_gpt.py::test_a", "tests/test_gpt.py::test_b")
    }
    results["tests/test_gpt.py::test_rows"] = TestResult(
        "tests/test_gpt.py::test_rows", "failed", "s", error=error
    )
    facts = StarterFacts({}, frozenset(), {(t, "GPT.forward"): LINE for t in TODOS})
    screen = "\n".join(step_lines(step_status("s", results, TODOS, facts), RunFacts()))
    assert "TODO(None)" not in screen, f"expected no TODO(None), got:\n{screen}"
    expected = (
        "3 failures are bugs in code already written: 2 of TODO(s task 2), 1 in no TODO's code"
    )
    assert expected in screen, f"expected {expected!r}, got:\n{screen}"


def test_a_long_failure_line_is_cut_after_a_whole_word():
    """Issue 42: one-line failures were cut mid-word ("expected 0, got 1 (2 ")."""
    line = (
        "tests/test_x.py::test_y: AssertionError: sinusoidal(1, 2)[0, 0]: expected 0, got 1 (2 of 2"
    )
    got = cut(line, 80)
    assert len(got) <= 80 and got.endswith(" ...") and line.startswith(got[:-4]), got
    assert got[:-4].split()[-1] in line.split(), f"expected a cut after a whole word, got {got!r}"
    assert cut("short", 80) == "short", "expected a short line unchanged"


def test_a_long_failure_line_keeps_expected_and_got():
    """Issue 42: the cut fell on the got value; the entry count and the reason go first."""
    head = "tests/test_parity_torch.py::test_boolean_padding_mask_matches_sdpa_attn_mask[B2-T8-1]: "
    message = (
        "AssertionError: max |yours - SDPA|: expected <= 1e-06, got 0.4017: the mask is inverted"
    )
    got = fitted(head, message, 160)
    assert got.endswith("expected <= 1e-06, got 0.4017"), f"expected the got kept, got {got!r}"


def test_every_todo_done_is_not_said_while_a_test_of_given_code_fails():
    """Issue 54: with Step 6's given resume broken, the screen said 'Every required TODO is done'
    above the failure of test_check[check_resume]; it says what fails and where instead."""
    ran = {
        "outcome": "passed",
        "step": "s",
        "ran": frozenset({FORWARD, ("s task 1", "GPT.forward")}),
    }
    results = {
        "tests/test_gpt.py::test_forward": TestResult("tests/test_gpt.py::test_forward", **ran)
    }
    error = (
        "  steps/s/tests/test_train.py:40 in test_check",
        "      check(train, tiny)",
        "  steps/s/starter/gpt.py:210 in train",
        "      optimizer.load_state_dict(state)",
        "  AssertionError: weight differs after resuming",
    )
    resume = "tests/test_train.py::test_check[check_resume]"
    results[resume] = TestResult(resume, "failed", "s", error=error, given=True)
    facts = StarterFacts({}, frozenset(), {(t, "GPT.forward"): LINE for t in TODOS})
    status = step_status("s", results, TODOS, facts)
    screen = "\n".join(step_lines(status, RunFacts()))
    assert all(s.state == "done" for s in status.todos.values()), status.todos
    assert "Every required TODO is done" not in screen, f"expected no 'done', got:\n{screen}"
    said = [
        "Not done yet: the required TODOs pass their own tests, but 1 test fails in code the "
        "starter gives:",
        f"  {resume}, at steps/s/starter/gpt.py:210 in train (shown below; it passes on the "
        "starter as shipped: was that code changed?)",
    ]
    assert " ".join(" ".join(said).split()) in " ".join(screen.split()), (  # wrapped at 100
        f"expected {said}, got:\n{screen}"
    )


def test_a_failure_raised_in_given_code_is_shown_as_such_after_the_students_own():
    """Issue 54: Step 6's train_step returning the loss tensor first showed torch's warning raised
    in the given induction loop, before the test of what train_step returns."""
    mine = {"outcome": "failed", "step": "s", "ran": frozenset({FORWARD})}
    given = TestResult(
        "tests/test_a.py::test_loop",
        error=("  UserWarning: Converting a tensor with requires_grad=True to a scalar",),
        given_at=Place("steps/s/loop.py", 191),
        last_lines=((FORWARD, Place(LINE.file, 12)),),
        **mine,
    )
    own = TestResult(
        "tests/test_b.py::test_returns",
        error=("  AssertionError: the type it returns: expected float, got Tensor",),
        last_lines=((FORWARD, Place(LINE.file, 14)),),
        **mine,
    )
    facts = StarterFacts({}, frozenset(), {(t, "GPT.forward"): LINE for t in TODOS})
    status = step_status("s", {r.nodeid: r for r in (given, own)}, TODOS, facts)
    assert status.shown == [own.nodeid, given.nodeid], status.shown
    assert status.next_place == Place(LINE.file, 14), "expected its last line run, not line 9"
    status = step_status("s", {given.nodeid: given}, TODOS, facts)
    screen = "\n".join(step_lines(status, RunFacts()))
    said = "It raised in code the course gives (steps/s/loop.py:191)"
    assert said in screen, f"expected {said!r}, got:\n{screen}"


def test_a_warning_is_never_first_and_a_test_of_the_todos_contract_comes_before_a_longer_path():
    """Issue 54: lab-02's cached positions off by one first showed a bare IndexError under the test
    of task 3d's sliding trap; the test of task 3c's positions came third."""
    ran = frozenset({FORWARD, ("s task 1", "GPT.forward")})
    failed = {"outcome": "failed", "step": "s", "raised_in": FORWARD, "raised_at": LINE}
    warned = TestResult(
        "tests/test_a.py::test_a", error=("  UserWarning: torch's",), warning=True, **failed
    )
    longer = TestResult(
        "tests/test_b.py::test_slides", error=("  IndexError: index out of range in self",),
        ran=ran, marked="task 9", **failed,
    )  # fmt: skip
    own = TestResult(
        "tests/test_c.py::test_positions", error=("  AssertionError: the positions",),
        ran=ran, marked="task 2", **failed,
    )  # fmt: skip
    run = TestResult(  # its own TODO's, but it crashes three frames into an experiment
        "tests/test_c.py::test_an_experiment", error=("  IndexError: index out of range in self",),
        ran=ran, marked="task 2", path=3, **failed,
    )  # fmt: skip
    facts = StarterFacts({}, frozenset(), {(t, "GPT.forward"): LINE for t in TODOS})
    results = {r.nodeid: r for r in (warned, run, longer, own)}
    status = step_status("s", results, TODOS, facts)
    assert status.shown == [own.nodeid, run.nodeid, longer.nodeid, warned.nodeid], status.shown
