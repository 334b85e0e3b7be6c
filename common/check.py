"""The student's check, a pytest plugin the root conftest.py loads: `--impl starter` prints what
is done, what to write next, and real bugs; a starter that won't import is one line."""

import ast
import functools
import json
import os
import re
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from common import REPO_ROOT, STEPS_DIR, WHOLE_RUNS, command, hint, shown, typed
from common.course import course
from common.docs import parse_table, read_block
from common.guard import Judges, TookTooLong, Watchdog, allow_exit, refuse_exit
from common.loader import ImplImportError, check_syntax, load, py_files, source, step_names
from common.todos import (
    TODO,
    module_name,
    optional,
    order_key,
    parse,
    split_id,
    step_regions,
    todo_in,
)

TIMEOUT = 10.0  # CPU seconds a test of the check may use (pytest-timeout's --timeout N changes it)


def python_problem() -> str | None:
    """The course runs on Python 3.12: on another one, the command that works, in one line."""
    if sys.version_info[:2] == (3, 12):
        return None
    here = ".".join(map(str, sys.version_info[:3]))
    venv = REPO_ROOT / ".venv" / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    twin = f"{shown(venv)} -m pytest" if venv.is_file() else "python3.12 -m pytest"
    return (
        f"this is Python {here} ({sys.executable}); the course runs on Python 3.12: "
        f"use pixi run test (or pixi run check-<step>), or {twin} with the same arguments"
    )


def _missing_paths(config) -> list[str]:
    """Paths on the command line that do not exist from where pytest was started."""
    start = config.invocation_params.dir
    paths = [a.split("::")[0] for a in config.args if not a.startswith("-")]
    return [p for p in paths if not (start / p).exists()]


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    """`--impl starter` without -v or --full: the student's summary replaces pytest's report."""
    if problem := python_problem():
        raise pytest.UsageError(problem)
    start = config.invocation_params.dir
    if (missing := _missing_paths(config)) and start.resolve().is_relative_to(STEPS_DIR):
        up = os.path.relpath(REPO_ROOT, start)  # steps/lab-01 -> ../..
        raise pytest.UsageError(
            f"{missing[0]} is not there from {shown(start)}/: the commands run from the "
            f"repository's folder: cd {up} and run the command again"
        )
    if config.getoption("--progress") and config.getoption("--impl") != "starter":
        if any(a.startswith("--impl") for a in config.invocation_params.args):
            raise pytest.UsageError("--progress reports your starter: drop --impl solution")
        config.option.impl = "starter"  # progress is about the student's code, never the reference
    if config.getoption("--impl") == "starter" and (
        config.getoption("--progress")
        or not (config.option.verbose > 0 or config.getoption("--full"))
    ):
        if getattr(config.option, "numprocesses", None):  # tests would run in other processes
            raise pytest.UsageError(
                "the check's summary needs one process: drop -n (or add --full)"
            )
        if config.pluginmanager.has_plugin("timeout") and not (
            config.option.timeout is not None or os.environ.get("PYTEST_TIMEOUT")
        ):
            config.option.timeout = TIMEOUT  # pytest-timeout reads it in its own configure, later
        config.pluginmanager.register(StudentCheck(config), "student-check")


STEPS_UNDER_TEST = pytest.StashKey[list[str]]()


def _steps_under_test(config) -> list[str]:
    """Steps whose folder is inside, or contains, a path given on the command line."""
    start = config.invocation_params.dir
    paths = [(start / a.split("::")[0]).resolve() for a in config.args] or [Path.cwd()]
    chosen = []
    for step in step_names():
        folder = (STEPS_DIR / step).resolve()
        if any(
            p.exists() and (p.is_relative_to(folder) or folder.is_relative_to(p)) for p in paths
        ):
            chosen.append(step)
    return chosen


BROKEN = pytest.StashKey[dict[str, str]]()  # step -> the one line that says why it cannot run
JUDGES = pytest.StashKey[Judges]()  # what the tests judge with, as it was before student code ran


