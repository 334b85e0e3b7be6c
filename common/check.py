"""The student's check, a pytest plugin the root conftest.py loads: `--impl starter` prints what
is done, what to write next, and real bugs; a starter that won't import is one line."""

import ast
import functools
import re
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from common import STEPS_DIR, WHOLE_RUNS, command, hint, shown
from common.loader import ImplImportError, check_syntax, load, step_names
from common.todos import (
    TODO,
    module_name,
    optional,
    order_key,
    split_id,
    step_regions,
    todo_in,
)


def pytest_configure(config):
    """`--impl starter` without -v or --full: the student's summary replaces pytest's report."""
    if config.getoption("--impl") == "starter" and (
        config.getoption("--progress")
        or not (config.option.verbose > 0 or config.getoption("--full"))
    ):
        if getattr(config.option, "numprocesses", None):  # tests would run in other processes
            raise pytest.UsageError(
                "the check's summary needs one process: drop -n (or add --full)"
            )
        config.pluginmanager.register(StudentCheck(config), "student-check")


STEPS_UNDER_TEST = pytest.StashKey[list[str]]()


def _steps_under_test(config) -> list[str]:
    """Steps whose folder is inside, or contains, a path given on the command line."""
    paths = [Path(a.split("::")[0]).resolve() for a in config.args] or [Path.cwd()]
    chosen = []
    for step in step_names():
        folder = (STEPS_DIR / step).resolve()
        if any(p.is_relative_to(folder) or folder.is_relative_to(p) for p in paths):
            chosen.append(step)
    return chosen


def pytest_sessionstart(session):
    """Import every module of the chosen implementation first, so a broken file is one line."""
    impl = session.config.getoption("--impl")
    session.config.stash[STEPS_UNDER_TEST] = _steps_under_test(session.config)
    # pytest-xdist's controller runs no tests: it checks syntax only, and leaves torch to the workers
    controller = session.config.pluginmanager.has_plugin("dsession")
    for step in session.config.stash[STEPS_UNDER_TEST]:
        folder = STEPS_DIR / step / impl
        for path in sorted(folder.rglob("*.py")):
            module = module_name(folder, path)
            try:
                check_syntax(path) if controller else load(step, module, impl)
            except ImplImportError as exc:
                raise pytest.UsageError(str(exc)) from None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """An optional TODO not written yet skips its tests instead of failing them."""
    report = yield
    report.step = _step_of(item.path)
    report.given = item.get_closest_marker("given") is not None
    exc = call.excinfo
    if exc and exc.errisinstance(NotImplementedError) and (todo := todo_in(str(exc.value))):
        report.todo = todo
        if optional(todo):
            where = exc.traceback[-1]
            report.outcome = "skipped"
            report.longrepr = (
                str(where.path),
                where.lineno + 1,
                f"optional TODO({todo}) not written",
            )
    elif exc and report.failed:
        report.bug = _short_traceback(exc)
        # (file, first line) of each frame, not code objects: xdist sends reports between processes
        report.frames = [_where(entry.frame.code.raw) for entry in exc.traceback]
        report.lines = [(str(entry.path), entry.lineno + 1) for entry in exc.traceback]
    return report


@functools.cache
def _step_of(path: Path) -> str | None:
    """The step a test file belongs to (None outside steps/); asked three times per test."""
    path = path.resolve()
    return path.relative_to(STEPS_DIR).parts[0] if path.is_relative_to(STEPS_DIR) else None


def _where(code) -> tuple[str, int]:
    """A function's code, as plain data: (file, first line)."""
    return code.co_filename, code.co_firstlineno


def k_name(nodeid: str) -> str:
    """What `-k` needs to pick this one test, quoted for any shell."""
    name = nodeid.split("::")[-1]
    if not re.fullmatch(r"[\w.-]+(\[[\w.-]+\])?", name):
        name = name.split("[")[0]  # an id -k cannot parse: all of the function's cases
    return f'"{name}"' if "[" in name else name  # [...] is a glob pattern to the shell


