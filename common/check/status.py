"""The check's model: a step's test results and TODO regions in, a status per TODO out.

Pure: it reads no file and knows no pytest (collect.py feeds it, screen.py draws it)."""

import re
from collections import Counter
from dataclasses import asdict, dataclass, field

from common.course.todos import Todo, split_id

ERROR_LINE = re.compile(r"^  [A-Za-z_][\w.]*:( |$)")  # "  TypeError: ...", no frame, no detail


FRAME = re.compile(r"^  \S+\.py:\d+ in ")  # a traceback's frame: a failure's words end above it


def message_of(error: tuple[str, ...] | list[str]) -> str:
    """A failure's words, without its traceback (whose source may spell another failure's words)."""
    end = next((i for i, e in enumerate(error) if FRAME.match(e)), len(error))
    return "\n".join(error[:end])


def error_line(error: tuple[str, ...] | list[str]) -> str:
    """A failure's error line (its type and message's first line), not a detail under it nor the
    course's words above it nor a frame after it."""
    last = error[-1].strip() if error else ""
    return next((e.strip() for e in error if ERROR_LINE.match(e)), last)


Function = tuple[str, str]  # (TODO id, a function of it): ("lab-01 task 6: ...", "A.forward")


@dataclass(frozen=True)
class Place:
    """A line of the student's starter, as the screen shows it; with the contract of an open TODO."""

    file: str
    line: int
    contract: str | None = None  # what to compute, for a TODO still open; None in written code
    end: int | None = None  # the last of the lines that made a wrong value, when no one is sure
    raised: bool = False  # `end` raised, on what the lines from `line` made
    statement: bool = False  # `line` to `end` is one statement, written over several lines

    @property
    def at(self) -> str:
        """`file:line`, or `file:first-last` for lines of which no one is sure."""
        return f"{self.file}:{self.line}" + (f"-{self.end}" if self.end else "")


@dataclass(frozen=True)
class TestResult:
    """One test's outcome, as the check's plugin collected it."""

    __test__ = False  # a record, not a test class for pytest to collect

    nodeid: str
    outcome: str  # passed, failed or skipped
    step: str | None
    stopped_at: str | None = None  # the TODO whose NotImplementedError it reached
    error: tuple[str, ...] = ()  # the short traceback of a failure, its last line the error
    ran: frozenset[Function] = frozenset()  # the TODO functions it ran
    raised_in: Function | None = None  # the TODO function whose student line raised
    raised_at: Place | None = None  # that line
    given_at: Place | None = None  # the line of code the course gives that raised it, if one did
    last_lines: tuple[
        tuple[Function, Place], ...
    ] = ()  # each TODO function's student line that made the wrong value (collect.made_line)
    given: bool = False  # it tests code the starter gives (marked `given`)
    warning: bool = False  # it failed on a warning
    whole_run: bool = False  # marked `whole_run` (a whole run, a handout): shown and blamed last
    marked: str | None = None  # the task its `todo` marker names ("task 3c"): the TODO it is about
    core: bool = False  # marked `core`: its TODO's parity, or a property or trap its handout names
    path: int = 0  # the course's frames between the test and the line that raised (a longer path)

    @property
    def todos_ran(self) -> set[str]:
        return {todo for todo, _ in self.ran}


@dataclass(frozen=True)
class StarterFacts:
    """The starter's files, read once: the open TODOs, where each function's own code starts."""

    open: dict[str, Place]  # TODO id -> its raise (or its shipped bug) still in the starter
    shipped: frozenset[str] = frozenset()  # TODOs that ship buggy code (open while it is unchanged)
    starts: dict[Function, Place] = field(default_factory=dict)  # first line the student wrote
    unpredicted: dict[str, tuple[str, ...]] = field(default_factory=dict)  # TODO -> empty slots


