"""Grade a step's TODOs, each on its own tests: `python -m grader.grade lab-01 [SUBMISSION]`.

A TODO's score is the share of its own tests that pass in a copy where every other TODO is the
reference's, so a bug costs only the TODO it is in and a stub earns nothing. The submission (a
folder or zip of the step's starter files, however nested; default: your starter) runs contained
(grader/sandbox.py); nothing of yours is changed.
"""

import argparse
import contextlib
import csv
import hashlib
import io
import itertools
import re
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import cache, partial
from pathlib import Path

from common import STEPS_DIR, shown, write_json
from common.course import course_step
from common.course.todos import optional, split_id
from grader.engine import (
    SHOWN,
    Owners,
    Run,
    TextLimit,
    Texts,
    Worker,
    canary,
    canary_passed,
    given_functions,
    is_held,
    own_outcome,
    scrub,
    starter_files,
)
from grader.gradescope import results_json as gradescope
from grader.sandbox import UNCONTAINED, Limits, ended_by, mode
from grader.submission import SubmissionError, match
from grader.worker import QUIET_IMPORT

PER_TEST = 10.0  # CPU seconds per test: the check's own default
# An exception Python could not raise (a file left open at import, closed by the garbage collector)
# surfaces in whichever test is running when it is collected, and a warning a module gives as it is
# imported sets the whole step aside: each in every TODO's copy, so it would cost each TODO. No
# TODO's result depends on either; the check of the whole submission still shows them.
AT_IMPORT = ["-W", "ignore::pytest.PytestUnraisableExceptionWarning", "-p", QUIET_IMPORT]


@dataclass
class Line:
    """One TODO's score."""

    todo: str
    state: str  # done, partial, failed, not written, not run, refused, flagged
    score: float
    weight: float  # 0 for optional work: shown, not counted
    reason: str
    passed: int = 0  # its own tests passed
    total: int = 0  # its own tests run
    tests: list = field(default_factory=list)  # (node id, passed, core) of each of its own tests

    @property
    def counted(self) -> bool:
        return not optional(self.todo)


@dataclass
class Grade:
    """A submission's grade: a line per TODO, and what happened around the run."""

    step: str
    lines: list[Line]
    notes: list[str] = field(default_factory=list)  # for the instructor: containment, stops
    seconds: float = 0.0
    screen: str = ""  # the check's own screen, as the student would see it
    contained: bool = True
    missing: list[str] = field(default_factory=list)  # starter files the submission lacks
    stray: list[str] = field(default_factory=list)  # files it holds that are not starter files
    hidden: list[str] = field(default_factory=list)  # what a reader would not see it do: to read
    # TODO id -> what runs its held-out tests, still to run
    held: dict = field(default_factory=dict)

    @property
    def score(self) -> float:
        return sum(line.score for line in self.lines if line.counted)

    @property
    def flagged(self) -> list[str]:
        """The TODOs whose copy did what a check never does (their score is 0)."""
        return [line.todo for line in self.lines if line.state == "flagged"]

    @property
    def max_score(self) -> float:
        return sum(line.weight for line in self.lines if line.counted)


def _setting(todo: str, key: str, default):
    """step.toml's [grade] `key` for the TODO's step: weights ({'task 2': 2}), all_or_nothing."""
    return (course_step(split_id(todo)[0], STEPS_DIR).grade or {}).get(key, default)


def _weight(todo: str) -> float:
    """Its task's weight in step.toml's [grade] (1 when not named); 0 for optional work."""
    return 0.0 if optional(todo) else float(_setting(todo, "weights", {}).get(split_id(todo)[1], 1))


def _zero(todo: str, state: str, reason: str) -> Line:
    return Line(todo, state, 0.0, _weight(todo), reason)


CORE_CAP = 0.5  # the most of its weight a TODO that fails one of its core tests earns


