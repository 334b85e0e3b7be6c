"""The suite's `process` marker, kept true at run time: a test that starts a process without
`@pytest.mark.process` fails, so `pytest -m "not process"` is a fast tier that starts none.

Python's audit events say when a process starts (subprocess.Popen, os.fork, os.forkpty,
os.posix_spawn, os.system), whoever starts it: the test, its fixtures or a helper they call. The
root conftest.py registers this plugin for the suite only, not in a child a test started."""

import os
import sys

import pytest

MARKER = "process"
RUNNING = "COURSE_TEST_RUNNING"  # the running test's node id, seen by the processes it starts
EVENTS = {"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.system"}
GUARDS: list["Guard"] = []  # the sessions watching (an audit hook, once added, stays)


def _audit(event: str, args: tuple) -> None:
    """An audit hook: a process start goes to each session watching, unless an import made it."""
    if event in EVENTS and GUARDS and not _importing():
        for guard in GUARDS:
            guard.seen(f"{event} {_program(event, args)}".strip())


def _program(event: str, args: tuple) -> str:
    """The program started (git, python3.12), so the failure says which; none for a fork."""
    cmd = args[0] if event == "os.system" else args[1] if len(args) > 1 else ""
    first = cmd if isinstance(cmd, str | bytes | os.PathLike) else next(iter(cmd), "")
    words = os.fsdecode(first).split()
    return f"({os.path.basename(words[0])})" if words else ""


def _importing() -> bool:
    """Is a module being imported? ctypes.util.find_library runs ldconfig for whichever test first
    imports a library that looks one up: that start belongs to the order, not to the test."""
    frame = sys._getframe(2)  # 0: this function, 1: the hook
    while frame is not None and frame.f_code.co_filename != "<frozen importlib._bootstrap>":
        frame = frame.f_back
    return frame is not None


class Guard:
    """Records, per running test, the processes it starts while it lacks the marker."""

    def __init__(self):
        self.item, self.started = None, []  # the test whose set-up, call or tear-down runs
        self.fixtures: list[str] = []  # the fixtures being set up, innermost last
        self.spawning: dict[str, str] = {}  # a fixture that started a process -> how

    def seen(self, how: str) -> None:
        """One start, kept against the running test and the fixture setting up if any (a module's
        fixture starts once, for its first test: every test using it is named)."""
        if self.fixtures:
            self.spawning.setdefault(self.fixtures[-1], how)
        if self.item is not None:
            self.started.append(how)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self.item, self.started = item, []
        os.environ[RUNNING] = item.nodeid
        try:
            return (yield)
        finally:
            self.item = None
            os.environ.pop(RUNNING, None)

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        self.fixtures.append(fixturedef.argname)
        try:
            return (yield)
        finally:
            self.fixtures.pop()

    @pytest.hookimpl(trylast=True)  # after the fixtures' tear-down, which may start one too
    def pytest_runtest_teardown(self, item):
        if item.get_closest_marker(MARKER) is not None:
            return
        through = {
            f"{how} in fixture {f}" for f, how in self.spawning.items() if f in item.fixturenames
        }
        if how := sorted(set(self.started) | through):
            pytest.fail(
                f"{item.nodeid} started a process ({'; '.join(how)}) but is not marked: add "
                f'@pytest.mark.{MARKER}, so the fast tier (pytest -m "not {MARKER}") leaves it out',
                pytrace=False,
            )


def register(config) -> None:
    """Watch this session's tests, unless it runs inside a test (a child the suite started)."""
    if os.environ.get(RUNNING) is None:
        guard = Guard()
        GUARDS.append(guard)
        config.add_cleanup(lambda: GUARDS.remove(guard))
        config.pluginmanager.register(guard, "process-guard")


sys.addaudithook(_audit)  # imported by the suite's conftest only: a student's check has none