def _short_traceback(exc) -> list[str]:
    """The course's frames of a failure (file:line, function, source line) and the error."""
    lines = []
    for entry in exc.traceback:
        path = Path(entry.path)  # torch's, pytest's and Python's own frames are left out
        libraries = {"site-packages", "dist-packages"} & set(path.parts)
        if not libraries and not path.is_relative_to(sys.base_prefix) and path.suffix == ".py":
            where = f"{shown(path)}:{entry.lineno + 1}"
            lines += [f"  {where} in {entry.name}", f"      {str(entry.statement).strip()}"]
    # the message's detail lines too (torch's "Greatest absolute difference", pytest's Regex/Input)
    message = [line.rstrip() for line in str(exc.value).splitlines() if line.strip()] or [""]
    detail = [line for line in message[1:] if not line.strip().startswith("+")]  # not "+ where"
    return (
        lines[-6:]
        + [f"  {exc.typename}: {message[0]}"]
        + [f"    {line.strip()}"[:120] for line in detail[:DETAIL]]
    )


DETAIL = 3  # detail lines of an error's message shown under its first line


@functools.cache
def _given_lines(solution: Path) -> frozenset[str]:
    """The lines of a solution file outside its TODO regions: code the starter gives."""
    from common.todos import parse

    kept, _ = parse(solution.read_text(encoding="utf-8"), str(solution))
    return frozenset(k.strip() for k in kept if k and k.strip() and not k.strip().startswith("#"))


def _solution_of(path: Path) -> Path | None:
    """The solution file of a starter file (None outside a step's starter)."""
    if not path.is_relative_to(STEPS_DIR):
        return None
    parts = path.relative_to(STEPS_DIR).parts
    if len(parts) < 3 or parts[1] != "starter":
        return None
    return STEPS_DIR / parts[0] / "solution" / Path(*parts[2:])


@functools.cache
def _source(path: Path) -> tuple[str, ...]:
    """A file's lines (the check reads each starter file once per run)."""
    return tuple(path.read_text(encoding="utf-8", errors="replace").splitlines())


def _student_line(path: Path, line: int) -> bool:
    """Is line `line` of a starter file the student's code, not a line the starter gives?"""
    solution = _solution_of(path)
    if solution is None or not solution.is_file() or line > len(_source(path)):
        return False
    return _source(path)[line - 1].strip() not in _given_lines(solution)


def _first_student_line(step: str, region: dict, function: str) -> tuple[str, int, str]:
    """(starter file, line, '') of the first line the student wrote in `function`."""
    path = _starter_file(step, region)
    node = ast.parse("\n".join(_source(path)))
    for part in function.split("."):  # "MultiHeadSelfAttention.forward": the class, then the method
        body = getattr(node, "body", [])
        node = next((n for n in body if getattr(n, "name", None) == part), None)
    if node is None:
        return shown(path), 1, ""
    for line in range(node.body[0].lineno, node.end_lineno + 1):
        text = _source(path)[line - 1].strip()
        if text and not text.startswith("#") and _student_line(path, line):
            return shown(path), line, ""
    return shown(path), node.lineno, ""


def _symptoms(step: str) -> list[list[str]]:
    """The rows of the step's symptom table (symptom, first test to fail, fix), if it has one."""
    from common.docs import parse_table, read_block

    try:
        return parse_table(read_block(STEPS_DIR / step / "README.md", "symptoms"))
    except (OSError, ValueError, KeyError, IndexError):
        return []


def _symptom_lines(step: str, nodeid: str) -> list[str]:
    """The symptom table's rows whose first failing test is this one (at most two)."""
    test = nodeid.rsplit("tests/", 1)[-1].split("[")[0]
    rows = [r for r in _symptoms(step) if len(r) == 3 and r[1].split("[")[0] == test]
    return [
        line
        for r in rows[:2]
        for line in textwrap.wrap(
            f"Symptom table: {r[0]}; fix: {r[2]}", 96, initial_indent="  ", subsequent_indent="    "
        )[:3]
    ]


