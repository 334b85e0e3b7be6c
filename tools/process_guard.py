"""The suite's `process` marker, kept true at run time: a test that starts a process without
`@pytest.mark.process` fails, so `pytest -m "not process"` is a fast tier that starts none.

Every way Python starts a process is watched while a test runs (its fixtures' set-up and tear-down
included): subprocess.Popen (subprocess.run, asyncio's and Playwright's children), os.fork (and
os.spawn*, multiprocessing's fork), os.forkpty, os.posix_spawn[p], os.system and multiprocessing's
spawn (_posixsubprocess.fork_exec). Watching the calls, not scanning the sources, also sees a
process a helper in tools/ or common/ starts for the test. The root conftest.py registers this
plugin for the suite only: not for a student's check, and not in a child a test started (the
variable RUNNING is set while a test runs, and children inherit it).
"""

import _posixsubprocess
import functools
import os
import subprocess
import sys

import pytest

MARKER = "process"
RUNNING = "COURSE_TEST_RUNNING"  # the running test's node id, seen by the processes it starts
WATCHED = [
    (os, "fork"),
    (os, "forkpty"),
    (os, "posix_spawn"),
    (os, "posix_spawnp"),
    (os, "system"),
    (_posixsubprocess, "fork_exec"),
]


class Guard:
    """Records, per running test, the processes it starts while it lacks the marker."""

    def __init__(self):
        self.item = None  # the test whose set-up, call or tear-down is running
        self.started: list[str] = []
        self.fixtures: list[str] = []  # the fixtures being set up, innermost last
        self.spawning: dict[str, str] = {}  # a fixture that started a process -> how
        self.saved = []

    def seen(self, how: str) -> None:
        """One process start: kept against the running test, and the fixture setting up if any
        (a module's fixture starts once, for its first test: every test using it is named)."""
        if self.fixtures:
            self.spawning.setdefault(self.fixtures[-1], how)
        if self.item is not None:
            self.started.append(how)

    def unmarked(self, item) -> list[str]:
        """How the test started a process, itself or through a fixture, when it is not marked."""
        if item.get_closest_marker(MARKER) is not None:
            return []
        through = {
            f"{how} in fixture {name}"
            for name, how in self.spawning.items()
            if name in item.fixturenames
        }
        return sorted(set(self.started) | through)

    def install(self) -> None:
        """Wrap each way of starting a process (undone by `uninstall`)."""
        init = subprocess.Popen.__init__
        self.saved = [(subprocess.Popen, "__init__", init)]
        self.saved += [(m, name, getattr(m, name)) for m, name in WATCHED if hasattr(m, name)]
        for owner, name, original in self.saved:
            setattr(owner, name, self._watching(original, f"{owner.__name__}.{name}"))

    def uninstall(self) -> None:
        for owner, name, original in self.saved:
            setattr(owner, name, original)

    def _watching(self, original, how: str):
        @functools.wraps(original)
        def watched(*args, **kwargs):
            if not _importing():  # an import's one-off side effect belongs to no test
                self.seen(f"{how} {_program(how, args, kwargs)}".strip())
            return original(*args, **kwargs)

        return watched

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
        if how := self.unmarked(item):
            pytest.fail(
                f"{item.nodeid} started a process ({'; '.join(how)}) but "
                f"is not marked: add @pytest.mark.{MARKER}, so the fast tier "
                f'(pytest -m "not {MARKER}") leaves it out',
                pytrace=False,
            )


def _importing() -> bool:
    """Whether a module is being imported: ctypes.util.find_library runs ldconfig for whichever test
    first imports a library that looks one up, so that start depends on the order, not the test."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename == "<frozen importlib._bootstrap>":
            return True
        frame = frame.f_back
    return False


def _program(how: str, args: tuple, kwargs: dict) -> str:
    """The program a Popen starts (its file name: git, python3.12), so the failure says which."""
    if not how.endswith("Popen.__init__"):
        return ""
    cmd = kwargs.get("args", args[1] if len(args) > 1 else "")
    first = cmd if isinstance(cmd, str | bytes | os.PathLike) else next(iter(cmd), "")
    return f"({os.path.basename(os.fsdecode(first).split()[0] if first else '')})"


def register(config) -> None:
    """Watch this session's tests, unless it runs inside a test (a child the suite started)."""
    if os.environ.get(RUNNING) is None:
        guard = Guard()
        guard.install()
        config.add_cleanup(guard.uninstall)
        config.pluginmanager.register(guard, "process-guard")
