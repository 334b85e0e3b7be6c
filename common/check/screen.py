"""The check's screen: the lines a StepStatus is shown as (one screen; one line with --progress)."""

import os
import re
import textwrap
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from common import check_command, command, counted, run_command, shown
from common.check.status import ERROR_LINE, StepStatus, error_line, message_of, names
from common.course import course, course_step, predictions
from common.course.bugs import Bug
from common.course.todos import order_key, split_id

MARKS = {"done": "[x]", "bug": "[!]", "untested": "[?]"}  # the other states: [ ]


@dataclass(frozen=True)
class RunFacts:
    """What the screen says about the run rather than the code."""

    stopped: str = ""  # why the run stopped early, if it did
    chosen: bool = False  # -k or -m chose the tests
    renamed: dict[str, str] = field(default_factory=dict)  # TODO -> "file name" it no longer has


def symptom_rows(step: str) -> list[Bug]:
    """The step's curated bugs (its bugs.py), its handout's symptom rows; none for a fixture's."""
    try:
        return course_step(step).bugs()
    except ValueError:
        return []


def symptom_tests(step: str) -> set[tuple[str, str, tuple[str, ...]]]:
    """The tests the symptom rows fail first (file::function, or function; no case), each with
    the words its failure says for that row and the tests that row's bug passes."""
    return {(bug.fails.split("[")[0], bug.says, bug.passes) for bug in symptom_rows(step)}


def _fails(row_test: str, failures: dict[str, str]) -> list[str]:
    """The errors of the failures that a table's test names."""
    return [error for nodeid, error in failures.items() if names(row_test, nodeid)]


def recognised(rows: list[Bug], failures: dict[str, str]) -> list[Bug]:
    """The rows whose test fails saying the row's words while the tests it passes pass (none after a
    test out of time: a loop is no row's bug)."""
    if any("TookTooLong" in error for error in failures.values()):
        return []
    return [
        r
        for r in rows
        if any(r.says in error for error in _fails(r.fails, failures))
        and not any(_fails(test, failures) for test in r.passes)
    ]


WIDTH = 100  # columns of every line the check prints


TODO_ID = re.compile(r"(?:[Nn]ext: )?TODO\([^()]{1,60}\)")  # a TODO's whole id (and its "next:")


def fit(lines: list[str], width: int = WIDTH) -> list[str]:
    """Each line in `width` columns, wrapped at its words, a continuation 2 deeper than its line
    (a word wider than the line alone, a long path or test id, is broken where it must be); a
    name's value (`T = 10`) is never cut."""
    fitted_lines = []
    for line in lines:
        for part in line.split("\n"):
            if len(part) <= width:
                fitted_lines.append(part)
                continue
            indent = " " * (len(part) - len(part.lstrip(" ")) + 2)
            kept = _glued(part.replace(" = ", "\0=\0"))  # "len(data) - T = 10" stays whole
            kept = TODO_ID.sub(
                lambda m: m[0].replace(" ", "\1"), kept
            )  # so does "TODO(lab-02 task 2: ...)"
            kept = " ".join(_breakable(word, width - len(indent)) for word in kept.split(" "))
            wrapped = textwrap.wrap(kept, width, subsequent_indent=indent, break_on_hyphens=False)
            fitted_lines += [w.replace("\0", " ").replace("\1", " ") for w in wrapped]
    return fitted_lines


VALUED = re.compile(r"(\S) ([-+*/]) (\S+\0=\0)")  # an operator inside a named value's name


def _glued(text: str) -> str:
    """`len(data) - T\0=\044` with its operators' spaces held too, so no wrap splits the name."""
    while (joined := VALUED.sub(lambda m: f"{m[1]}\0{m[2]}\0{m[3]}", text)) != text:
        text = joined
    return text


def _breakable(word: str, room: int) -> str:
    """A word wider than `room` (a test's id) with a space after its last `::` or `/` that fits:
    broken there, at its parts, rather than inside a name."""
    cuts = [word.rfind(sep, 0, room - len(sep)) + len(sep) for sep in ("::", "/")]
    end = max(cuts)
    if len(word) <= room or end <= 1:
        return word
    return word[:end] + " " + _breakable(word[end:], room)


