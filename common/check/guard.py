"""What the check puts around student code: a time limit, no os._exit, and judges it cannot replace."""

import ctypes
import os
import sys
import threading
import time
from inspect import getattr_static
from pathlib import Path

# The functions tests judge with. A starter that replaces torch.allclose (say) with a function
# that always says yes would tick any TODO, so the check keeps these and puts them back. Only these:
# torch replaces other functions of its own as it lazily imports parts of itself (building the first
# optimiser imports torch._dynamo, which wraps torch.manual_seed), and that is never the student's.
JUDGES = {
    "builtins": ("abs", "all", "any", "isinstance", "len", "max", "min", "round", "sorted", "sum"),
    "math": ("isclose", "isfinite", "isnan"),
    "torch": (
        *("allclose", "equal", "isclose", "all", "any", "isfinite", "isnan", "is_tensor"),
        *("as_tensor", "nonzero", "unravel_index"),  # common.expect's own
    ),
    "torch.testing": ("assert_close",),
    "pytest": ("approx", "raises", "warns", "fail", "skip"),
    # pytest's own reporting: a report rewritten to "passed" would tick any TODO
    "_pytest.runner": ("call_and_report", "call_runtest_hook", "runtestprotocol"),
    "_pytest.reports.TestReport": ("from_item_and_call", "__init__"),
    "_pytest.reports.BaseReport": ("passed", "failed", "skipped"),
    "torch.Tensor": (
        *("allclose", "equal", "isclose", "all", "any", "isfinite", "isnan", "item", "tolist"),
        *("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__", "__len__"),
    ),
    # the course's own checks: each made a no-op at import would pass every test that calls it
    "common.expect": (
        *("at_least", "at_most", "between", "close", "differs", "equal", "fail", "finite"),
        *("members", "shape", "show", "_bounded", "_tensors_close"),
    ),
}


class TookTooLong(Exception):
    """Raised inside code that ran past its time limit (a loop that never ends?)."""

    limit = 0.0  # seconds; set when raised: the exception arrives from another thread, without args

    def __str__(self) -> str:
        return f"still running after {self.limit:g} s of CPU time: a loop that never ends?"


class EndsPython(Exception):
    """Raised in place of os._exit(): it would end Python before the check could report."""


def _loaded(name: str):
    """The module (or class of a module) called `name`, if it is imported already; else None."""
    if name in sys.modules:
        return sys.modules[name]
    module, _, cls = name.rpartition(".")
    return getattr(sys.modules[module], cls, None) if module in sys.modules else None


CODE = (
    "__code__",
    "__defaults__",
    "__kwdefaults__",
)  # what makes a Python function do what it does


def _inner(obj) -> dict:
    """A Python function's code and defaults (a function can be emptied in place, keeping its
    identity); {} for what has none (a C function, a property)."""
    function = getattr(obj, "__func__", obj)  # a classmethod or staticmethod's function
    return {a: getattr(function, a) for a in CODE if hasattr(function, a)}


def _put_back(obj, inner: dict) -> bool:
    """Put back what `_inner` kept of `obj`; True when something had changed."""
    function = getattr(obj, "__func__", obj)
    changed = [a for a, v in inner.items() if getattr(function, a, None) is not v]
    for attr in changed:
        setattr(function, attr, inner[attr])
    return bool(changed)