def _score(todo: str, passed: int, total: int, why: str, refused: str | None, each=()) -> Line:
    """A written TODO's line from its own tests' outcome: the share of them that pass, at most
    half its weight while one of its core tests fails (`each`: own_outcome's per-test list)."""
    weight, each = _weight(todo), [tuple(e) for e in each]
    if refused:
        return Line(todo, "refused", 0.0, weight, f"0: {refused} ({why})", passed, total, each)
    if total == 0:
        reason = why or "none of its tests ran"
        return Line(todo, "not run", 0.0, weight, reason, passed, total, each)
    share = passed / total
    if split_id(todo)[1] in _setting(todo, "all_or_nothing", []) and share < 1:
        share = 0.0
    core_failed = [n for n, ok, core in each if core and not ok]
    capped = bool(core_failed) and share > CORE_CAP
    share = CORE_CAP if capped else share
    state = "done" if passed == total else "failed" if passed == 0 else "partial"
    reason = f"{passed} of its {total} tests pass"
    if capped:
        n = len(core_failed)
        reason += f" ({n} core test{'s' if n > 1 else ''} failing: at most half its weight)"
    reason += f"; first failure: {why}" if why else ""
    return Line(todo, state, round(weight * share, 4), weight, reason, passed, total, each)


def grade(
    step: str,
    submission: Path | None = None,
    limits: Limits | None = None,
    per_test: float = PER_TEST,
    heldout: Path | None = None,
    worker: Worker | None = None,
    screen: bool = True,
    later: bool = False,
) -> Grade:
    """Grade one submission of `step` (None: the student's own starter), contained; `worker`: a
    running worker of this step to reuse (a class), else one is started and stopped here.
    Held-out tests run last, after every copy whose text a student reads; `later`: not yet, but
    when `held_out` is called (a class runs them once every student's other copies have run)."""
    if worker is None:
        held = [heldout] if heldout else []
        with _closed_to_others(*held), Worker(step, limits or Limits(), per_test, heldout) as own:
            return grade(step, submission, worker=own, screen=screen)
    g = _withheld(_grade(step, submission, worker, screen), worker.hide)
    return g if later else held_out(g, worker)


def held_out(g: Grade, worker: Worker) -> Grade:
    """`g` with its held-out tests run: each TODO's line then counts them (only their outcomes)."""
    if not g.held:
        return g
    worker.begin()  # a time budget of their own
    lines = {line.todo: line for line in g.lines}
    for todo, run_them in g.held.items():
        line = run_them()
        tag = "[uncontained] " * (not g.contained)  # said on every line, as _grade did
        lines[todo] = replace(line, reason=inert(worker.hide(tag + line.reason)))
    g.held = {}
    return replace(g, lines=list(lines.values()))


def _withheld(g: Grade, hide) -> Grade:
    """`g` as a student may read it: `hide` (Worker.hide) over its reasons, notes and screen, and
    every text a submission chose (a reason, a file's name) inert: no terminal escape, no byte
    that is not UTF-8 (a name unzip kept as it came) reaches a screen, a CSV or a feedback file."""
    for line in g.lines:
        line.reason = inert(hide(line.reason))
    g.notes, g.screen = [inert(hide(n)) for n in g.notes], inert(hide(g.screen))
    g.stray, g.missing = [inert(n) for n in g.stray], [inert(n) for n in g.missing]
    g.hidden = [inert(hide(n)) for n in g.hidden]
    return g


CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")  # but \t and \n


def inert(text: str) -> str:
    """`text` with each control character and lone surrogate written as its escape (\\x1b)."""
    return CONTROL.sub(lambda m: m[0].encode("unicode_escape", "backslashreplace").decode(), text)


def cell(text: str) -> str:
    """A CSV cell a spreadsheet shows as text: one that starts like a formula gets a quote first."""
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