def _wrapped(text: str, first: str) -> list[str]:
    """A row's text in lines of the screen's width, the first after `first`."""
    return textwrap.wrap(text, 96, initial_indent=first, subsequent_indent="    ")


SHOWN_ROWS = 3  # rows a failure shared by several bugs lists; the handout's table has them all


def symptom_lines(step: str, failures: dict[str, str]) -> list[str]:
    """The rows these failures (nodeid -> error) are: one row, or "one of these" and the rows."""
    rows = recognised(symptom_rows(step), failures)
    if len(rows) == 1:
        return _wrapped(f"Symptom table: {rows[0].breaks}; fix: {rows[0].fix}", "  ")
    lines = [f"  Symptom table, one of these {len(rows)} bugs:"] if rows else []
    for r in rows[:SHOWN_ROWS]:
        lines += _wrapped(f"{r.breaks}; fix: {r.fix}", "  - ")
    if len(rows) > SHOWN_ROWS:
        lines.append(f"  - and {len(rows) - SHOWN_ROWS} more: the handout's symptom table")
    return lines


def next_step(step: str) -> str | None:
    """The step after `step` in course order, and where its handout is (None after the last)."""
    try:
        steps = [s for s in course() if not s.checkpoint]
        order = next(s.order for s in steps if s.name == step)
    except (StopIteration, OSError, ValueError):  # a step without its step.toml: no course order
        return None
    after = next((s for s in steps if s.order > order), None)
    return after and f"{after.name}, {after.title}: read {shown(after.folder / 'README.md')}"


def k_name(nodeid: str) -> str:
    """What `-k` needs to pick this one test, quoted for any shell."""
    name = nodeid.split("::")[-1]
    if re.fullmatch(r"[\w.-]+(\[[\w.-]+\])?", name):
        return f'"{name}"' if "[" in name else name  # [...] is a glob pattern to the shell
    # an id -k cannot parse ("[PyTorch's default init]"): the function and the id's words
    function, _, case = name.partition("[")
    words = [w for w in re.findall(r"[\w.-]+", case) if w not in KEYWORDS]
    words = [w for w in words if len(w) > 1] or words  # the s of "PyTorch's" picks nothing
    return '"' + " and ".join([function, *words]) + '"'


KEYWORDS = ("and", "or", "not")  # words of a -k expression, not names


def _waiting(n: int, verb: str = "wait for it") -> str:
    """'3 tests wait for it', '1 test waits for it', or what a TODO with none ahead of it says."""
    if n == 0:
        return "not written yet (its tests stop at an earlier TODO)"
    return counted(n, "test", verb)


def _none_ran(todo: str, earlier: list, run: RunFacts, what: str = "not written yet ({})") -> str:
    """What a TODO none of whose tests reached it says: the real reason, not a guess."""
    if todo in run.renamed:
        file, name = run.renamed[todo].rsplit(" ", 1)
        return f"{file} has no {name} (renamed or deleted?): its tests call it by that name"
    if run.stopped:
        reason = "none of its tests ran before the run stopped"
    elif run.chosen:
        reason = "none of its tests were chosen by -k or -m"
    elif earlier:
        reason = "its tests stop at an earlier TODO"
    else:
        reason = "no test reached it: is a test file missing?"
    return what.format(reason)


def summary(status: StepStatus) -> str:
    """'3 of 7 required TODOs done; 20 of 60 tests pass', with the optional ones and given code."""
    todos, required = status.todos, status.required
    done = sum(s.state == "done" for s in todos.values())
    done_required = sum(todos[t].state == "done" for t in required)
    optional = len(todos) - len(required)
    return (
        f"{done_required} of {len(required)} required TODOs done"
        + (f", {done - done_required} of {optional} optional" if optional else "")
        + f"; {status.passed} of {len(status.results)} tests pass"
        + (f" ({status.given} of them test code the starter gives)" if status.given else "")
    )