# --- the student's check -------------------------------------------------------------------------


def _waiting(n: int, verb: str = "wait for it") -> str:
    """'3 tests wait for it', '1 test waits for it', or what a TODO with none ahead of it says."""
    if n == 0:
        return "not written yet (its tests stop at an earlier TODO)"
    return (
        f"{n} tests {verb}"
        if n > 1
        else f"1 test {verb.replace('wait ', 'waits ').replace('skip ', 'skips ')}"
    )


def _starter_file(step: str, region: dict) -> Path:
    """The starter file that holds a TODO region of the solution."""
    return STEPS_DIR / step / "starter" / region["file"].relative_to(STEPS_DIR / step / "solution")


def _regions(step: str) -> dict[str, dict]:
    """TODO id -> its module, the functions it is written in, its file; in course order."""
    return step_regions(STEPS_DIR / step / "solution")


def _shipped_bugs(step: str, todos: dict) -> dict[str, tuple[str, int, str]]:
    """Like _open_todos, for exercises that ship buggy code: open while that code is unchanged."""
    found = {}
    for todo, region in todos.items():
        if not region.get("shipped"):
            continue
        path = _starter_file(step, region)
        lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
        if region["shipped"][0] in lines:
            message = f"TODO({todo}): this code ships with a bug; run the exercise, then repair it"
            found[todo] = (shown(path), lines.index(region["shipped"][0]) + 1, message)
    return found


def _open_todos(step: str) -> dict[str, tuple[str, int, str]]:
    """TODO id -> (starter file, line, message) for every NotImplementedError still in the starter."""
    found = {}
    folder = STEPS_DIR / step / "starter"
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
                arg = node.exc.args[0]
                text = arg.value if isinstance(arg, ast.Constant) else ""
                if isinstance(text, str) and (m := TODO.match(text)):
                    found.setdefault(m[1], (shown(path), node.lineno, text))
    return found