def _grade(step: str, submission: Path | None, worker: Worker, screen: bool) -> Grade:
    """grade's own work, with `worker`."""
    started, m, layout = time.monotonic(), mode(), course_step(step)
    todos, notes, files = layout.regions(), [m.said], starter_files(step)
    worker.begin()
    with tempfile.TemporaryDirectory(prefix="course-submission-") as tmp:
        try:
            found = match(submission or layout.starter, Path(tmp) / "unpacked", sorted(files))
        except (SubmissionError, OSError) as exc:
            return not_graded(step, str(exc), started)
        for rel, path in found.files.items():
            files[rel] = path.read_bytes().decode("utf-8", errors="replace")
    owners = Owners.cached(worker, todos)
    try:  # each TODO's copy, read once
        read, hidden = worker.read(files, set(found.files), owners.needs)
    except TextLimit as exc:
        return not_graded(step, f"not graded: {exc}", started)
    notes += [f"to read: {line}" for line in hidden]  # what a reader would not see it do
    # the whole submission's check first: a TODO's failure is said in its words, from a copy
    # holding only the student's code (a TODO's own copy holds the reference of the others)
    check = _check(worker, step, files, owners) if screen else None
    shown_screen, forged = _said(check, step) if check else ("", "")
    lines, held = [], {}
    for todo in todos.values():
        line, held[todo.id] = _line(worker, todo, todos, read[todo.id], owners, check)
        lines.append(line)
    lines = _canary(worker, lines, todos, read, owners)
    held = {n.todo: held[n.todo] for n in lines if held[n.todo] and n.state != "flagged"}
    if forged:  # the whole submission's copy forged its record: no TODO's own word is taken
        notes.append(f"flagged: the check of the whole submission: {forged}")
        lines, held = [_zero(line.todo, "flagged", notes[-1]) for line in lines], {}
    if not m.contained:  # said on every line, so no score leaves without it
        for line in lines:
            line.reason = f"[uncontained] {line.reason}"
    if worker.died or worker.proc is not None and worker.proc.poll() is not None:
        died = worker.died or worker.ended()
        notes.append(f"the grade's worker {died} while this submission was graded")
    missing = [rel for rel in found.missing if rel.endswith(".py")]  # predictions: optional
    if missing:
        notes.append(f"missing from the submission: {', '.join(missing)}")
    if found.stray:
        notes.append(f"not starter files (ignored): {', '.join(found.stray)}")
    seconds = time.monotonic() - started
    g = Grade(step, lines, notes, seconds, shown_screen, m.contained, missing, found.stray)
    g.hidden, g.held = hidden, held
    return g


def not_graded(step: str, why: str, started: float) -> Grade:
    """A submission the grade could not read (`why`, one line): 0 on every TODO, with why."""
    m = mode()
    lines = [_zero(t, "not run", why) for t in course_step(step).regions()]
    seconds = time.monotonic() - started
    return Grade(step, lines, [m.said, why], seconds, contained=m.contained)