def progress_line(status: StepStatus, hints_used: dict[str, int], predicted: str = "") -> str:
    """`--progress`'s line: the summary, hint levels used, predictions written, the next TODO."""
    step, nxt, where = status.step, status.next, status.next_place
    per_todo = [f"{split_id(t)[1]} {n}" for t, n in hints_used.items() if t in status.todos and n]
    hints = f"; hint levels used: {', '.join(per_todo)}" if per_todo else ""
    return f"{step:<9} {summary(status)}{hints}{predicted}" + (
        f"; next: TODO({nxt}) {where.at}" if nxt else ""
    )


def _note(status: StepStatus, todo: str, earlier: list[str], run: RunFacts) -> str:
    """What the screen says after a TODO's mark."""
    s, warned = status.todos[todo], status.warned[todo]
    on_warning = f" ({warned} on a warning, which counts as one)" if warned else ""
    if todo in run.renamed and s.state in ("todo", "untested", "waiting"):
        return _none_ran(todo, earlier, run)
    if s.state == "todo":
        return _waiting(s.waiting) if s.waiting else _none_ran(todo, earlier, run)
    if s.state == "bug":
        return f"written; {s.failing} of its tests fail{'s' if s.failing == 1 else ''}" + on_warning
    if s.state == "optional":
        return "optional; " + _waiting(s.waiting, "skip until you write it")
    if s.state == "exercise":
        if s.failing:
            return f"the exercise: the shipped code has a bug ({s.failing} tests fail)"
        return _none_ran(todo, earlier, run, "the exercise: {}")
    if s.state == "waiting" and (others := _waits_for(status, todo)):
        return f"written; its tests wait for {' and '.join(split_id(t)[1] for t in others)}"
    if s.state == "done" and (others := _waits_for(status, todo)):  # its whole runs held back
        waits = " and ".join(split_id(t)[1] for t in others)
        return f"done; the whole run, tested under it, waits for {waits}"
    return {
        "done": "done",
        "untested": "written; none of its tests ran here",
        "waiting": "written; its tests wait for another TODO",
    }[s.state]


def _waits_for(status: StepStatus, todo: str) -> list[str]:
    """The TODOs its own tests (its marker's) failed for, or a whole run of it waits for."""
    task, others = split_id(todo)[1], set()
    for n, r in status.results.items():
        if r.outcome == "failed" and (r.marked == task or todo in status.held_back.get(n, ())):
            others |= status.held_back.get(n, set()) or {status.owner.get(n)}
    return sorted(others - {todo, None}, key=order_key)


def _todo_lines(status: StepStatus, run: RunFacts) -> list[str]:
    """One line per TODO: its mark and its note."""
    lines, states = [], [s.state for s in status.todos.values()]
    for number, todo in enumerate(status.todos):
        earlier = [s for s in states[:number] if s != "done"]
        mark = MARKS.get(status.todos[todo].state, "[ ]")
        lines.append(f"{mark} TODO({todo}): {_note(status, todo, earlier, run)}")
    return lines


NO_TODO = "in no TODO's code"  # a failure blamed on no TODO: it ran none of the student's functions


def _owner(todo: str | None) -> str:
    """Whose failure it is, as the screen says it: 'TODO(<id>)', or that it is no TODO's."""
    return f"TODO({todo})" if todo else NO_TODO


def _whose(status: StepStatus) -> str:
    """': 2 of TODO(a), 1 in no TODO's code' when the failures shown are not all one TODO's."""
    owners = Counter(status.owner[n] for n in status.shown)
    if len(owners) < 2:
        return ""
    return ": " + ", ".join(
        f"{n} {'of ' if todo else ''}{_owner(todo)}" for todo, n in owners.most_common()
    )