class Judges:
    """The functions tests judge with, as they were when this was made (before student code ran)."""

    def __init__(self):
        if "torch" in sys.modules:  # the course's checks judge with torch: theirs kept too
            import common.expect  # noqa: F401
        self.replaced: dict[str, str] = {}  # step -> what its starter replaced as it was imported
        self.kept: dict[str, tuple[object, dict]] = {}  # "torch" -> (owner, {name: (obj, code)})
        for name, attrs in JUDGES.items():
            if (owner := _loaded(name)) is not None:
                found = {a: getattr_static(owner, a, None) for a in attrs}  # inherited too
                kept = {a: (obj, _inner(obj)) for a, obj in found.items() if obj is not None}
                self.kept[name] = (owner, kept)

    def restore(self) -> str:
        """Put back every judge that was replaced, deleted or emptied; name them ('' when none was)."""
        changed = []
        for name, (owner, was) in self.kept.items():
            for attr, (obj, inner) in was.items():
                replaced = getattr_static(owner, attr, None) is not obj
                if replaced:
                    setattr(owner, attr, obj)
                if _put_back(obj, inner) or replaced:
                    changed.append(f"{name}.{attr}")
        more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
        return ", ".join(changed[:3]) + more


# A failure that is one of these is a refusal, not a wrong result: the code was stopped (a loop,
# os._exit, a replaced judge, memory, the network, a read-only file), so no share of it is earned.
REFUSALS = {
    "TookTooLong": "a loop that never ends? it was stopped at the time limit",
    "EndsPython": "it called os._exit, which would end the check",
    "during this test; the check put the original back": "it replaced a function the tests judge with",
    "MemoryError": "it ran out of memory",
    "can't allocate memory": "it ran out of memory",
    "Read-only file system": "it wrote to a file it may not change",
    "Permission denied": "it wrote to a file it may not change",
    "gaierror": "it used the network, which grading has none of",
    "Network is unreachable": "it used the network, which grading has none of",
}


def refusal(error: tuple[str, ...] | list[str]) -> str | None:
    """Why a failure's short traceback is a guard's refusal (one phrase), or None for a wrong result."""
    text = "\n".join(error)
    return next((why for key, why in REFUSALS.items() if key in text), None)


_exit = os._exit
NATIVE = sys.modules[os.name]  # posix, or nt: os takes its functions from it


def refuse_exit() -> None:
    """From now on os._exit() (posix._exit()) raises EndsPython where it is called (the student's line)."""

    def refused(code=0):
        raise EndsPython(
            f"os._exit({code}) would end Python here, before the check can report: delete that call"
        )

    os._exit = NATIVE._exit = refused  # posix's (nt's) is the same function, by another name


def allow_exit() -> None:
    os._exit = NATIVE._exit = _exit


def _raise_in(thread_id: int, error: type[BaseException] | None) -> None:
    """Make `error` happen in thread `thread_id` at its next Python line (None: take it back)."""
    exc = ctypes.py_object(error) if error else None
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), exc)


class Watchdog:
    """Inside `with`, raise TookTooLong in this thread after `seconds` of CPU time (or WALL times as
    long waiting), on any OS; `only_in`: only while the innermost frame is a file under it."""

    WALL = 6  # a wait (sleep, a lock) is stopped too, after this many times the limit

    def __init__(self, seconds: float, only_in: Path | None = None):
        self.seconds, self.only_in = seconds, only_in
        self.thread = threading.get_ident()
        self.done = threading.Event()
        self.fired = False
        self.lock = threading.Lock()

    def _watch(self):
        cpu, wall = time.process_time(), time.monotonic()
        while not self.done.wait(0.2):
            over = time.process_time() - cpu > self.seconds
            if not (over or time.monotonic() - wall > self.WALL * self.seconds):
                continue
            with self.lock:
                if self.done.is_set():
                    return
                if self.only_in is None or self._inside():  # else in a library: look again soon
                    TookTooLong.limit = self.seconds
                    _raise_in(self.thread, TookTooLong)
                    self.fired = True
                    return

    def _inside(self) -> bool:
        frame = sys._current_frames().get(self.thread)
        return frame is not None and Path(frame.f_code.co_filename).is_relative_to(self.only_in)

    def start(self) -> "Watchdog":
        threading.Thread(target=self._watch, daemon=True, name="course-watchdog").start()
        return self

    def cancel(self) -> None:
        with self.lock:
            self.done.set()
            if self.fired:
                _raise_in(self.thread, None)  # not delivered yet? then it never is

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.cancel()