def _line(worker: Worker, todo, todos, read: Texts, owners, check: Run | None = None):
    """A TODO's line from its copy, where every other TODO is the reference's, run in its time
    (its held-out tests not yet counted); and what gives its whole line once its held-out tests
    have run in a copy of their own, of which only their outcomes are read (None: it has none).
    With the whole submission's `check`, a failure's message is the check's (that copy holds no
    reference code a student's code could raise back), never its own copy's."""
    own = owners.tests.get(todo.id, [])
    if read.why:
        return _zero(todo.id, "not written", read.why), None
    if not own:
        return _zero(todo.id, "not run", "no test of its own (ask the course's maintainers)"), None
    said = partial(scrub, todos=todos, mine=todo.id, moved=read.moved, hide=worker.hide)
    seen, held = [n for n in own if not is_held(n)], [n for n in own if is_held(n)]

    def counted(runs: list[Run], tests: list[str]) -> Line:
        for run in runs:
            if run.flags:
                return _zero(todo.id, "flagged", f"flagged: {'; '.join(run.flags)}")
            if run.full:  # what its tests made of it is what a full disk made of them
                return _zero(todo.id, "failed", run.full)
            if run.record is None:
                held_run = run.name.endswith(" held-out")
                state, why = ("failed", HELD_ENDED) if held_run else _ended(run, worker.step, check)
                return _zero(todo.id, state, said(why))
        record = {n: t for run in runs for n, t in run.tests().items()}
        words = said
        if check is not None:  # the check's messages are at the student's own lines already
            record = {n: {**t, "error": _checks_word(check, n, t)} for n, t in record.items()}
            words = partial(said, moved=None)
        return _score(
            todo.id, *own_outcome(replace(runs[0], record=record), tests, words, owners.core)
        )

    runs = [worker.run(todo.id, read.copy, seen, AT_IMPORT)] if seen else []
    line = counted(runs, seen) if seen else _zero(todo.id, "not run", "held-out tests only")
    if not held or any(r.flags or r.full or r.record is None for r in runs):
        return line, None  # its other tests' copy already says what its line is

    def with_held() -> Line:
        run = blind(worker.run(f"{todo.id} held-out", read.copy, held, AT_IMPORT, held=True))
        return counted([*runs, run], own)

    return line, with_held


HELD_ENDED = "its copy with the held-out tests ended before they all reported (a hang, a crash?)"


def blind(run: Run) -> Run:
    """A run of held-out tests as a student may learn of it: each test's outcome, none of its
    text (its message, the screen, the check's report, why it was flagged and how it ended: a
    copy could write the tests into any of them)."""
    passed = {n: t["outcome"] == "passed" for n, t in (run.record or {}).items()}
    record = run.record and {  # passed or not: a skip the copy chose would be one more bit
        n: {"outcome": "passed" if ok else "failed", "error": "failed (a held-out test: its text "
            "is the instructor's)" * (not ok)} for n, ok in passed.items()
    }  # fmt: skip
    flags = ["its copy with the held-out tests did something a check never does"] * bool(run.flags)
    full = "its copy with the held-out tests wrote more than it may" if run.full else ""
    return replace(run, report=None, screen="", record=record, flags=flags, full=full)


def _canary(worker: Worker, lines: list[Line], todos, read: dict[str, Texts], owners):
    """The lines, each TODO whose canary shows its copy forging flagged: only TODOs that earn
    something are checked, forging being worth nothing else."""
    earned = [todos[line.todo] for line in lines if line.score]
    if not earned or (c := canary(worker.step, read[earned[0].id].copy, earned, owners)) is None:
        return lines
    run = worker.run("canary", c.files, c.tests, AT_IMPORT)
    said = {line.todo: canary_passed(run, c, line.todo) for line in lines}
    return [
        _zero(n.todo, "flagged", f"flagged: {said[n.todo]}") if said[n.todo] else n for n in lines
    ]


NOT_SHOWN = (
    "its message is not shown: it came from a copy holding the course's code for your other "
    "TODOs, and the check of your whole submission did not fail this test"
)


def _checks_word(check: Run, nodeid: str, outcome: dict) -> str:
    """What a failing test of a TODO's copy says: the whole submission's check's message for it
    (a copy of the student's files only), else that it is not shown; a pass says nothing."""
    if outcome.get("outcome") == "passed":
        return outcome.get("error", "")
    theirs = check.tests().get(nodeid, {})
    if theirs.get("outcome", "passed") == "passed" or not theirs.get("error"):
        return NOT_SHOWN
    return theirs["error"]


def _check(worker: Worker, step: str, files: dict[str, str], owners) -> Run:
    """The student's check of the whole submission, in a time of its own."""
    deselect = [a for n in owners.broken if not is_held(n) for a in ("--deselect", n)]
    return worker.run("check", files, [f"steps/{step}/tests"], deselect, wall=worker.limits.check)