def _bug_lines(status: StepStatus) -> list[str]:
    """The failures that are bugs: the first in full, then three in one line each (two under a
    long test id)."""
    if not status.shown:
        return []
    results, bugs = status.results, status.shown
    many = f"{len(bugs)} failures are bugs" if len(bugs) > 1 else "1 failure is a bug"
    lines = ["", f"{many} in code already written{_whose(status)} (shortened; -v shows all):"]
    if any(results[n].warning for n in bugs):
        lines.append(
            "(a warning counts as a failure: the reference runs without one, and what it "
            "says is worth fixing)"
        )
    first, rest = bugs[0], bugs[1:]
    failures = {n: message_of(results[n].error) for n in bugs}
    symptoms = symptom_lines(status.step, failures)
    error = _without_meaning(results[first].error) if symptoms else results[first].error
    lines += [f"{first} ({_owner(status.owner[first])})", *error]
    lines += _given_lines(results[first])
    lines += symptoms
    for nodeid in rest[:3]:
        message = _summary(results[nodeid].error)
        todo = status.owner[nodeid]
        owner = "" if todo == status.next and todo else f" ({_owner(todo)})"
        head = f"{nodeid}{owner}: "
        if len(head) > WIDTH - 30:  # a long test id: its test function and case (-v has its file)
            head = f"{nodeid.split('::')[-1]}{owner}: "
        if len(head) <= WIDTH - 30:  # one line: its test and its message, shortened
            lines.append(fitted(head, message, WIDTH))
        else:  # a long test id: the message on a line of its own under it
            lines += [head.rstrip(), fitted("    ", message, WIDTH)]
    if len(rest) > 3:
        lines.append(f"... and {len(rest) - 3} more")
    return lines


def _summary(error: list[str]) -> str:
    """A failure in one line: its error line, or for a refusal of torch's (or Python's) the course's
    words for it and the file and line that raised, else that place and the refuser's words
    (in_course_words')."""
    said = error[0].strip() if error else ""
    if not (m := REFUSED.match(said)):
        return error_line(error)
    meaning = error[1].strip() if len(error) > 1 and not ERROR_LINE.match(error[1]) else ""
    place = f"{Path(m['file']).name}:{m['line']}, {m['who']}"
    return f"{meaning} ({place})" if meaning else f"{place}: {error_line(error)}"  # words first


def _without_meaning(error: list[str]) -> list[str]:
    """A refusal's error without the course's general words for it: the symptom row under it
    says what this bug is."""
    said = error[0].strip() if error else ""
    if REFUSED.match(said) and len(error) > 1 and not ERROR_LINE.match(error[1]):
        return [error[0], *error[2:]]
    return error


# in_course_words' first line: "Your line steps/lab-02/starter/kvcache.py:143 ran with ...; torch
# refused it:"
REFUSED = re.compile(
    r"(?:Your line|The course's line) (?P<file>\S+):(?P<line>\d+) ran.*[;,] "
    r"(?P<who>torch|Python) (?:refused it|warned):$"
)


def _given_lines(result) -> list[str]:
    """Where a failure raised in code the course gives, said as such: the cause is in what the
    student's code handed it, not in that line."""
    if not result.given_at or result.raised_at:
        return []
    where = f"{result.given_at.file}:{result.given_at.line}"
    return [f"  It raised in code the course gives ({where}), on what your code gave it."]


def fitted(head: str, message: str, width: int) -> str:
    """`head` and a message in `width` characters: the entry count, then the reason go first."""
    counted_out = re.sub(r" \(\d+ of \d+ entries differ\)", "", message)
    got = counted_out.find(", got ")
    reason = counted_out.find(": ", got) if got >= 0 else -1
    reason_out = counted_out[:reason] if reason >= 0 else counted_out
    for shorter in (message, counted_out, reason_out):
        if len(head + shorter) <= width:
            return head + shorter
    return cut(head + reason_out, width)