@dataclass
class TodoStatus:
    """One TODO on the screen, and in --check-json (its keys are the grader's: keep them)."""

    state: str  # todo, optional, exercise, bug, waiting, untested or done
    optional: bool
    passed: int  # tests that ran it and passed
    failing: int  # failures that are its own
    waiting: int  # tests that stopped at its NotImplementedError
    reason: str  # the error of its first failure ("" when none)


@dataclass
class StepStatus:
    """What the check says about one step."""

    step: str
    todos: dict[str, TodoStatus]
    results: dict[str, TestResult]
    blamed: dict[str, Function]  # nodeid of a failure -> the TODO function it is blamed on
    held_back: dict[str, set[str]]  # nodeid of a whole-run test -> the TODOs it waits for
    warned: Counter  # TODO -> its failures that were warnings
    shown: list[str]  # nodeids of the failures shown as bugs, the first the one to look at
    next: str | None  # the TODO to work on
    next_place: Place | None
    first_test: str  # the nodeid `-v -k` shows in full ("" when none)
    unpredicted: tuple[str, ...] = ()  # the prediction slots of the next TODO still empty
    # worked out once by step_status, so the screen reads them without asking back:
    owner: dict[str, str | None] = field(default_factory=dict)  # nodeid -> the TODO it belongs to
    required: list[str] = field(default_factory=list)  # the TODOs that are not optional
    passed: int = 0  # tests that pass
    given: int = 0  # of them, tests of code the starter gives


def _wrong_functions(
    failed: dict[str, TestResult], order: list[Function], open_todos: set[str], sound: set[str]
) -> tuple[set[Function], list[Function]]:
    """(functions found right, functions wrong on their own), in course order. A raise counts
    against a function unless its own tests (its `todo` marker's) all pass, or the test ran an
    earlier function found wrong: then it raised on what another function handed it."""
    right, wrong = set(), []
    for fn in order:
        if fn[0] in open_todos:
            continue
        raised = [r for r in failed.values() if r.raised_in == fn and fn[0] not in sound]
        wrong_alone = any(not r.ran & set(wrong) for r in raised) or any(
            fn in r.ran and r.ran <= right | {fn} for r in failed.values() if not r.whole_run
        )
        wrong.append(fn) if wrong_alone else right.add(fn)
    return right, wrong


def blame(
    results: dict[str, TestResult], todos: dict[str, Todo], open_todos: set[str]
) -> tuple[dict[str, Function], dict[str, set[str]]]:
    """(each failure's TODO function, the whole-run tests held back and what they wait for).

    A failure belongs to the function whose student line raised it, else to the earliest it ran
    that is wrong on its own (a failing test ran it and, after it, only functions found right):
    a bug in an earlier TODO is named, not the later TODO whose tests it breaks (nor the later
    line that raised on its value). A function whose own tests all pass and that raised on what it
    was handed is charged last."""
    failed = {n: r for n, r in results.items() if r.outcome == "failed" and not r.stopped_at}
    order = [(t, f) for t in todos for f in dict.fromkeys(todos[t].functions)]
    tasks = {split_id(t)[1]: t for t in todos}
    sound = {t for t in todos if not any(tasks.get(r.marked) == t for r in failed.values())}
    right, wrong = _wrong_functions(failed, order, open_todos, sound)
    blamed = {}
    for nodeid, r in failed.items():
        first = next((fn for fn in wrong if fn in r.ran), None)
        latest = max(r.ran, key=order.index, default=(None, None))
        before = first and r.raised_in and order.index(first) < order.index(r.raised_in)
        raised = r.raised_in if r.raised_in and r.raised_in[0] not in sound and not before else None
        blamed[nodeid] = raised or first or r.raised_in or latest
    waits = {n: {t for t, _ in r.ran - right} - sound for n, r in failed.items() if r.whole_run}
    held_back = {n: wait for n, wait in waits.items() if wait}
    return blamed, held_back


def names(row_test: str, nodeid: str) -> bool:
    """Does a table's test (file::function or function, a [case] or none) name this test?"""
    test = nodeid.rsplit("tests/", 1)[-1]
    if "[" not in row_test:
        test = test.split("[")[0]
    return test == row_test or ("::" not in row_test and test.split("::")[-1] == row_test)