def _said(check: Run, step: str) -> tuple[str, str]:
    """The check's screen for the feedback, and why its copy's word cannot be taken ('' when it
    can: its report is its record's)."""
    forged = "; ".join(check.flags)
    if check.full:
        return f"{check.screen}\nThe check of your whole submission: {check.full}.", forged
    if not check.timed_out:
        return check.screen, forged
    where = hung_at(check.screen, step)
    return (
        f"{check.screen}\nThe check of your whole submission was stopped after "
        f"{check.wall:.0f} s{f', in {where}' if where else ''}: its screen is cut short."
    ), forged


def hung_at(screen: str, step: str) -> str:
    """Where a copy stopped for its time was (the innermost line of the step's starter in the
    stacks faulthandler wrote on its screen), or ''."""
    stacks = screen[screen.find("(most recent call first):") :]  # faulthandler's, not a failure's
    # a path, a number and a name only, each one the starter has: a copy may print lines that
    # look like a stack's, with its own words (another TODO's reference) in their place
    frame = re.compile(rf'File "[^"]*?(steps/{re.escape(step)}/starter/[\w/.-]+\.py)", line '
                       r"(\d{1,5}) in ([\w<>.]+)\s*$", re.ASCII)  # fmt: skip
    files, names = _starter_names(step)
    for line in stacks.splitlines():
        if (m := frame.search(line)) and m[1] in files and m[3] in names:
            return f"{m[1]}:{m[2]} ({m[3]})"
    return ""


@cache
def _starter_names(step: str) -> tuple[set[str], set[str]]:
    """The starter's files (as a stack names them) and the names of its functions (given and
    TODOs'), and <module>: all a hung copy's place may quote."""
    files = {f"steps/{step}/starter/{rel}" for rel in starter_files(step) if rel.endswith(".py")}
    todos = {f for todo in course_step(step).regions().values() for f in todo.functions}
    names = {q.split(".")[-1] for q in [*given_functions(step), *todos]}
    return files, names | {"<module>"}


def _ended(run, step: str, check: Run | None = None) -> tuple[str, str]:
    """(state, reason) of a copy that wrote no record to its end: it ran out of its time (a hang:
    the TODO fails, with the line it was in), its code does not import (the check's own one line,
    a failure of the TODO), or how the copy, or the worker it ran in, ended (a signal by name).
    With the whole submission's `check`, nothing of this copy's screen is quoted (it holds the
    other TODOs' reference): the check's own does-not-import line, if any."""
    if run.timed_out and run.wall < 5:
        return "not run", "the grade's time ran out before this TODO's copy ran"
    if run.worker:
        return "not run", f"the grade's worker {run.worker} while this TODO's copy ran"
    if run.timed_out:
        where = hung_at(run.screen, step)
        return "failed", (
            f"its copy was still running after {run.wall:.0f} s (a hang or a sleep?)"
            + (f", in {where}" if where else "")
        )
    screen = run.screen if check is None else check.screen
    said = [ln.removeprefix("ERROR: ") for ln in screen.splitlines() if " does not import" in ln]
    if said:
        return "failed", said[0]  # cut, if ever, by scrub as any reason
    how = ended_by(run.returncode)  # the worker's word: a signal is -N whatever contains it
    if check is not None:
        return "not run", f"its copy {how} before the check could report"
    last = [ln for ln in run.screen.strip().splitlines() if ln.strip()][-1:] or ["no output"]
    return "not run", f"its copy {how} before the check could report: {last[0]}"


# --- output -----------------------------------------------------------------------------------


def _n(x: float) -> str:
    """A score as a person reads it: 1, 0.5, 0.67."""
    return f"{round(x, 2):g}"