def cut(line: str, width: int) -> str:
    """`line` in at most `width` characters, cut after a whole word and marked with "..."."""
    if len(line) <= width:
        return line
    head = line[: width - 4]
    return (head.rsplit(" ", 1)[0] if " " in head[width // 2 :] else head) + " ..."


def _next_lines(status: StepStatus) -> list[str]:
    """Next: the TODO to work on, where, its contract, the one test to run, and the hint command."""
    step, nxt, where = status.step, status.next, status.next_place
    lines = ["", f"Next: TODO({nxt}) at {where.at}"]
    lines += textwrap.wrap(where.contract or "", 96, initial_indent="  ", subsequent_indent="  ")
    if where.end and not where.raised and not where.statement:
        lines.append(f"  lines {where.line}-{where.end}: the test checks what they did together, and"
                     " cannot tell which line is wrong")  # fmt: skip
    if where.contract is None:  # written but failing: its first failure is the place to start
        failing = status.todos[nxt].failing
        said = (
            "1 of its tests fails; it"
            if failing == 1
            else f"{failing} of its tests fail; the first"
        )
        if where.raised:  # what the raising line ran on was made above it
            lines.append(f"  {said} raised on line {where.end}, on what lines {where.line}-"
                         f"{where.end} made or decided")  # fmt: skip
        else:
            lines.append(f"  {said} is shown above")
    if name := k_name(status.first_test) if status.first_test else "":
        lines += typed_lines("One test in full: ", f"{check_command(step)} -v -k {name}")
    if status.unpredicted:  # the handout asks for them before this TODO's run
        slots = ", ".join(status.unpredicted)
        lines.append(f"Predict first, in {shown(predictions.path(step))}: {slots} (still empty)")
    more = command(f"pixi run hint {step}", f"python -m common.hint {step}")
    lines.append(f"More help, one level at a time: {more}")
    return lines


def typed_lines(head: str, typed_command: str, width: int = WIDTH) -> list[str]:
    """`head` and a command to type, in lines of `width`: one line when it fits, else the command
    cut at its words with the shell's line continuation, so the lines paste as one command (a
    quoted -k pattern or a path is never cut)."""
    if len(head + typed_command) <= width:
        return [head + typed_command]
    mark = " `" if os.name == "nt" else " \\"  # PowerShell's continuation; a POSIX shell's
    words = re.findall(r'"[^"]*"|\S+', typed_command)
    lines, line = [], head.rstrip()
    for word in words:
        if len(f"{line} {word}{mark}") > width and line.strip():
            lines.append(line + mark)
            line = "   "
        line += f" {word}"
    return [*lines, line]


def _done_lines(status: StepStatus) -> list[str]:
    """Every required TODO done: the next step; but while a test fails (code the starter gives,
    changed, or an optional TODO), what fails and where instead, never "done"."""
    if status.shown:
        return _still_failing(status)
    todos = status.todos
    done = sum(s.state == "done" for s in todos.values())
    return [
        "Every required TODO is done."
        + (" The optional ones are yours to try." if status.next or len(todos) > done else ""),
        f"Run the step on your code: {run_command(status.step)}",
        *([f"Next step: {after}"] if (after := next_step(status.step)) else []),
    ]


def _still_failing(status: StepStatus) -> list[str]:
    """'Not done yet: ... but 1 test fails in code the starter gives:', then the test and the line
    it failed at (the student's file's, when the traceback passes through one)."""
    first, n = status.shown[0], len(status.shown)
    owner, result = status.owner[first], status.results[first]
    given = not owner and result.given  # it passes on the starter as shipped (a contract)
    whose = "in code the starter gives" if given else f"in {_owner(owner)}" if owner else NO_TODO
    frames = [line.strip() for line in result.error if re.match(r"  \S+:\d+ in \S+$", line)]
    starter = [f for f in frames if "/starter/" in f] or frames  # the student's file first
    fails = "1 test fails" if n == 1 else f"{n} tests fail, the first"
    why = "; it passes on the starter as shipped: was that code changed?" if given else ""
    return [
        f"Not done yet: the required TODOs pass their own tests, but {fails} {whose}:",
        f"  {first}" + (f", at {starter[-1]}" if starter else "") + f" (shown below{why})",
    ]


def step_lines(status: StepStatus, run: RunFacts) -> list[str]:
    """The summary of one step: its TODO table, its bugs and what to write next."""
    todos, nxt = status.todos, status.next
    lines = [f"{status.step} with your starter: {summary(status)}", ""]
    if all(todos[t].state == "done" for t in status.required):
        lines[1:1] = _done_lines(status)
    lines += _todo_lines(status, run)
    lines += _bug_lines(status)
    if status.held_back:
        waits = sorted({t for n in status.held_back for t in status.held_back[n]}, key=order_key)
        held = len(status.held_back)
        tests = "1 test of a whole run" if held == 1 else f"{held} tests of whole runs"
        lines += [
            "",
            f"{tests} {'is' if held == 1 else 'are'} held back until "
            f"{', '.join(f'TODO({t})' for t in waits)} pass{'es' if len(waits) == 1 else ''}",
        ]
    if nxt:
        lines += _next_lines(status)
    return fit(lines)