class StudentCheck:
    """`--impl starter`: a table of the step's TODOs, the next one to write, and real bugs."""

    TOOL = 4  # a sys.monitoring tool id that coverage (1) and debuggers (0) leave free

    def __init__(self, config):
        self.config = config
        self.results: dict[str, dict] = {}  # nodeid -> outcome, step, todo, bug, entered
        self.codes: dict = {}  # code object of a TODO function -> (step, TODO id)
        self.todo_at: dict = {}  # the same functions' (file, first line) -> TODO id
        self.entered: set = set()
        self.broken: list[str] = []  # test files that could not be collected
        self.regions: dict[str, dict] = {}  # step -> its TODO regions, read once

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session):
        """Quiet pytest's own report, and watch which TODO functions each test runs."""
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        self.config.option.tbstyle, self.config.option.verbose = "no", -1
        if reporter:
            reporter.reportchars = ""
        for step in self.config.stash.get(STEPS_UNDER_TEST, []):
            self.regions[step] = _regions(step)
            for todo, region in self.regions[step].items():
                module = load(step, region["module"], "starter")
                for name in region["functions"]:
                    obj = module
                    for part in name.split("."):
                        obj = getattr(obj, part, None)
                    if code := getattr(obj, "__code__", None):
                        self.codes[code] = (step, todo, name)
        self.todo_at = {_where(code): todo for code, (_, todo, _) in self.codes.items()}
        if self.codes and sys.monitoring.get_tool(self.TOOL) is None:
            sys.monitoring.use_tool_id(self.TOOL, "course-check")
            sys.monitoring.register_callback(
                self.TOOL, sys.monitoring.events.PY_START, self._on_start
            )
            for code in self.codes:
                sys.monitoring.set_local_events(self.TOOL, code, sys.monitoring.events.PY_START)

    def _on_start(self, code, offset):
        if code in self.codes:
            self.entered.add(self.codes[code][1:])  # (TODO id, function)
        return sys.monitoring.DISABLE  # once per test is enough; restart_events re-arms it

    def pytest_unconfigure(self, config):
        if sys.monitoring.get_tool(self.TOOL) == "course-check":  # leave nothing armed behind
            for code in self.codes:
                sys.monitoring.set_local_events(self.TOOL, code, 0)
            sys.monitoring.register_callback(self.TOOL, sys.monitoring.events.PY_START, None)
            sys.monitoring.free_tool_id(self.TOOL)

    def pytest_runtest_logstart(self, nodeid, location):
        self.entered = set()
        sys.monitoring.restart_events()

    def pytest_collectreport(self, report):
        if report.failed:  # a test file that does not import: say which, and why
            self.broken.append(f"{report.nodeid}: {report.longreprtext.strip().splitlines()[-1]}")

    def pytest_report_teststatus(self, report, config):
        """No progress dots: the summary says it all (setup and teardown count for nothing)."""
        return (report.outcome if report.when == "call" or not report.passed else ""), "", ""

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or not report.passed:
            frames = getattr(report, "frames", [])
            lines = getattr(report, "lines", [None] * len(frames))
            raised = None  # (TODO, function, file, line): the innermost line the student wrote
            for frame, (path, line) in reversed(list(zip(frames, lines, strict=True))):
                if frame in self.todo_at and _student_line(Path(path), line):
                    fn = next(n for c, (_, t, n) in self.codes.items() if _where(c) == frame)
                    raised = (self.todo_at[frame], fn, shown(Path(path)), line)
                    break
            self.results[report.nodeid] = {
                "outcome": report.outcome,
                "step": getattr(report, "step", None),
                "todo": getattr(report, "todo", None),
                "bug": getattr(report, "bug", None),
                "entered": {todo for todo, _ in self.entered},
                "fns": set(self.entered),
                "raised": raised,
                "blame": getattr(report, "todo", None),  # set for every failure in step_lines
                "given": getattr(report, "given", False),
            }

    def pytest_terminal_summary(self, terminalreporter):
        write = terminalreporter.write_line
        for line in self.broken:
            write(f"could not collect {line}")
        progress = self.config.getoption("--progress")
        for step in self.config.stash.get(STEPS_UNDER_TEST, []):
            lines = self.step_lines(step, progress)
            for line in lines:
                write(line)
        others = [n for n, r in self.results.items() if r["step"] is None and r["bug"]]
        for nodeid in others:
            write(f"{nodeid}: {self.results[nodeid]['bug'][-1].strip()}")

    def pytest_sessionfinish(self, session):
        if (
            self.config.getoption("--progress")
            and session.exitstatus == pytest.ExitCode.TESTS_FAILED
        ):
            session.exitstatus = 0  # progress is a report: failing tests are not a red check

    def blame(self, step: str, results: dict, todos: dict, still: dict) -> dict[str, set]:
        """Set each failure's TODO (and function); return the whole-run tests held back.

        A failure belongs to the TODO whose code raised it (the innermost line the student
        wrote); else to the earliest function it ran that is wrong on its own. A function is
        wrong on its own when a test fails that ran it and no function the course puts after
        it, except ones already found right. So a bug in an earlier TODO is named, not the later
        TODO whose tests it breaks. Tests of whole runs wait while a TODO they ran is not right.
        """
        failed = {n: r for n, r in results.items() if r["outcome"] == "failed" and not r["todo"]}
        order = [(t, f) for t in todos for f in dict.fromkeys(todos[t]["functions"])]
        right, wrong = set(), []
        for fn in order:
            if fn[0] in still:
                continue
            own = any(r["raised"] and r["raised"][:2] == fn for r in failed.values()) or any(
                fn in r["fns"] and r["fns"] <= right | {fn}
                for n, r in failed.items()
                if not WHOLE_RUNS.search(n)
            )
            wrong.append(fn) if own else right.add(fn)
        for r in failed.values():
            first = next((fn for fn in wrong if fn in r["fns"]), None)
            latest = max(r["fns"], key=lambda fn: order.index(fn), default=(None, None))
            r["where"] = r["raised"][:2] if r["raised"] else first or latest
            r["blame"] = r["where"][0]
        return {
            n: {t for t, _ in r["fns"] - right}
            for n, r in failed.items()
            if WHOLE_RUNS.search(n) and r["fns"] - right
        }

    def bug_place(self, step: str, results: dict, todos: dict, todo: str) -> tuple[str, int, str]:
        """Where to look for a written TODO's bug: the line that raised, else its function's start."""
        mine = sorted(
            (r for r in results.values() if r.get("blame") == todo and r["outcome"] == "failed"),
            key=lambda r: (r["raised"] is None, len(r["fns"])),
        )
        if mine and mine[0]["raised"]:
            _, _, file, line = mine[0]["raised"]
            return file, line, ""
        function = mine[0]["where"][1] if mine else todos[todo]["functions"][0]
        return _first_student_line(step, todos[todo], function)

    @staticmethod
    def bug_order(bug: tuple[str, dict], nxt: str | None, known: set[str]) -> tuple:
        """The next TODO's failures first: raised ones, then those that ran the fewest functions,
        then those the symptom table names."""
        nodeid, r = bug
        return (
            r["blame"] != nxt,
            bool(WHOLE_RUNS.search(nodeid)),
            r["raised"] is None,
            len(r["fns"]),
            nodeid.rsplit("tests/", 1)[-1].split("[")[0] not in known,
            nodeid,
        )

    def step_lines(self, step: str, progress: bool) -> list[str]:
        """The summary of one step: its TODO table, its bugs and what to write next."""
        results = {n: r for n, r in self.results.items() if r["step"] == step}
        todos, still = self.regions[step], _open_todos(step)
        still |= _shipped_bugs(step, todos)
        held = Counter(r["todo"] for r in results.values() if r["todo"])
        held_back = self.blame(step, results, todos, still)
        status, failing = {}, Counter()
        for n, r in results.items():
            if r["outcome"] == "failed" and not r["todo"] and n not in held_back:
                failing[r["blame"]] += 1
        for todo in todos:
            ran = [r for r in results.values() if todo in r["entered"]]
            if todo in still and todos[todo].get("shipped"):
                status[todo] = "exercise"  # ships with a bug: open until its code changes
            elif todo in still:
                status[todo] = "optional" if optional(todo) else "todo"
            elif failing[todo]:
                status[todo] = "bug"
            elif not any(r["outcome"] == "passed" for r in ran):  # none ran, or all wait
                status[todo] = "waiting" if ran else "untested"
            else:  # written, and no failure is its own: tests held by another TODO are not
                status[todo] = "done"
        passed = sum(r["outcome"] == "passed" for r in results.values())
        given = sum(r["outcome"] == "passed" and r["given"] for r in results.values())
        done = sum(s == "done" for s in status.values())
        required = [t for t in todos if not optional(t)]
        left = [t for t in required if status[t] != "done"]
        nxt = next((t for t, s in status.items() if s in ("todo", "bug", "exercise")), None)
        where = (still.get(nxt) or self.bug_place(step, results, todos, nxt)) if nxt else None
        summary = (
            f"{len(required) - len(left)} of {len(required)} required TODOs done"
            + (
                f", {done - len(required) + len(left)} of {len(todos) - len(required)} optional"
                if len(todos) > len(required)
                else ""
            )
            + f"; {passed} of {len(results)} tests pass"
            + (f" ({given} of them test code the starter gives)" if given else "")
        )
        if progress:
            used = hint.read_state(hint.state_file(step))  # levels each TODO asked for
            per_todo = [f"{split_id(t)[1]} {n}" for t, n in used.items() if t in todos and n]
            hints = f"; hint levels used: {', '.join(per_todo)}" if per_todo else ""
            return [
                f"{step:<9} {summary}{hints}"
                + (f"; next: TODO({nxt}) {where[0]}:{where[1]}" if nxt else "")
            ]
        lines = [f"{step} with your starter: {summary}", ""]
        if not left:
            lines[1:1] = [
                "Every required TODO is done."
                + (" The optional ones are yours to try." if nxt or len(todos) > done else "")
            ]
        marks = {"done": "[x]", "todo": "[ ]", "bug": "[!]", "optional": "[ ]", "untested": "[?]"}
        marks["waiting"] = marks["exercise"] = "[ ]"
        for todo, state in status.items():
            note = {
                "todo": _waiting(held[todo]),
                "bug": f"written; {failing[todo]} of its tests fail",
                "optional": "optional; " + _waiting(held[todo], "skip until you write it"),
                "exercise": f"the exercise: the shipped code has a bug ({failing[todo]} tests fail)"
                if failing[todo]
                else "the exercise: its tests stop at an earlier TODO",
                "done": "done",
                "untested": "written; none of its tests ran here",
                "waiting": "written; its tests wait for another TODO",
            }[state]
            lines.append(f"{marks[state]} TODO({todo}): {note}")
        bugs = [(n, r) for n, r in results.items() if r["bug"] and n not in held_back]
        known = {r[1].split("[")[0] for r in _symptoms(step) if len(r) == 3}  # in its table
        bugs.sort(key=lambda b: self.bug_order(b, nxt, known))  # the next TODO's, simplest first
        if bugs:
            many = f"{len(bugs)} failures are bugs" if len(bugs) > 1 else "1 failure is a bug"
            lines += ["", f"{many}, not a TODO (shortened; -v shows all):"]
            (nodeid, first), rest = bugs[0], bugs[1:]
            lines += [f"{nodeid} (TODO({first['blame']}))", *first["bug"]]
            lines += _symptom_lines(step, nodeid)
            for nodeid, r in rest[:3]:
                error = [line for line in r["bug"] if re.match(r"  [^ ]", line)]
                error = [line for line in error if not re.match(r"  \S+:\d+ in \S+$", line)]
                message = error[-1].strip() if error else ""
                whose = "" if r["blame"] == nxt else f" (TODO({r['blame']}))"
                lines.append(f"{nodeid}{whose}: {message}"[:160])
            if len(rest) > 3:
                lines.append(f"... and {len(rest) - 3} more")
        if held_back:
            waits = sorted({t for n in held_back for t in held_back[n]}, key=order_key)
            lines += [
                "",
                f"{len(held_back)} tests of whole runs (docs, run, experiments) are held back "
                f"until {', '.join(f'TODO({t})' for t in waits)} pass{'es' if len(waits) == 1 else ''}",
            ]
        if nxt:
            file, line, message = where
            contract = message[TODO.match(message).end() :].lstrip(": ") if message else ""
            lines += ["", f"Next: TODO({nxt}) at {file}:{line}"]
            lines += textwrap.wrap(contract, 96, initial_indent="  ", subsequent_indent="  ")
            if not message:  # written but failing: its first failure is the place to start
                lines.append(f"  {failing[nxt]} of its tests fail; the first is shown above")
            mine = [n for n, r in bugs if r["blame"] == nxt]  # in the order shown above
            waits = [n for n, r in results.items() if r["outcome"] == "failed" and r["todo"] == nxt]
            waits.sort(key=lambda n: bool(WHOLE_RUNS.search(n)))  # tests of the code first
            first = (mine or waits or [""])[0]
            name = k_name(first)
            pixi = f"pixi run check-{step}"
            python = f"python -m pytest {shown(STEPS_DIR / step)} --impl starter"
            if name:
                lines.append(f"One test in full: {command(pixi, python)} -v -k {name}")
            more = command(f"pixi run hint {step}", f"python -m common.hint {step}")
            lines.append(f"More help, one level at a time: {more}")
        return lines