def text(g: Grade) -> str:
    """The table: one line per TODO (score, state, reason), then the total and the notes."""
    width = max(len(line.todo) for line in g.lines) + 6
    rows = [f"{'TODO':<{width}} {'score':>8}  {'state':<11} reason"]
    for line in g.lines:
        score = f"{_n(line.score)}/{_n(line.weight)}" if line.counted else "optional"
        rows.append(f"{f'TODO({line.todo})':<{width}} {score:>8}  {line.state:<11} {line.reason}")
    rows.append(f"{'total':<{width}} {_n(g.score) + '/' + _n(g.max_score):>8}")
    flag = "" if g.contained else f" ({UNCONTAINED})"
    return "\n".join([f"{g.step}: {_n(g.score)} of {_n(g.max_score)}{flag}", *rows, *g.notes])


def shares(line: Line) -> list[str]:
    """Each of a TODO's own tests on a line: its name, passed or failed, core or not, and its
    share of the TODO's weight (a core test that fails also caps the TODO at half)."""
    if not line.tests:
        return []
    share = line.weight / len(line.tests)
    width = min(60, max(len(n.split("::")[-1]) for n, _, _ in line.tests))
    earned = share * sum(ok for _, ok, _ in line.tests)
    capped = any(core and not ok for _, ok, core in line.tests) and earned > line.score
    rows = [
        f"TODO({line.todo}): {len(line.tests)} tests, each {_n(share)} of {_n(line.weight)}"
        + (f"; {_n(earned)} passed, {_n(line.score)} kept: a core test fails" if capped else "")
    ]
    for nodeid, ok, core in line.tests:
        name = nodeid.split("::")[-1]
        name = name if len(name) <= width else name[: width - 3] + "..."
        rows.append(
            f"  {name:<{width}}  {'passed' if ok else 'FAILED':<6}  {'core' if core else '    '}"
            f"  {_n(share if ok else 0)}/{_n(share)}"
        )
    return rows


def feedback(g: Grade) -> str:
    """A student's feedback file: the grade table, each TODO's tests and their shares, then the
    check's screen as they would see it."""
    table = text(Grade(g.step, g.lines, [n for n in g.notes if not n.startswith("contained")]))
    tests = [row for line in g.lines for row in ["", *shares(line)] if line.tests]
    return (
        f"{table}\n\nHow to read this: each TODO above is graded alone, on its own tests, with the\n"
        "reference standing in for your other TODOs, so a bug costs only the TODO it is in. A TODO\n"
        "earns the share of its tests that pass; one that fails a core test (its parity, its\n"
        "property or its trap, as the handout names them) earns at most half its weight. The\n"
        "check below ran all your code together, as `check` does on your machine: its counts\n"
        "include tests that stop at, or fail through, another TODO.\n"
        + "\n".join(tests)
        + f"\n\nThe check's screen on your submission:\n{g.screen}"
    )


def _submissions(folder: Path) -> list[Path]:
    return [
        e for e in sorted(folder.iterdir())
        if not e.name.startswith((".", "__MACOSX")) and (e.is_dir() or e.suffix == ".zip")
    ]  # fmt: skip


def _graded(step: str, entry: Path, worker: Worker, g: Grade | None = None) -> Grade:
    """A student's grade in a class, but for its held-out tests (`g`: that grade, its held-out
    tests then run); a fault of the grader's own on their submission is their row, with its
    reason: it never ends the class."""
    started = time.monotonic()
    try:
        return held_out(g, worker) if g else grade(step, entry, worker=worker, later=True)
    except Exception as exc:  # noqa: BLE001 - one submission must not cost the class its CSV
        worker.restart()  # it may have stopped in the middle of a copy's frames
        said = worker.hide(f"{type(exc).__name__}: {exc}")[:SHOWN]
        if g:  # the other TODOs' lines stand; one whose held-out tests did not run earns nothing
            why = f"its held-out tests did not run: the grader failed on this submission ({said})"
            lines = [_zero(n.todo, "not run", inert(why)) if n.todo in g.held else n
                     for n in g.lines]  # fmt: skip
            return replace(g, lines=lines, notes=[*g.notes, inert(why)], held={})
        why = f"not graded: the grader failed on this submission ({said})"
        return _withheld(not_graded(step, why, started), worker.hide)