def _state(todo: str, todos: dict, facts: StarterFacts, counts: dict, ran: list) -> str:
    """A TODO's state from its counts and whether the starter still holds it open."""
    failing, waiting = counts["failing"][todo], counts["waiting"][todo]
    if todo in facts.open and todo in facts.shipped:
        return "exercise"  # ships with a bug: open until its code changes
    if todo in facts.open and not (failing and not waiting):  # else: another def of it ran
        return "optional" if todos[todo].optional else "todo"
    if failing:
        return "bug"
    if not any(r.outcome == "passed" for r in ran) or counts["held"][todo]:  # some wait
        return "waiting" if ran else "untested"
    return "done"  # written, its own tests pass


def _show_order(status: StepStatus, nodeid: str, symptom_tests: set[tuple[str, str]]) -> tuple:
    """The next TODO's failures first; then those that ran the student's functions (not a fresh
    copy); never a warning first (torch's words, often from code the course gives); the student's
    own before one raised in code the course gives; the tests about the TODO's contract (its
    `todo` marker) before another TODO's, and those that check its value or call the line that
    raised before one that crashes later in a longer path (an experiment, another TODO); its core
    tests (the trap its handout names) before the others; the fewest functions (the closest to the
    cause), raised ones, those a symptom row recognises (its test, saying its words)."""
    r, owner = status.results[nodeid], status.owner[nodeid]
    return (
        owner != status.next,
        r.whole_run,
        not r.ran,
        r.warning,
        r.given_at is not None,
        not (owner and r.marked == split_id(owner)[1]),
        r.path,
        not r.core,
        len(r.ran),
        r.raised_at is None,
        not any(
            names(test, nodeid) and says in message_of(r.error) for test, says in symptom_tests
        ),
        nodeid,
    )


def _next_place(status: StepStatus, todos: dict, facts: StarterFacts) -> Place | None:
    """Where to start on the next TODO: its raise; else, of its first failure shown (the screen's
    traceback), the student's line that raised, else the line of the blamed function that made the
    wrong value (its return or the branch it took, or the line whose value a return only cast:
    collect.made_line); else its function's start."""
    todo = status.next
    if todo is None:
        return None
    if todo in facts.open:
        return facts.open[todo]
    failed = [n for n, r in status.results.items() if r.outcome == "failed"]
    its_failures = [n for n in status.shown + failed if status.owner[n] == todo]
    first = status.results[its_failures[0]] if its_failures else None
    if first and first.raised_at and status.blamed.get(first.nodeid) == first.raised_in:
        return first.raised_at
    function = status.blamed.get(first.nodeid) if first else None
    function = function or (todo, todos[todo].functions[0])
    ran_last = dict(first.last_lines).get(function) if first else None
    return ran_last or facts.starts.get(function)