def _step_problem(
    step: str, impl: str, controller: bool, judges: Judges | None, limit: float
) -> str | None:
    """Why a step cannot be tested (a missing file, a file that does not import), in one line."""
    folder = STEPS_DIR / step
    solution, mine = folder / "solution", folder / impl
    if not py_files(solution):
        return f"{shown(solution)}/ is missing or empty: restore it (git checkout -- {shown(solution)})"
    if impl == "starter":
        catch_up = command(f"pixi run catch-up {step}", f"python -m common.catchup {step}")
        for path in py_files(solution):
            theirs = mine / path.relative_to(solution)
            if not theirs.is_file():
                gone = shown(theirs if mine.is_dir() else mine) + ("" if mine.is_dir() else "/")
                return (
                    f"{gone} is missing: restore the untouched one (git checkout -- {gone}), "
                    f"or take the reference with {catch_up}"
                )
    for path in py_files(mine):
        try:
            if controller:
                check_syntax(path)
                continue
            with Watchdog(limit or float("inf"), only_in=mine):  # a loop: its line, not importlib's
                load(step, module_name(mine, path), impl)
        except ImplImportError as exc:
            return str(exc)
        if judges and (changed := judges.restore()):
            judges.replaced[step] = f"{shown(path)} replaced {changed} as it was imported"
    return None


def pytest_sessionstart(session):
    """Import every module of the chosen implementation first, so a broken file is one line.

    For the check, a step that cannot run is set aside with its line, and the others still run.
    """
    config = session.config
    impl = config.getoption("--impl")
    config.stash[STEPS_UNDER_TEST] = steps = _steps_under_test(config)
    # pytest-xdist's controller runs no tests: it checks syntax only, and leaves torch to the workers
    controller = config.pluginmanager.has_plugin("dsession")
    checking = config.pluginmanager.has_plugin("student-check")
    judges = None
    if impl == "starter" and not controller:
        for step in steps:  # the reference imports what the starter does (torch), unpatched
            for path in py_files(STEPS_DIR / step / "solution"):
                try:
                    load(step, module_name(STEPS_DIR / step / "solution", path), "solution")
                except ImplImportError:
                    pass  # a broken reference is the maintainers' problem: its tests say so
        config.stash[JUDGES] = judges = Judges()  # before any student code runs
        refuse_exit()  # os._exit() in student code would end Python before any report
    limit = getattr(config.option, "timeout", None)
    limit = TIMEOUT if limit is None else float(limit)  # imports get the tests' limit too
    broken = {s: p for s in steps if (p := _step_problem(s, impl, controller, judges, limit))}
    if broken and (not checking or len(broken) == len(steps)):
        raise pytest.UsageError("\n".join(broken.values()))
    config.stash[BROKEN] = broken


def pytest_unconfigure(config):
    allow_exit()  # os._exit as it was: this process may run more sessions (the repo's own tests)


def pytest_collection_modifyitems(config, items):
    """The tests of a step set aside at the start do not run: its one line says why."""
    if broken := config.stash.get(BROKEN, {}):
        config.hook.pytest_deselected(items=[i for i in items if _step_of(i.path) in broken])
        items[:] = [i for i in items if _step_of(i.path) not in broken]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """An optional TODO not written yet skips its tests instead of failing them."""
    report = yield
    report.step = _step_of(item.path)
    report.given = item.get_closest_marker("given") is not None
    exc = call.excinfo
    judges = item.config.stash.get(JUDGES, None)
    if judges and call.when == "call" and (changed := judges.restore()):
        report.outcome, exc = "failed", None  # it passed only because the judge was replaced
        report.bug = [
            f"  your code replaced {changed} during this test; the check put the original back: "
            "a TODO computes its result, it does not change how the result is checked"
        ]
    if exc and exc.errisinstance(TookTooLong):
        item.session.shouldfail = "a test ran out of time"  # the others would too, one by one
        report.timeout = True
    report.warning = bool(exc and exc.errisinstance(Warning))
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


def next_step(step: str) -> str | None:
    """The step after `step` in course order, and where its handout is (None after the last)."""
    try:
        steps = [s for s in course() if s.folder.parent == STEPS_DIR]
        order = next(s.order for s in steps if s.name == step)
    except (StopIteration, OSError, ValueError):  # a step without its step.toml: no course order
        return None
    later = [s for s in steps if s.order > order]
    return (
        f"{later[0].name}, {later[0].title}: read {shown(later[0].folder / 'README.md')}"
        if later
        else None
    )


# --- the student's check -------------------------------------------------------------------------