def class_csv(step: str, folder: Path, limits: Limits, per_test: float, jobs: int = 1,
              heldout: Path | None = None, out: Path | None = None) -> str:  # fmt: skip
    """One CSV line per student: total, max, each TODO's score and reason, containment, files."""
    todos = list(course_step(step).regions())
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    header = ["student", "score", "max_score", *todos, *(f"{t} reason" for t in todos)]
    writer.writerow([*header, "contained", "flagged", "missing files", "stray files", "notes"])
    entries = _submissions(folder)
    if mode().name == "user" and jobs > 1:  # every process of nobody is killed after a copy
        print("user mode grades one submission at a time (--jobs 1)", file=sys.stderr)
        jobs = 1
    chunks = [entries[i :: max(1, jobs)] for i in range(max(1, jobs))]
    graded: dict[Path, Grade] = {}

    # Two passes: every copy whose text a student reads (of every student), then the held-out
    # tests' copies, so no code that ran beside held-out tests runs before a copy a student reads
    def grade_chunk(worker: Worker, chunk: list[Path], finished) -> None:
        for e in chunk:
            graded[e] = finished(e, _graded(step, e, worker, graded.get(e)))

    with contextlib.ExitStack() as stack:
        stack.enter_context(_closed_to_others(folder, *filter(None, [out, heldout])))
        workers = [stack.enter_context(Worker(step, limits, per_test, heldout)) for _ in chunks]
        pool = stack.enter_context(ThreadPoolExecutor(max_workers=len(chunks)))
        for said in ["graded", "held-out tests run"][: 1 + bool(workers[0].heldout)]:
            finished = _progress(len(entries), said)
            list(pool.map(grade_chunk, workers, chunks, [finished] * len(chunks)))
    taken: set[str] = set()
    for entry in entries:
        g = graded[entry]
        name = entry.stem if entry.suffix == ".zip" else entry.name
        name = inert(name)  # a folder's name as unzip made it
        writer.writerow([cell(c) for c in [
            name, _n(g.score), _n(g.max_score),
            *(_n(line.score) for line in g.lines), *(line.reason for line in g.lines),
            "yes" if g.contained else "no (uncontained)", " | ".join([*g.flagged, *g.hidden]), " ".join(g.missing),
            " ".join(g.stray), " | ".join(n for n in g.notes if not n.startswith("contained")),
        ]])  # fmt: skip
        if out:
            (out / _file_name(name, taken)).write_text(feedback(g) + "\n", encoding="utf-8")
    return buffer.getvalue()


def _file_name(name: str, taken: set[str]) -> str:
    """A student's feedback file: their name cut to what a file system takes (a name of 255
    bytes is refused), then told apart from one already written (alice/ and alice.zip)."""
    cut = name.encode("utf-8")[:120].decode("utf-8", errors="ignore")
    if cut != name:
        cut += "-" + hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    file, n = f"{cut}.txt", 1
    while file in taken:
        n += 1
        file = f"{cut}-{n}.txt"
    taken.add(file)
    return file


def _progress(total: int, what: str):
    """A function that says `3/16 graded alice: 5/7` as each student's grade ends (the class's
    CSV comes only once all are graded), one whole line at a time whatever the jobs."""
    lock, done = threading.Lock(), itertools.count(1)

    def finished(entry: Path, g: Grade) -> Grade:
        with lock:
            later = " so far: held-out tests later" if g.held else ""
            said = (
                f"{next(done)}/{total} {what} {entry.name}: {_n(g.score)}/{_n(g.max_score)}{later}"
            )
            print(said, file=sys.stderr, flush=True)
        return g

    return finished