def step_status(
    step: str,
    results: dict[str, TestResult],
    todos: dict[str, Todo],
    facts: StarterFacts,
    symptom_tests: set[tuple[str, str, tuple[str, ...]]] = frozenset(),
    interrupted: str | None = None,
) -> StepStatus:
    """Each TODO's status, what failed where, what to do next (`interrupted`: Ctrl-C's TODO)."""
    blamed, held_back = blame(results, todos, set(facts.open))
    failing, warned = Counter(), Counter()
    for n, r in results.items():
        if n in blamed and n not in held_back:
            failing[blamed[n][0]] += 1
            warned[blamed[n][0]] += r.warning
    if interrupted:  # Ctrl-C inside it: no report came
        failing[interrupted] += 1
    tasks = {split_id(t)[1]: t for t in todos}
    held = Counter(  # its own tests (its marker's) of its code failing for another TODO
        tasks[r.marked]
        for n, r in results.items()
        if r.outcome == "failed"
        and r.marked in tasks
        and blamed.get(n, (None,))[0] != tasks[r.marked]
        and not (r.whole_run and n in held_back)  # a whole run's: its code's tests may all pass
    )
    counts = {"failing": failing, "waiting": Counter(r.stopped_at for r in results.values())}
    counts["held"] = held
    status = StepStatus(step, {}, results, blamed, held_back, warned, [], None, None, "")
    for n, r in results.items():  # its failure's TODO, else the one it stopped at
        status.owner[n] = blamed[n][0] if n in blamed else r.stopped_at
    status.required = [t for t in todos if not todos[t].optional]
    status.passed = sum(r.outcome == "passed" for r in results.values())
    status.given = sum(r.outcome == "passed" and r.given for r in results.values())
    for todo in todos:
        ran = [r for r in results.values() if todo in r.todos_ran]
        its = [r for n, r in results.items() if status.owner[n] == todo]
        status.todos[todo] = TodoStatus(
            state=_state(todo, todos, facts, counts, ran),
            optional=todos[todo].optional,
            passed=sum(r.outcome == "passed" for r in ran),
            failing=failing[todo],
            waiting=counts["waiting"][todo],
            reason=next((error_line(r.error) for r in its if r.error), ""),
        )
    states = {t: s.state for t, s in status.todos.items()}
    status.next = next((t for t, s in states.items() if s in ("todo", "bug", "exercise")), None)
    failed = [n for n, r in results.items() if r.outcome == "failed"]
    live = {  # the rows whose bug passes the tests it passes, as recognised() reads them
        (test, says)
        for test, says, passes in symptom_tests
        if not any(names(p, f) for p in passes for f in failed)
    }
    status.shown = sorted(
        (n for n, r in results.items() if r.error and n not in held_back),
        key=lambda n: _show_order(status, n, live),
    )
    status.next_place = _next_place(status, todos, facts)
    status.first_test = _first_test(status)
    status.unpredicted = facts.unpredicted.get(status.next, ())
    return status


def _first_test(status: StepStatus) -> str:
    """The test to run in full: the next TODO's first failure shown, else the first that waits."""
    shown_first = [n for n in status.shown if status.owner[n] == status.next]
    results = status.results
    waits = [n for n, r in results.items() if r.outcome == "failed" and r.stopped_at == status.next]
    waits.sort(key=lambda n: results[n].whole_run)  # tests of the code first
    return (shown_first or waits or [""])[0] if status.next else ""


# --- the model's input as data: the check records it (--check-record), tests replay it ----------


def record(results: dict[str, TestResult], facts: StarterFacts) -> dict:
    """A step's results and starter facts as JSON-ready data (tests/screens/*.json)."""
    return {
        "results": [asdict(r) | {"ran": sorted(map(list, r.ran))} for r in results.values()],
        "open": {t: asdict(p) for t, p in facts.open.items()},
        "shipped": sorted(facts.shipped),
        "starts": [[t, f, asdict(p)] for (t, f), p in facts.starts.items()],
        "unpredicted": {t: list(slots) for t, slots in facts.unpredicted.items()},
    }


def replay(data: dict) -> tuple[dict[str, TestResult], StarterFacts]:
    """The results and starter facts that `record` wrote."""
    results = {}
    for r in data["results"]:
        r = r | {"error": tuple(r["error"]), "ran": frozenset(map(tuple, r["ran"]))}
        r["raised_in"] = r["raised_in"] and tuple(r["raised_in"])
        r["raised_at"] = r["raised_at"] and Place(**r["raised_at"])
        r["given_at"] = r.get("given_at") and Place(**r["given_at"])
        r["last_lines"] = tuple((tuple(f), Place(**p)) for f, p in r.get("last_lines", ()))
        results[r["nodeid"]] = TestResult(**r)
    facts = StarterFacts(
        {t: Place(**p) for t, p in data["open"].items()},
        frozenset(data["shipped"]),
        {(t, f): Place(**p) for t, f, p in data["starts"]},
        {t: tuple(slots) for t, slots in data.get("unpredicted", {}).items()},
    )
    return results, facts