def _waiting(n: int, verb: str = "wait for it") -> str:
    """'3 tests wait for it', '1 test waits for it', or what a TODO with none ahead of it says."""
    if n == 0:
        return "not written yet (its tests stop at an earlier TODO)"
    first, rest = verb.split(" ", 1)
    return f"{n} tests {verb}" if n > 1 else f"1 test {first}s {rest}"


def _starter_file(step: str, region: dict) -> Path:
    """The starter file that holds a TODO region of the solution."""
    return STEPS_DIR / step / "starter" / region["file"].relative_to(STEPS_DIR / step / "solution")


def _shipped_bugs(step: str, todos: dict) -> dict[str, tuple[str, int, str]]:
    """Like _open_todos, for exercises that ship buggy code: open while that code is unchanged."""
    found = {}
    for todo, region in todos.items():
        if not region.get("shipped"):
            continue
        path = _starter_file(step, region)
        lines = [line.strip() for line in source(path).splitlines()] if path.is_file() else []
        if region["shipped"][0] in lines:
            message = f"TODO({todo}): this code ships with a bug; run the exercise, then repair it"
            found[todo] = (shown(path), lines.index(region["shipped"][0]) + 1, message)
    return found


def _open_todos(step: str) -> dict[str, tuple[str, int, str]]:
    """TODO id -> (starter file, line, message) for every NotImplementedError still in the starter."""
    found = {}
    folder = STEPS_DIR / step / "starter"
    for path in py_files(folder):  # read as Python reads them: a BOM, a coding cookie
        try:
            tree = ast.parse(source(path))
        except (SyntaxError, ValueError):
            continue  # the loader has said why in one line
        for node in ast.walk(tree):
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
        self.codes: dict = {}  # code object of a TODO function -> (step, TODO id, function)
        self.todo_at: dict = {}  # the same functions' (file, first line) -> (TODO id, function)
        self.entered: set = set()
        self.broken: list[str] = []  # test files that could not be collected
        self.regions: dict[str, dict] = {}  # step -> its TODO regions, read once
        self.renamed: dict[str, str] = {}  # TODO id -> a function of it the starter no longer has
        self.stopped = ""  # why the run stopped early (a test out of time, -x), if it did
        self.interrupted: tuple | None = None  # (step, TODO) that Ctrl-C stopped
        self.current = ""  # the running test's id
        self.model: dict[str, dict] = {}  # step -> TODO -> its state and counts (--check-json)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session):
        """Quiet pytest's own report, and watch which TODO functions each test runs."""
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        self.config.option.tbstyle, self.config.option.verbose = "no", -1
        if reporter:
            reporter.reportchars = ""
        broken = self.config.stash.get(BROKEN, {})
        for step in self.config.stash.get(STEPS_UNDER_TEST, []):
            if step in broken:
                continue
            self.regions[step] = step_regions(STEPS_DIR / step / "solution")
            for todo, region in self.regions[step].items():
                module = load(step, region["module"], "starter")
                for name in region["functions"]:
                    obj = module
                    for part in name.split("."):
                        obj = getattr(obj, part, None)
                    if code := getattr(obj, "__code__", None):
                        self.codes[code] = (step, todo, name)
                    elif obj is None and name:
                        self.renamed.setdefault(
                            todo, f"{shown(_starter_file(step, region))} {name}"
                        )
        self.todo_at = {_where(code): (todo, fn) for code, (_, todo, fn) in self.codes.items()}
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

    @pytest.hookimpl(tryfirst=True)
    def pytest_timeout_set_timer(self, item, settings):
        """pytest-timeout's limit, kept by a watchdog that fails the test and lets the run report.

        (Its own methods either need SIGALRM, which Windows lacks, or end the whole process.)
        """
        item.cancel_timeout = Watchdog(settings.timeout).start().cancel
        return True

    def pytest_unconfigure(self, config):
        if sys.monitoring.get_tool(self.TOOL) == "course-check":  # leave nothing armed behind
            for code in self.codes:
                sys.monitoring.set_local_events(self.TOOL, code, 0)
            sys.monitoring.register_callback(self.TOOL, sys.monitoring.events.PY_START, None)
            sys.monitoring.free_tool_id(self.TOOL)

    def pytest_runtest_logstart(self, nodeid, location):
        self.entered, self.current = set(), nodeid
        sys.monitoring.restart_events()

    def pytest_collectreport(self, report):
        if report.failed:  # a test file that does not import: say which, and why
            self.broken.append(f"{report.nodeid}: {report.longreprtext.strip().splitlines()[-1]}")

    def pytest_report_teststatus(self, report, config):
        """No progress dots: the summary says it all (setup and teardown count for nothing)."""
        return (report.outcome if report.when == "call" or not report.passed else ""), "", ""

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or not report.passed:
            frames = zip(getattr(report, "frames", []), getattr(report, "lines", []), strict=True)
            raised = None  # (TODO, function, file, line): the innermost line the student wrote
            for frame, (path, line) in reversed(list(frames)):
                if frame in self.todo_at and _student_line(Path(path), line):
                    raised = (*self.todo_at[frame], shown(Path(path)), line)
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
                "warning": getattr(report, "warning", False),
            }
            if getattr(report, "timeout", False):
                reached = max((t for t, _ in self.entered), key=order_key, default=None)
                blamed = raised[0] if raised else reached
                where = f"TODO({blamed})" if blamed else "it"
                self.stopped = (
                    f"The check stopped: {report.nodeid} was still running after {TookTooLong.limit:g} s of CPU time, "
                    f"in {where} (a loop that never ends?); the tests after it did not run"
                )

    def pytest_terminal_summary(self, terminalreporter):
        write = terminalreporter.write_line
        for line in self.broken:
            write(f"could not collect {line}")
        progress = self.config.getoption("--progress")
        broken = self.config.stash.get(BROKEN, {})
        judges = self.config.stash.get(JUDGES, None)
        if self.stopped:
            write(self.stopped)
        for step in self.config.stash.get(STEPS_UNDER_TEST, []):
            if step in broken:  # one line: why it cannot run; the other steps are still reported
                write(f"{step:<9} {broken[step]}" if progress else broken[step])
                continue
            if judges and step in judges.replaced:
                write(f"{judges.replaced[step]}: the check put the originals back")
            for line in self.step_lines(step, progress):
                write(line)
        others = [n for n, r in self.results.items() if r["step"] is None and r["bug"]]
        for nodeid in others:
            write(f"{nodeid}: {self.results[nodeid]['bug'][-1].strip()}")
        if path := self.config.getoption("--check-json"):  # what the screen says, as data (grading)
            Path(path).write_text(json.dumps(self.model, indent=2) + "\n", encoding="utf-8")

    def pytest_sessionfinish(self, session):
        why = session.shouldfail or session.shouldstop  # -x, --maxfail, a test out of time
        if why and not self.stopped:
            self.stopped = f"The run stopped early ({why}): the tests after it did not run"
        if (
            self.config.getoption("--progress")
            and session.exitstatus == pytest.ExitCode.TESTS_FAILED
        ):
            session.exitstatus = 0  # progress is a report: failing tests are not a red check

    def blame(self, results: dict, todos: dict, still: dict) -> dict[str, set]:
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

    def _none_ran(self, todo: str, earlier: list[str], what: str = "not written yet ({})") -> str:
        """What a TODO none of whose tests reached it says: the real reason, not a guess."""
        if todo in self.renamed:
            file, name = self.renamed[todo].rsplit(" ", 1)
            return f"{file} has no {name} (renamed or deleted?): its tests call it by that name"
        if self.stopped:
            reason = "none of its tests ran before the run stopped"
        elif self.config.option.keyword or self.config.option.markexpr:
            reason = "none of its tests were chosen by -k or -m"
        elif earlier:
            reason = "its tests stop at an earlier TODO"
        else:
            reason = "no test reached it: is a test file missing?"
        return what.format(reason)

    def pytest_keyboard_interrupt(self, excinfo):
        """Ctrl-C: say which test and which TODO were running, so Next names the right one."""
        if self.stopped:
            return
        frames = [_where(entry.frame.code.raw) for entry in excinfo.traceback]
        inner = [self.todo_at[f][0] for f in frames if f in self.todo_at]
        todo = (
            inner[-1] if inner else max((t for t, _ in self.entered), key=order_key, default=None)
        )
        step = next((s for s, t, _ in self.codes.values() if t == todo), None)
        self.interrupted = (step, todo) if todo else None
        where = f" in TODO({todo})" if todo else ""
        self.stopped = (
            f"Interrupted (Ctrl-C) during {self.current}{where}: the tests after it did not run"
        )

    def step_lines(self, step: str, progress: bool) -> list[str]:
        """The summary of one step: its TODO table, its bugs and what to write next."""
        results = {n: r for n, r in self.results.items() if r["step"] == step}
        todos, still = self.regions[step], _open_todos(step)
        still |= _shipped_bugs(step, todos)
        held = Counter(r["todo"] for r in results.values() if r["todo"])
        held_back = self.blame(results, todos, still)
        status, failing, warned = {}, Counter(), Counter()
        for n, r in results.items():
            if r["outcome"] == "failed" and not r["todo"] and n not in held_back:
                failing[r["blame"]] += 1
                warned[r["blame"]] += r["warning"]
        if self.interrupted and self.interrupted[0] == step:  # Ctrl-C inside it: no report came
            failing[self.interrupted[1]] += 1
        for todo in todos:
            ran = [r for r in results.values() if todo in r["entered"]]
            if todo in still and todos[todo].get("shipped"):
                status[todo] = "exercise"  # ships with a bug: open until its code changes
            elif todo in still and not (failing[todo] and not held[todo]):  # else: another def ran
                status[todo] = "optional" if optional(todo) else "todo"
            elif failing[todo]:
                status[todo] = "bug"
            elif not any(r["outcome"] == "passed" for r in ran):  # none ran, or all wait
                status[todo] = "waiting" if ran else "untested"
            else:  # written, and no failure is its own: tests held by another TODO are not
                status[todo] = "done"
        passed = sum(r["outcome"] == "passed" for r in results.values())
        given = sum(r["outcome"] == "passed" and r["given"] for r in results.values())
        self.model[step] = {
            todo: {
                "state": state,
                "optional": optional(todo),
                "passed": sum(
                    r["outcome"] == "passed" for r in results.values() if todo in r["entered"]
                ),
                "failing": failing[todo],
                "waiting": held[todo],
                "reason": next(
                    (
                        r["bug"][-1].strip()
                        for r in results.values()
                        if r.get("blame") == todo and r["bug"]
                    ),
                    "",
                ),
            }
            for todo, state in status.items()
        }
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
                + (" The optional ones are yours to try." if nxt or len(todos) > done else ""),
                *([f"Next step: {after}"] if (after := next_step(step)) else []),
            ]
        marks = {"done": "[x]", "bug": "[!]", "untested": "[?]"}  # the other states: [ ]
        for number, (todo, state) in enumerate(status.items()):
            earlier = [s for s in list(status.values())[:number] if s != "done"]
            on_warning = (
                f" ({warned[todo]} on a warning, which counts as one)" if warned[todo] else ""
            )
            note = {
                "todo": _waiting(held[todo]) if held[todo] else self._none_ran(todo, earlier),
                "bug": f"written; {failing[todo]} of its tests fail{'s' if failing[todo] == 1 else ''}"
                + on_warning,
                "optional": "optional; " + _waiting(held[todo], "skip until you write it"),
                "exercise": f"the exercise: the shipped code has a bug ({failing[todo]} tests fail)"
                if failing[todo]
                else self._none_ran(todo, earlier, "the exercise: {}"),
                "done": "done",
                "untested": "written; none of its tests ran here",
                "waiting": "written; its tests wait for another TODO",
            }[state]
            if todo in self.renamed and state in ("todo", "untested", "waiting"):
                note = self._none_ran(todo, earlier)
            lines.append(f"{marks.get(state, '[ ]')} TODO({todo}): {note}")
        bugs = [(n, r) for n, r in results.items() if r["bug"] and n not in held_back]
        known = {r[1].split("[")[0] for r in _symptoms(step) if len(r) == 3}  # in its table
        bugs.sort(key=lambda b: self.bug_order(b, nxt, known))  # the next TODO's, simplest first
        if bugs:
            many = f"{len(bugs)} failures are bugs" if len(bugs) > 1 else "1 failure is a bug"
            lines += ["", f"{many}, not a TODO (shortened; -v shows all):"]
            if any(r["warning"] for _, r in bugs):
                lines.append(
                    "(a warning counts as a failure: the reference runs without one, and what it "
                    "says is worth fixing)"
                )
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
            python = f"python -m pytest {typed(STEPS_DIR / step)} --impl starter"
            if name:
                lines.append(f"One test in full: {command(pixi, python)} -v -k {name}")
            more = command(f"pixi run hint {step}", f"python -m common.hint {step}")
            lines.append(f"More help, one level at a time: {more}")
        return lines