@contextlib.contextmanager
def _closed_to_others(*folders: Path):
    """User mode: `folders` closed to others while the class is graded, then as they were: the
    user nobody, who runs each copy, could read a classmate's upload (the class folder is in the
    grader's command line) or an earlier run's feedback."""
    kept = {folder: folder.stat().st_mode for folder in folders}
    if mode().name == "user":
        for folder, was in kept.items():
            folder.chmod(was & 0o700)
    try:
        yield
    finally:
        for folder, was in kept.items():
            folder.chmod(was)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m grader.grade", description=__doc__.split("\n")[0]
    )
    add = parser.add_argument
    # fmt: off
    add("step")
    add("submission", nargs="?", type=Path, help="a folder or zip (default: your starter)")
    add("--format", choices=["text", "gradescope"], default="text")
    add("--out", type=Path, help="gradescope: results.json (default ./results.json)")
    add("--class", dest="klass", type=Path, metavar="DIR",
        help="a folder of submissions: one CSV line each")
    add("--feedback", type=Path, metavar="DIR",
        help="with --class: a feedback file per student (default DIR/../feedback)")
    add("--jobs", type=int, default=1, help="with --class: submissions graded at once")
    add("--tests", type=Path, metavar="DIR",
        help="held-out test files (test_*.py, each test marked @pytest.mark.todo('task N'))")
    add("--allow-uncontained", action="store_true",
        help="grade someone else's code (a submission, a class) even where nothing contains it")
    add("--prepare", action="store_true",
        help="only read which tests are each TODO's own, into out/ (the autograder's setup.sh)")
    add("--timeout", type=float, default=PER_TEST, help="CPU seconds per test")
    add("--screen", action="store_true", help="also print the check's screen")
    add("--wall", type=int, default=Limits.wall, help="seconds per submission")
    add("--copy-wall", type=int, default=Limits.copy,
        help="seconds for each TODO's copy, and for the check of the whole submission")
    # fmt: on
    args = parser.parse_args(argv)
    try:
        course_step(args.step, STEPS_DIR)  # a step: a checkpoint has nothing to grade
    except ValueError as exc:
        parser.error(str(exc))
    if args.tests is not None and not args.tests.is_dir():
        parser.error(f"--tests needs a folder of test files, got {args.tests}")
    limits = Limits(wall=args.wall, copy=args.copy_wall, check=args.copy_wall)
    if args.prepare:
        with Worker(args.step, limits, args.timeout, args.tests) as worker:
            owners = Owners.cached(worker, course_step(args.step).regions())
        graded = sum(map(len, owners.tests.values()))
        print(f"{args.step}: {graded} tests graded, {owners.given} of given code")
        return 0
    if args.klass:
        if not args.klass.is_dir():
            parser.error(f"--class needs a folder of submissions, got {args.klass}")
        if not mode().contained and not args.allow_uncontained:
            parser.error(f"{mode().refusal}; add --allow-uncontained to grade a class anyway")
        feedback_dir = args.feedback or args.klass.parent / f"{args.klass.name}-feedback"
        feedback_dir.mkdir(parents=True, exist_ok=True)
        feedback_dir.chmod(0o700)  # yours: a later grade's copies, as nobody, read no classmate's
        klass = (args.step, args.klass, limits, args.timeout, args.jobs, args.tests, feedback_dir)
        sys.stdout.write(class_csv(*klass))
        print(f"feedback files: {shown(feedback_dir)}", file=sys.stderr)
        return 0
    if args.submission is not None and not args.submission.exists():
        parser.error(f"no submission at {args.submission}")
    if args.submission is not None and not mode().contained and not args.allow_uncontained:
        parser.error(f"{mode().refusal}; add --allow-uncontained to grade this submission anyway")
    g = grade(args.step, args.submission, limits, args.timeout, args.tests)
    if args.format == "gradescope":
        out = args.out or Path("results.json")
        write_json(out, gradescope(g), indent=2)
        print(f"wrote {out}: {_n(g.score)} of {_n(g.max_score)}")
    print(text(g))  # gradescope: stdout, the instructor's view (hidden from students)
    if args.screen:
        print(f"\nThe check's own screen:\n{g.screen}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
