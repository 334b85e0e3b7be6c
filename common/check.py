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
    return lines[-6:] + [f"  {exc.typename}: {(str(exc.value).splitlines() or [''])[0]}"]


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


def _function_place(step: str, region: dict) -> tuple[str, int, str]:
    """(starter file, line, '') of the first function a written TODO lives in."""
    path = _starter_file(step, region)
    name = region["functions"][0].split(".")[-1]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    line = next((n.lineno for n in ast.walk(tree) if getattr(n, "name", None) == name), 1)
    return shown(path), line, ""


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
                        self.codes[code] = (step, todo)
        self.todo_at = {_where(code): todo for code, (_, todo) in self.codes.items()}
        if self.codes and sys.monitoring.get_tool(self.TOOL) is None:
            sys.monitoring.use_tool_id(self.TOOL, "course-check")
            sys.monitoring.register_callback(
                self.TOOL, sys.monitoring.events.PY_START, self._on_start
            )
            for code in self.codes:
                sys.monitoring.set_local_events(self.TOOL, code, sys.monitoring.events.PY_START)

    def _on_start(self, code, offset):
        if code in self.codes:
            self.entered.add(self.codes[code][1])
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
            inner = [self.todo_at[f] for f in frames if f in self.todo_at]
            last = max(self.entered, key=order_key, default=None)  # the latest task it reached
            self.results[report.nodeid] = {
                "outcome": report.outcome,
                "step": getattr(report, "step", None),
                "todo": getattr(report, "todo", None),
                "bug": getattr(report, "bug", None),
                "entered": set(self.entered),
                # whose failure: the TODO it names, else the innermost TODO frame, else the latest
                "blame": getattr(report, "todo", None) or (inner[-1] if inner else last),
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

    def step_lines(self, step: str, progress: bool) -> list[str]:
        """The summary of one step: its TODO table, its bugs and what to write next."""
        results = {n: r for n, r in self.results.items() if r["step"] == step}
        todos, still = self.regions[step], _open_todos(step)
        still |= _shipped_bugs(step, todos)
        held = Counter(r["todo"] for r in results.values() if r["todo"])
        status, failing = {}, Counter()
        for r in results.values():
            if r["outcome"] == "failed" and not r["todo"]:
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
        where = still.get(nxt) or _function_place(step, todos[nxt]) if nxt else None
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
        bugs = [(n, r["bug"]) for n, r in results.items() if r["bug"]]
        bugs.sort(key=lambda b: bool(WHOLE_RUNS.search(b[0])))  # tests of the code come first
        if bugs:
            many = f"{len(bugs)} failures are bugs" if len(bugs) > 1 else "1 failure is a bug"
            lines += ["", f"{many}, not a TODO (shortened; -v shows all):"]
            for nodeid, tb in bugs[:3]:
                lines += [nodeid, *tb]
            lines += [f"{nodeid}: {tb[-1].strip()}" for nodeid, tb in bugs[3:]]
        if nxt:
            file, line, message = where
            contract = message[TODO.match(message).end() :].lstrip(": ") if message else ""
            lines += ["", f"Next: TODO({nxt}) at {file}:{line}"]
            lines += textwrap.wrap(contract, 96, initial_indent="  ", subsequent_indent="  ")
            if not message:  # written but failing: its first failure is the place to start
                lines.append(f"  {failing[nxt]} of its tests fail; the first is shown above")
            mine = [n for n, r in results.items() if r["outcome"] == "failed" and r["blame"] == nxt]
            mine.sort(key=lambda n: bool(WHOLE_RUNS.search(n)))  # tests of the code first
            first = mine[0] if mine else ""
            name = k_name(first)
            pixi = f"pixi run check-{step}"
            python = f"python -m pytest {shown(STEPS_DIR / step)} --impl starter"
            if name:
                lines.append(f"One test in full: {command(pixi, python)} -v -k {name}")
            more = command(f"pixi run hint {step}", f"python -m common.hint {step}")
            lines.append(f"More help, one level at a time: {more}")
        return lines
