"""Hostile submissions, graded as a class is: one worker per containment mode grades them all.

Each submission is the caught-up lab-01 reference with hostile lines at the top of causal_mask
(task 3), so every test of task 3 meets them and the other TODOs' copies (the reference's
causal_mask) do not. Every file or process a case makes carries a marker of its own (a uuid), so
the test can say exactly that none appeared on this machine and none is still running."""

import base64
import csv
import fcntl
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from common import REPO_ROOT
from common.course import course_step
from grader import engine, sandbox
from grader import grade as grade_module
from grader.autograder import main as autograder
from grader.engine import Reader, TextLimit, Worker
from grader.grade import Grade, class_csv, grade, gradescope, text
from grader.sandbox import Limits
from grader.tests.test_grade import (
    HELD_OUT,
    HONEST,
    SHARED,
    STEP,
    UNCONTAINED,
    caught_up_starter,
    run_tiny,
    shared_worker,
    shipped_starter,
    tiny_class,
    with_change,
)
from grader.variants import read_tree

pytestmark = [pytest.mark.slow, pytest.mark.process]  # a worker per mode grades every case

LINE = '    check_size(seq_len, "seq_len")  # given: T must be a positive int'
WALL = 300  # seconds per submission: far above a case's few seconds, far below a hang
DISK = 256 * 2**20  # bytes a copy may write here: a filler is stopped sooner than at 1 GB
REFERENCE = REPO_ROOT / "steps" / STEP / "solution" / "attention.py"
STOLEN = "steps/lab-01/solution/attention.py"  # where a clone or the bundle holds the reference
LINGER = 3.0  # seconds waited after the grades: a daemon's write comes 2 s after it starts


@dataclass
class Case:
    """One hostile submission: its lines in causal_mask and what its task 3 must come to."""

    code: str  # at the top of causal_mask, indented as its body
    full: bool  # task 3 keeps full marks (the code is right besides): else it scores 0
    reason: str = ""  # a regex task 3's reason matches when it scores 0
    host: list[Path] = field(default_factory=list)  # files that must not exist afterwards
    once: bool = False  # run once per process (spawning), not at every call
    per_test: float = 10.0  # seconds a test may run: the shared worker's, the check's own
    top: str = ""  # lines at the module's top, run as it is imported: in every TODO's copy
    others: str = ""  # a regex each other TODO's reason may match when it scores 0 (a forger's)
    first: str = ""  # the module's first line, before its own (a coding cookie)
    to_read: list[str] = field(default_factory=list)  # regexes of what the grade says to read


def _once(code: str) -> str:
    """`code` run on the first call of causal_mask in a process only."""
    body = textwrap.indent(textwrap.dedent(code), " " * 8)
    return f'    if not globals().get("_hostile"):\n        globals()["_hostile"] = 1\n{body}'


def _steal(source: str) -> str:
    """Lines that take causal_mask from stolen reference text (its only way to the right mask)."""
    return (
        f'    _stolen = {{"__name__": "stolen"}}\n    exec({source}, _stolen)\n'
        '    return _stolen["causal_mask"](seq_len)'
    )


def _writes(paths: list[Path], *more: str) -> str:
    """Lines that try to write each of `paths` and of the expressions `more` (a refusal is
    swallowed: the mask stays right)."""
    targets = ", ".join([*(repr(str(p)) for p in paths), *more])
    return (
        f"    for _p in [{targets}]:\n        try:\n            with open(_p, 'w') as _f:\n"
        "                _f.write('hostile')\n        except OSError:\n            pass"
    )


def _writing(paths: list[Path], *more: str) -> Case:
    """A case that writes `paths` (and the expressions `more`), none of which may exist after."""
    return Case(_writes(paths, *more), full=True, host=paths)


def _spawn(marker: str, script: str, session: bool) -> str:
    """Lines that start `script` in a new Python (the marker in its command line), kept
    referenced, as a student's would be (a dropped Popen that still runs warns, and fails)."""
    new = ", start_new_session=True" if session else ""
    return (
        f"    import subprocess, sys\n"
        f"    globals().setdefault('_kept', []).append(subprocess.Popen(\n"
        f"        [sys.executable, '-c', {script + f'  # {marker}'!r}]{new}))"
    )


def site_packages() -> list[Path]:
    """Every site-packages folder this interpreter reads (a .pth there runs in every Python)."""
    found = [Path(p).resolve() for p in [*sandbox._packages(), *sys.path] if p]
    return list(dict.fromkeys(p for p in found if p.name in ("site-packages", "dist-packages")))


CLONES = ["this repository", "a clone in /tmp", "a clone in home"]  # where a reference is read


def hostile_cases(marker: str, clones: dict[str, Path], bundle: Path) -> dict[str, Case]:
    """Every hostile case, its host files named with `marker`."""
    home, tmp = Path.home(), Path(tempfile.gettempdir())
    m = lambda name: f"{marker}-{name}"  # noqa: E731 - one marker per case
    daemon_file = tmp / m("daemon")
    daemon = (
        "import os, pathlib, time\nif os.fork():\n    os._exit(0)\nos.setsid()\n"
        f"time.sleep(2)\npathlib.Path({str(daemon_file)!r}).write_text('escaped')\ntime.sleep(60)"
    )
    sleeper = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(60)"
    denied = r"FileNotFoundError|PermissionError|No such file"
    cases = {
        "writes to the home folder": _writing(
            [home / m("home")], f"__import__('os').path.expanduser('~/{m('home')}')"
        ),
        "writes to the machine's temporary folder": _writing(
            [d / m("tmp") for d in (tmp, Path("/var/tmp"), Path("/dev/shm"))]
        ),
        "writes more than a copy may, in files each under the cap": Case(
            "    import os, tempfile\n\n"
            "    for _i in range(6):  # 6 x 64 MB in its own /tmp: each file allowed, not the sum\n"
            f"        with open(os.path.join(tempfile.gettempdir(), '{m('fill')}-%d' % _i), 'wb') as _f:\n"
            "            _f.write(bytes(64 * 2**20))",
            False,
            rf"its copy wrote more than {DISK >> 20} MB \(\d+ MB\), all a copy may write",
            once=True,
        ),
        "writes a .pth into site-packages": _writing(
            [p / f"{m('pth')}.pth" for p in site_packages()]
        ),
        "writes to the repository": _writing(
            [REPO_ROOT / m("repo"), REFERENCE.parents[1] / "tests" / f"test_{m('r')}.py"]
        ),
        "writing into its own copy's tests": Case(
            "    from pathlib import Path\n\n"
            "    for test in (Path(__file__).parents[1] / 'tests').glob('test_*.py'):\n"
            "        test.write_text('def test_ok():\\n    pass\\n')",
            False,
            rf"Permission denied|Read-only|{CHANGED}|{HELD_READ}",
        ),
        **FORGERS,
        **{
            f"reading the reference of {where}": Case(
                _steal(f"__import__('pathlib').Path({str(path)!r}).read_text()"), False, denied
            )
            for where, path in clones.items()
        },
        "reading the autograder bundle": Case(
            _steal(
                f"(lambda z: (z.read({STOLEN!r}).decode(), z.close())[0])"
                f"(__import__('zipfile').ZipFile({str(bundle)!r}))"
            ),
            False,
            denied,
        ),
        "importing the step's own reference": Case(
            "    from common.loader import load\n\n"
            "    return load('lab-01', 'attention', 'solution').causal_mask(seq_len)",
            False,
            r"the graded copy holds no reference solution",
        ),
        # a process that outlives its copy could rewrite the copy's report: flagged, never passing
        "a daemon that outlives the grade": Case(
            _spawn(m("daemon"), daemon, session=True), False, LEFT, host=[daemon_file], once=True
        ),
        "a child that holds stdout open": Case(
            _spawn(m("stdout"), "import time\ntime.sleep(60)", session=False),
            False,
            LEFT,
            once=True,
        ),
        "processes left behind": Case(
            "\n".join(_spawn(m(f"left{i}"), sleeper, session=i % 2 == 0) for i in range(4)),
            False,
            LEFT,
            once=True,
        ),
        "a loop that never ends": Case(  # stopped by its test's time, shorter than the check's
            "    while True:\n        pass", False, r"TookTooLong|still running", per_test=3.0
        ),
        "a 20 GB allocation": Case(
            "    torch.empty(20 * 2**30, dtype=torch.uint8).fill_(1)",
            False,
            r"can't allocate memory|MemoryError",
        ),
        "os._exit(0)": Case("    import os\n\n    os._exit(0)", False, r"EndsPython: os._exit"),
        "replacing torch.allclose": Case(
            "    torch.allclose = lambda *a, **k: True\n"
            "    return torch.triu(torch.ones(seq_len, seq_len)).bool()",
            False,
            r"your code replaced torch.allclose",
            to_read=[r"attention\.py:\d+ changes torch\.allclose: torch\.allclose = lambda"],
        ),
        **HIDING,
        "opening a socket": Case(
            "    import socket\n\n    socket.create_connection(('pypi.org', 443), timeout=3).close()",
            False,
            r"gaierror|Network is unreachable|Temporary failure",
        ),
        "forging the check's report": Case(
            FORGE, False, r"flagged: its check's report disagrees with the grader's"
        ),
        LEAK: Case(
            "    import inspect\n\n"
            '    raise ValueError(" | ".join(inspect.getsource(stable_softmax).splitlines()))',
            False,
            r"ValueError|flagged: its code read the step's own code",  # its copy's source: read
        ),
    }
    return cases


LEFT = r"flagged: \d+ of its processes (was|were) still running after it ended"

# Issue 53's red team: code that forges its outcomes rather than computing them, each with a mask
# wrong everywhere (a forged pass shows as task 3's point). Judged honestly, task 3 scores 0 and
# the rest full; seen forging, a copy is flagged (every copy: the top of a module is in each)
WRONG = "    return torch.zeros(seq_len, seq_len, dtype=torch.bool)"
CHANGED = r"flagged: its code changed the course's own files in its copy"
HELD_READ = "the held-out tests did something"  # its held-out copy opened their files
FORGED = rf"flagged: its code (replaced|registered a pytest hook|made the check keep)|{CHANGED}"
EMPTIED = """\
import common.expect as _expect

for _name in dir(_expect):  # every check of the course's, emptied in place (its identity kept)
    if callable(_f := getattr(_expect, _name)) and hasattr(_f, "__code__"):
        _f.__code__ = (lambda *a, **k: None).__code__
"""
# each test's body made to pass, its name, fixtures and marks kept (functools.wraps)
PASSES = (
    "\nimport functools as _ft\n\nfor _n, _f in list(globals().items()):\n"
    "    if _n.startswith('test_') and callable(_f):\n"
    "        globals()[_n] = _ft.wraps(_f)(lambda *a, **k: None)\n"
)
REWRITTEN = f"""\
from pathlib import Path as _Path

for _test in (_Path(__file__).parents[1] / "tests").glob("test_*.py"):  # before they are read
    try:
        _test.write_text(_test.read_text() + {PASSES!r})
    except OSError:
        pass
"""
# the same passing tests as pytest's compiled code, planted where pytest reads it (each copy's
# tests come with it compiled: a plant replaces that)
PLANTED = f"""\
import importlib.util as _util
import marshal as _marshal
import os as _os
from pathlib import Path as _Path

from _pytest.assertion.rewrite import PYC_TAIL as _TAIL

for _test in (_Path(__file__).parents[1] / "tests").glob("test_*.py"):  # before they are read
    _stat, _pyc = _test.stat(), _test.parent / "__pycache__" / (_test.stem + _TAIL)
    _when = [int(_stat.st_mtime), _stat.st_size]
    _head = _util.MAGIC_NUMBER + bytes(4) + b"".join(n.to_bytes(4, "little") for n in _when)
    _code = compile(_test.read_text() + {PASSES!r}, str(_test), "exec")
    try:
        _os.chmod(_pyc.parent, 0o755)
        _pyc.unlink(missing_ok=True)
        _pyc.write_bytes(_head + _marshal.dumps(_code))
    except OSError:
        pass
"""
PASSING = """\
import gc as _gc

import pytest as _pytest


class _Passing:
    @_pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        report.outcome, report.longrepr = "passed", None
        return report


for _o in _gc.get_objects():
    if type(_o).__name__ == "PytestPluginManager":
        _o.register(_Passing())
"""
# Code a reader does not see it run: behind a coding cookie (raw_unicode_escape reads the \u000a
# in a comment as a new line), and writes to modules it did not define. Neither forges anything
# here (the grade's judges are bound): each keeps full marks, and the grade says what to read
COOKIE = "# -*- coding: raw_unicode_escape -*-\n# a note \\u000a_hidden_ran = True\n"
HIDING = {
    "code hidden behind a coding cookie": Case(
        "", True, first=COOKIE,
        to_read=[r"attention\.py:1 declares its encoding raw_unicode_escape \(not UTF-8\): "
                 r"Python runs '_hidden_ran = True', which a reader does not see"],
    ),
    "changing modules' attributes through vars, __dict__ and names": Case(
        "    import importlib\n\n"
        '    vars(torch)["allclose"] = torch.allclose\n'
        '    _expect = importlib.import_module("common.expect")\n'
        "    _expect.__dict__.update(close=_expect.close)\n"
        '    _T = getattr(torch, "Tensor")\n'
        '    setattr(_T, "double", _T.double)',
        True,
        to_read=[r"attention\.py:\d+ changes vars\(torch\)\['allclose'\]",
                 r"attention\.py:\d+ changes _expect\.__dict__: _expect\.__dict__\.update",
                 r'attention\.py:\d+ changes _T: setattr\(_T, "double"'],
    ),
    "a line separator that some editors break at and Python does not": Case(  # red team 19
        "    # the mask\u2028\u2028\u2028\n    import sys\n\n    _g = sys._getframe(0).f_globals",
        True,
        to_read=[r"attention\.py:\d+ holds LINE SEPARATOR \(U\+2028\)",
                 r"attention\.py:\d+ reaches f_globals: _g = sys\._getframe\(0\)\.f_globals"],
    ),
    "a coroutine's frame, its builtins, a name put together": Case(  # red team 18
        "    async def _co():\n        pass\n\n"
        "    _c = _co()\n    _b = _c.cr_frame.f_builtins\n    _c.close()\n"
        '    _b["ev" + "al"]',
        True,
        to_read=[r"attention\.py:\d+ reaches f_builtins: _b = _c\.cr_frame\.f_builtins",
                 r"attention\.py:\d+ reaches the name 'eval', put together from pieces"],
    ),
    "changing the attributes of pytest and the course": Case(
        "    import pytest\n    import common.expect\n\n"
        '    setattr(pytest, "approx", pytest.approx)\n'
        "    common.expect.close = common.expect.close",
        True,
        to_read=[r'attention\.py:\d+ changes pytest: setattr\(pytest, "approx"',
                 r"attention\.py:\d+ changes common\.expect\.close: common\.expect\.close ="],
    ),
}  # fmt: skip

# the same hook, its code saying it is pytest's own: only the canary (a real test run on the
# reference with a curated bug, which must fail) shows it forging
HIDDEN = PASSING.replace(
    "\n\nfor _o",
    "\n\n_f = _Passing.pytest_runtest_makereport\n"
    "_f.__code__ = _f.__code__.replace(co_filename=_pytest.__file__)\n\nfor _o",
)
CANARY = r"flagged: its code made a canary pass"
# Forgers of task 3's own tests only (their markers say whose they are): a canary of another
# TODO's tests would fail as it must; task 3's own, on the reference with a curated bug, passes
OWN_HOOK = HIDDEN.replace(
    '        report.outcome, report.longrepr = "passed", None',
    '        if "task 3" in [m.args[0] for m in item.iter_markers("todo")]:\n'
    '            report.outcome, report.longrepr = "passed", None',
)
OWN_RESULTS = """\
import dataclasses as _dc
import gc as _gc


class _Results(dict):  # the check's record of each test: task 3's failures kept as passes
    def __setitem__(self, nodeid, result):
        if result.outcome == "failed" and _check.marked.get(nodeid) == "task 3":
            result = _dc.replace(result, outcome="passed", error=())
        super().__setitem__(nodeid, result)


for _check in _gc.get_objects():
    try:
        if type(getattr(_check, "results", None)) is dict and hasattr(_check, "marked"):
            _check.results = _Results(_check.results)
            break
    except Exception:
        pass
"""
# what the judges call rather than the judges, replaced through names the text scan follows:
# pytest's Function.runtest (task 3's test bodies never run), a tensor method (expect's distance)
OWN_RUNTEST = """\
import importlib as _il

_F = getattr(_il.import_module("_pytest.python"), "Function")
_run = _F.runtest


def _runtest(self):
    if "task 3" not in [m.args[0] for m in self.iter_markers("todo")]:
        return _run(self)


setattr(_F, "runtest", _runtest)
"""
DOUBLE = """\
_T = getattr(torch, "Tensor")
_double = _T.double
setattr(_T, "double", lambda self, *a, **k: torch.zeros(self.shape, dtype=torch.float64))
"""
YES = """\
    class _Yes(torch.Tensor):  # every comparison says yes
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            name = getattr(func, "__name__", "")
            if name in ("allclose", "equal"):
                return True
            with torch._C.DisableTorchFunctionSubclass():
                out = func(*args, **(kwargs or {}))
            if name in ("__eq__", "eq", "isclose", "__ne__", "ne") and torch.is_tensor(out):
                return torch.full_like(out, "eq" in name or "close" in name, dtype=torch.bool)
            return out

    return torch.zeros(seq_len, seq_len, dtype=torch.bool).as_subclass(_Yes)"""
# red team 10: a tensor whose own operations (its __torch_dispatch__, below __torch_function__)
# make every difference zero and every != False, through the tests' own cat, slices and sums
DISPATCH = """\
class _Rows(torch.Tensor):
    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        args = _plain(args)
        if "aten.sub" in str(func):
            return _rows(torch.zeros_like(args[0]))
        if "aten.ne" in str(func):
            return _rows(torch.zeros_like(args[0], dtype=torch.bool))
        return _rows(func(*args, **_plain(kwargs or {})))


def _plain(a):
    if isinstance(a, dict):
        return {k: _plain(v) for k, v in a.items()}
    if isinstance(a, list | tuple):
        return type(a)(_plain(b) for b in a)
    return a.held if isinstance(a, _Rows) else a


def _rows(out):
    if not isinstance(out, torch.Tensor) or isinstance(out, _Rows):
        return out
    made = out.as_subclass(_Rows)
    made.held = out
    return made
"""
# what the judges call, replaced where no text scan follows (a lambda hands torch on), and a test
# module's own name swapped once the tests are collected (round 5 of the red team)
AS_TENSOR = """\
_as_tensor = torch.as_tensor
(lambda: torch)().as_tensor = lambda data, *a, **k: _as_tensor(0.0)
"""
QUIET = """\
import sys as _sys


class _Nod:
    def __getattr__(self, name):
        return lambda *a, **k: None


for _m in list(_sys.modules.values()):
    if type(_m).__name__ == "module" and str(getattr(_m, "__name__", "")).rsplit(".")[-1][:5] == "test_":
        if "expect" in vars(_m):
            vars(_m)["expect"] = _Nod()
"""
# the check's record of each outcome made "passed", from the TODO's own body (where the canary,
# which runs the reference's functions, never goes)
RECORD = """\
import sys as _sys

_c = _sys.modules["common.check.collect"]
_T = _c.TestResult
_c.TestResult = lambda **k: _T(**{**k, "outcome": "passed", "error": ()})
"""
# red team 11: a course helper the tests judge with (common.seeding's torch), swapped through a
# loop's name; here lab-01's common.loader.load, wrapped so that it behaves the same
# red team 20: a class a test builds its expected value from, reached through a dict (the
# reader does not follow it), and an optimiser's step: both held by the grade's worker
LAYER_SWAP = """\
import torch.nn as _n

_box = {"n": _n, "o": torch.optim}
_box["n"].LayerNorm = _box["n"].Identity
_box["o"].SGD.step = lambda self, closure=None: None
"""
HELPER = """\
import common.loader as _cl

for _m in [_cl]:
    _m.load = (lambda f: lambda *a, **k: f(*a, **k))(_m.load)
"""
# red team 14: a trace function that makes every judge's expected value the value it got (a trace
# function's writes to a frame's locals stick), set at import, so in every copy
TRACE = """\
import sys as _sys


def _judged(frame, event, arg):
    if event == "call" and frame.f_code.co_filename.endswith("expect.py"):
        if "got" in frame.f_locals:
            frame.f_locals["expected"] = frame.f_locals["got"]


_sys.settrace(_judged)
"""
TRACED = r"flagged: (the check of the whole submission: )?its code set a trace or profile function"
# red team 15: a backend fallback of a key turned on in this thread's dispatch, through which every
# operator passes; it answers `equal` and `.item()` "no difference" when a judge asks
FALLBACK = """\
import sys as _sys

_cpu = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)


def _kernel(keyset, op, *args, **kwargs):
    if str(op) in ("aten.equal.default", "aten._local_scalar_dense.default"):
        if _sys._getframe(1).f_code.co_name in ("_tensors_close", "_bounded", "differs"):
            return False
    return op.redispatch(_cpu, *args, **kwargs)


_lib = torch.library.Library("_", "IMPL")
_lib.fallback(_kernel, "PrivateUse1", with_keyset=True)
torch._C._dispatch_tls_set_dispatch_key_included(torch._C.DispatchKey.PrivateUse1, True)
"""
DISPATCH_CHANGED = (
    r"flagged: (the check of the whole submission: )?its code changed torch's dispatch"
)
# red team 14: a TODO's copy holds the other TODOs' reference in the student's files; reading
# them sends it back one outcome at a time
READ = "    open(__file__, encoding='utf-8').read()\n"
# red team 16: what a test runs with, changed once the tests are collected (from a frame's
# `session`): each task 3 test given a runtest of its own; a hook registered, its code pytest's
SESSION = """\
import sys as _sys

_fr = _sys._getframe()
while _fr is not None and "session" not in _fr.f_locals:
    _fr = _fr.f_back
_session = _fr.f_locals["session"]
"""
OWN_METHOD = (
    SESSION
    + """\
for _i in _session.items:
    if "task 3" in [m.args[0] for m in _i.iter_markers("todo")]:
        _i.runtest = lambda: None
"""
)
LATE_HOOK = (
    SESSION
    + PASSING.split("\n\n\nfor _o")[0].replace("import gc as _gc\n\n", "")
    + """
_f = _Passing.pytest_runtest_makereport
_f.__code__ = _f.__code__.replace(co_filename=_pytest.__file__)
_session.config.pluginmanager.register(_Passing())
"""
)
# red team 17: the record's descriptor moved to /dev/null at import (a copy of it kept, down which
# a forger writes its own lines), so that nothing the grader's plugin says reaches the worker
MOVED = """\
import os as _os

_kept = _os.dup(3)
_os.dup2(_os.open(_os.devnull, _os.O_WRONLY), 3)
"""
TAKEN = r"flagged: (the check of the whole submission: )?its code took the grade's record"
# red team 17: a tensor method set for one call through a name no scan follows (a parameter),
# which removes itself as it answers: gone before any look after the test. The judges' own
# operations are bound before the copy's code runs: it answers none of them, and is still set
# when the test ends (a refusal)
ONE_SHOT = """\
    def _arm(kind):
        def _once(self, other):
            del kind.__ne__
            return torch.zeros(self.shape, dtype=torch.bool)

        kind.__ne__ = _once

    _arm(torch.Tensor)
"""
FORGERS = {
    "the record's descriptor moved at import": Case(WRONG, False, TAKEN, top=MOVED, others=TAKEN),
    "a tensor method set for one comparison, gone after it": Case(
        ONE_SHOT + WRONG, False, "0 of|replaced a function the tests judge with"
    ),
    "a test given a runtest of its own once collected": Case(
        _once(OWN_METHOD) + "\n" + WRONG, False, r"flagged: its code gave the test \S+ a method"
    ),
    "a hook registered once the tests are collected, its code pytest's": Case(
        _once(LATE_HOOK) + "\n" + WRONG, False, r"flagged: its code registered a pytest hook"
    ),
    "a dispatch key's fallback that answers the judges": Case(
        WRONG, False, DISPATCH_CHANGED, top=FALLBACK, others=DISPATCH_CHANGED
    ),
    "a trace function that rewrites the judges' values": Case(
        WRONG, False, TRACED, top=TRACE, others=TRACED
    ),
    "its own file read, which holds the other TODOs' reference": Case(
        READ + WRONG,
        False,
        r"flagged: its code read the step's own code \(lab-01/starter/attention",
    ),
    "torch's layer and optimiser classes swapped through a dict": Case(
        WRONG, False, FORGED, top=LAYER_SWAP, others=FORGED
    ),
    # red team 23: a hook torch runs in every module's forward, the tests' own models included
    "a global forward hook of torch's": Case(
        WRONG,
        False,
        GLOBAL := r"flagged: its code registered a hook of torch's own",
        top="torch.nn.modules.module.register_module_forward_hook(lambda m, i, o: o)",
        others=GLOBAL,
    ),
    # red team 22: the dtype the tests make their expected values in (torch rebinds torch.Storage)
    "torch's default dtype set at import": Case(
        WRONG,
        False,
        DTYPE := r"flagged: its code set torch's default dtype to torch\.float64",
        top="torch.set_default_dtype(torch.float64)",
        others=DTYPE,
    ),
    "a course helper's function swapped through a loop": Case(
        WRONG, False, FORGED, top=HELPER, others=FORGED
    ),
    "the check's TestResult made to pass from the TODO's body": Case(
        _once(RECORD) + "\n" + WRONG, False, FORGED
    ),
    # put back before any test ran (the check's guard): an honest 0, a refusal where it is seen
    "torch.as_tensor replaced through a lambda": Case(
        WRONG, False, "0 of", top=AS_TENSOR, others="judge with"
    ),
    "a test module's expect swapped after collection": Case(
        _once(QUIET) + "\n" + WRONG, False, FORGED
    ),
    "emptying the course's checks at import": Case(  # task 7 imports the module again: refused
        WRONG, False, FORGED + "|0 of", top=EMPTIED, others=FORGED + "|judge with"
    ),
    "rewriting its own tests at import": Case(
        WRONG, False, f"{CHANGED}|0 of|{HELD_READ}", top=REWRITTEN, others=f"{CHANGED}|{HELD_READ}"
    ),
    "planting pytest's compiled tests at import": Case(
        WRONG, False, f"{CHANGED}|0 of", top=PLANTED, others=CHANGED
    ),
    "a pytest hook that passes every test": Case(WRONG, False, FORGED, top=PASSING, others=FORGED),
    "a tensor that answers every comparison": Case(YES, False, FORGED + "|0 of"),
    "a tensor whose own operations answer every comparison": Case(
        "    return _rows(torch.zeros(seq_len, seq_len, dtype=torch.bool))",
        False,
        "0 of",
        top=DISPATCH,
        to_read=[r"attention\.py:\d+ reaches a subclass of torch\.Tensor", "__torch_dispatch__"],
    ),
    "a pytest hook that hides where it is from": Case(
        WRONG, False, CANARY, top=HIDDEN, others=CANARY
    ),
    # a TODO with no curated bug among its own tests (tasks 5 and 7) has its canary on another
    # TODO's, task 3's here: the forged pass is flagged there too
    "a hidden hook that forges only its own TODO's tests": Case(
        WRONG, False, CANARY, top=OWN_HOOK, others=CANARY
    ),
    # its results dict is no longer the check's own: forged wherever it runs (else its canary)
    "rewriting the check's results of its own TODO's tests": Case(
        WRONG, False, f"{FORGED}|{CANARY}", top=OWN_RESULTS, others=f"{FORGED}|{CANARY}"
    ),
    "Function.runtest replaced for its own TODO's tests": Case(
        WRONG,
        False,
        FORGED,
        top=OWN_RUNTEST,
        others=FORGED,
        to_read=[r'attention\.py:\d+ changes _F: setattr\(_F, "runtest"'],
    ),
    "a tensor method the judges call, replaced": Case(
        WRONG,
        False,
        FORGED,
        top=DOUBLE,
        others=FORGED,
        to_read=[r'attention\.py:\d+ changes _T: setattr\(_T, "double"'],
    ),
}

# A copy of task 3 holds the reference of every other TODO (the variant swaps them in): this
# puts task 1's reference into task 3's reason, which the student reads
LEAK = "showing another TODO's reference in its reason"
SECRET = "x.amax(dim=dim, keepdim=True)"  # a line of task 1's reference

# The check writes its report with json.dumps in the process that runs the student's code: this
# turns every outcome in it into "passed", and returns a mask that is wrong everywhere (the
# grader's own record, sent as each test ends with functions bound before student code, disagrees)
DUMPS = """\
_real = json.dumps

def _passed(x):
    if isinstance(x, dict):
        if "outcome" in x:
            x["outcome"], x["error"] = "passed", None
        for v in x.values():
            _passed(v)
    elif isinstance(x, list):
        for v in x:
            _passed(v)

def _forged(data, *a, **k):
    _passed(data)
    return _real(data, *a, **k)

json.dumps, json._forged = _forged, True
"""
FORGE = (
    '    import json\n\n    if not getattr(json, "_forged", False):\n'
    + textwrap.indent(DUMPS, " " * 8)
    + "    return torch.zeros(seq_len, seq_len, dtype=torch.bool)"
)


def snapshot(*folders: Path) -> dict[str, str]:
    """sha256 of every file under `folders` (caches and the ignored out/ folders left out: a check
    of a fixture step, run by another test at the same time, records its hint there): what must
    not change."""
    return {
        str(p): hashlib.sha256(p.read_bytes()).hexdigest()
        for folder in folders
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not {"__pycache__", "out"} & set(p.parts)  # out/: git-ignored output
    }


def running(markers: list[str]) -> list[str]:
    """Every process on this machine whose command line holds one of `markers`."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # ended while we looked
        found += [f"pid {proc.name}: {cmd[:160]}" for mk in markers if mk in cmd]
    return found


WATCHED = [REPO_ROOT / d for d in ("steps", "common", "tests", "tools", "solutions")]


@dataclass
class Graded:
    """What one mode's class came to: each case's grade, and what was left on this machine."""

    grades: dict[str, Grade]
    cases: dict[str, Case]
    left_files: list[str]  # host files a case made
    left_running: list[str]  # processes a case left
    changed: list[str]  # course files that changed
    modes: dict = field(default_factory=dict)  # user mode: folder -> (mode before, after)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    """lab-01's autograder zip, which holds the reference: built once, read by every mode's theft."""
    out = tmp_path_factory.mktemp("bundle") / "autograder-lab-01.zip"
    assert autograder([STEP, "--out", str(out)]) == 0 and out.is_file()
    return out


def grade_class(tmp: Path, bundle: Path, request, names: list[str] | None = None) -> Graded:
    """Grade the hostile cases (all, or `names`) with the current mode's worker (user mode's own:
    it closes the repository while it lives)."""
    marker = f"hostile-{uuid.uuid4().hex}"
    reference = caught_up_starter(tmp / "caught-up")
    home_clone = Path(tempfile.mkdtemp(prefix=".course-clone-", dir=Path.home()))
    try:
        clones = {CLONES[0]: REFERENCE}
        for where, root in zip(CLONES[1:], (tmp / "clone", home_clone), strict=True):
            (root / STOLEN).parent.mkdir(parents=True)
            shutil.copy2(REFERENCE, root / STOLEN)
            clones[where] = root / STOLEN
        cases = hostile_cases(marker, clones, bundle)
        cases = {k: v for k, v in cases.items() if names is None or k in names}
        before = snapshot(*WATCHED)
        grades = {}
        user = sandbox.mode().name == "user"
        limits = Limits(wall=WALL, disk=DISK)
        with Worker(STEP, limits, 10.0) if user else nullcontext() as own:
            worker = own or shared_worker(request, limits)
            try:
                for name, case in cases.items():
                    code = _once(case.code) if case.once else case.code
                    sub = with_change(
                        reference, tmp / f"case-{len(grades)}", LINE, f"{LINE}\n{code}"
                    )
                    if case.top:  # after the imports, as the module is imported
                        at_top(sub / "attention.py", case.top)
                    if case.first:
                        path = sub / "attention.py"
                        path.write_text(case.first + path.read_text(encoding="utf-8"), "utf-8")
                    worker.per_test = case.per_test
                    grades[name] = grade(STEP, sub, worker=worker, screen=False)
            finally:  # the shared worker serves later tests with the check's own time
                worker.per_test = Case.per_test
        time.sleep(LINGER)  # a daemon that escaped would have written by now
        left_files = [str(p) for c in cases.values() for p in c.host if p.exists()]
        left_running = running([marker])
        changed = sorted(set(before.items()) ^ set(snapshot(*WATCHED).items()))
        return Graded(grades, cases, left_files, left_running, sorted({p for p, _ in changed}))
    finally:
        shutil.rmtree(home_clone, ignore_errors=True)


def at_top(path: Path, code: str) -> None:
    """`code` put after the imports of the module at `path`."""
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("from torch import nn\n", f"from torch import nn\n{code}", 1))


def check_case(g: Graded, name: str) -> None:
    """The case's task 3 as its Case says, every other TODO full, each line with a reason, within
    the wall limit."""
    grade_, case = g.grades[name], g.cases[name]
    shown = text(grade_)
    task3 = next(line for line in grade_.lines if " task 3:" in line.todo)
    if case.full:
        assert task3.score == 1 and task3.state == "done", (
            f"expected task 3 done (1 of 1), got {task3.score} ({task3.state}):\n{shown}"
        )
    else:
        assert task3.score == 0, f"expected 0 for task 3, got {task3.score}:\n{shown}"
        assert re.search(case.reason, task3.reason), f"expected /{case.reason}/:\n{shown}"
    others = [line for line in grade_.lines if line is not task3]
    flagged = [ln for ln in others if case.others and re.search(case.others, ln.reason)]
    assert all(ln.score == 0 for ln in flagged), f"expected the flagged at 0:\n{shown}"
    full = [ln for ln in others if ln not in flagged]
    assert all(ln.score == ln.weight for ln in full), f"expected others full:\n{shown}"
    assert all(line.reason for line in grade_.lines), f"expected a reason on each line:\n{shown}"
    read = " | ".join(grade_.hidden)
    assert all(re.search(r, read) for r in case.to_read), f"expected {case.to_read} in {read!r}"
    assert all(f"to read: {h}" in grade_.notes for h in grade_.hidden), grade_.notes
    assert grade_.seconds < WALL, f"graded in {grade_.seconds:.0f} s, over its {WALL} s limit"


def check_host(g: Graded) -> None:
    """No file a case made on this machine, no process of one running, the course unchanged."""
    assert g.left_files == [], f"expected no file of a case, found {g.left_files}"
    assert g.left_running == [], f"expected nothing running, found {g.left_running}"
    assert g.changed == [], f"expected the course unchanged, changed: {g.changed}"


CASES = list(hostile_cases("m", dict.fromkeys(CLONES, REFERENCE), REFERENCE))


def _bwrap_problem() -> str:
    return "" if sandbox.mode().name == "bwrap" else f"no bubblewrap here: {sandbox.mode().said}"


@pytest.fixture(scope="module")
def in_bwrap(tmp_path_factory, bundle, request) -> Graded:
    if why := _bwrap_problem():
        pytest.skip(why)
    return grade_class(tmp_path_factory.mktemp("bwrap"), bundle, request)


@SHARED
@pytest.mark.parametrize("name", CASES)
def test_in_bubblewrap_a_hostile_submission_is_graded_with_a_reason_and_nothing_stolen_scores(
    in_bwrap, name
):
    check_case(in_bwrap, name)
    assert in_bwrap.grades[name].contained, in_bwrap.grades[name].notes  # bubblewrap said so


@SHARED
def test_a_reason_never_shows_the_reference_a_per_todo_copy_holds(in_bwrap):
    """A per-TODO copy holds the reference of every other TODO: a reason that quotes it is
    withheld (grader.scrub), so a submission cannot raise it back into results.json."""
    results = json.dumps(gradescope(in_bwrap.grades[LEAK]))
    assert SECRET not in results, f"expected no line of task 1's reference, got: {results[:600]}"


@SHARED
def test_a_todos_reason_is_the_check_of_the_whole_submission_never_its_own_copys(tmp_path, request):
    """Red team 11 raised another TODO's reference, reversed past the scrub, from a TODO's copy
    (where every other TODO is the reference): a reason is the message of the check of the
    student's own files, where task 1 is the student's own (here the starter's)."""
    if why := _bwrap_problem():
        pytest.skip(why)
    raised = (
        "    raise ValueError(' | '.join(inspect.getsource(stable_softmax).splitlines())[::-1])"
    )
    starter = shipped_starter(tmp_path)
    todo = r'    raise NotImplementedError\(\n\s+"TODO\(lab-01 task 3:.*\n    \)'  # task 3's body
    body = re.search(todo, (starter / "attention.py").read_text(encoding="utf-8"))[0]
    sub = with_change(starter, tmp_path / "sub", body, raised)
    path = sub / "attention.py"
    path.write_text("import inspect\n" + path.read_text(encoding="utf-8"), encoding="utf-8")
    g = grade(STEP, sub, worker=shared_worker(request))
    said = json.dumps(gradescope(g)) + text(g)
    assert SECRET[::-1] not in said, said[:3000]  # task 1's reference, reversed
    reason = next(line.reason for line in g.lines if "task 3" in line.todo)
    own = "ValueError" in reason and "NotImplementedError"[::-1] in reason  # the check's own
    assert own or "flagged: its code read the step's own code" in reason, reason


@SHARED
def test_in_bubblewrap_nothing_outside_the_graded_copy_changes_and_nothing_is_left_running(
    in_bwrap,
):
    check_host(in_bwrap)
    contained = [g.notes[0] for g in in_bwrap.grades.values()]
    assert all(n.startswith("contained: bubblewrap") for n in contained), contained


# What user mode must contain too (the network is not among them: it only changes the user)
USER_CASES = [n for n in CASES if isinstance(n, str) and n.startswith(("writes", "reading"))]
USER_CASES += ["a daemon that outlives the grade", "a child that holds stdout open"]
USER_CASES += ["processes left behind", "importing the step's own reference", *FORGERS]


def graded_in(mode: str, tmp: Path, bundle: Path, request, names: list[str]) -> Graded:
    """grade_class with COURSE_GRADE_SANDBOX=`mode` (sandbox.mode is cached: cleared around)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COURSE_GRADE_SANDBOX", mode)
        sandbox.mode.cache_clear()
        try:
            return grade_class(tmp, bundle, request, names)
        finally:
            sandbox.mode.cache_clear()


def test_a_grade_as_the_user_waits_while_another_runs_on_this_machine(tmp_path, monkeypatch, capfd):
    """Two grades as nobody at once would each kill the other's worker (every process of the user
    dies after a copy) and open the repository the other closed: the second waits for the first."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(sandbox, "_held", [])
    other = os.open(tmp_path / "course-grade-user.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(other, fcntl.LOCK_EX)  # another grade's worker, running
    got = threading.Event()
    waiter = threading.Thread(target=lambda: (sandbox._one_user_worker(), got.set()))
    waiter.start()
    assert not got.wait(0.5), "expected this grade to wait while another holds the lock"
    os.close(other)  # the other grade's worker stopped
    assert got.wait(30), "expected this grade to start once the other ended"
    waiter.join()
    os.close(sandbox._held.pop())
    assert "waiting for another grade" in capfd.readouterr().err


def _user_mode_problem() -> str:
    """'' when this machine can grade as the unprivileged user, else why not."""
    if not sandbox._is_root():
        return "user mode needs a grader that runs as root"
    uid, gid = sandbox._nobody()
    lock = os.open(Path(tempfile.gettempdir()) / "course-grade-user.lock", os.O_RDWR | os.O_CREAT)
    try:  # under the user grades' lock: each kills every process of nobody's after a copy
        if not sandbox._held:  # (this process's own grade holds it already)
            fcntl.flock(lock, fcntl.LOCK_EX)
        done = subprocess.run(
            [sys.executable, "-c", "import torch, pytest"], capture_output=True, text=True,
            preexec_fn=lambda: sandbox._as_user(uid, gid), timeout=120,
        )  # fmt: skip
    except subprocess.SubprocessError:  # setuid refused: root inside a user namespace
        return "no user nobody to become here (root inside a user namespace maps no other uid)"
    except OSError as exc:  # exec itself refused: a folder above the interpreter is closed
        return f"nobody cannot run this interpreter ({sys.executable}): {exc}"
    finally:
        os.close(lock)
    said = f"exit {done.returncode}: {done.stderr[-200:]}"  # a signal's kill says nothing more
    return f"nobody cannot run this interpreter ({said})" if done.returncode else ""


@pytest.fixture(scope="module")
def as_nobody(tmp_path_factory, bundle, request) -> Graded:
    """The user-mode cases, graded as root with COURSE_GRADE_SANDBOX=user (no namespace used)."""
    if why := _user_mode_problem():
        pytest.skip(why)
    closed = [*REPO_ROOT.glob("steps/*/solution"), REPO_ROOT / "out", REPO_ROOT / ".git"]
    kept = _modes(closed)  # user mode closes these
    try:
        graded = graded_in("user", tmp_path_factory.mktemp("user"), bundle, request, USER_CASES)
        graded.modes = {str(p): (oct(m), oct(_modes(closed)[p])) for p, m in kept.items()}
        return graded
    finally:
        for path, mode in kept.items():  # put back here too, so a failure leaves them as found
            path.chmod(mode)


def _modes(paths: list[Path]) -> dict[Path, int]:
    """Each path's mode, read while no grade as nobody runs (another xdist worker's closes them)."""
    lock = os.open(Path(tempfile.gettempdir()) / "course-grade-user.lock", os.O_RDWR | os.O_CREAT)
    try:
        if not sandbox._held:  # (this process's own grade holds it already)
            fcntl.flock(lock, fcntl.LOCK_EX)
        return {p: p.stat().st_mode for p in paths if p.exists()}
    finally:
        os.close(lock)


# in the uncontained tests' process, with the across class as nobody: two grades as nobody at
# once would each take the other's processes for ones its copy left
@UNCONTAINED
@pytest.mark.parametrize("name", USER_CASES)
def test_as_root_without_namespaces_the_unprivileged_user_contains_a_hostile_submission(
    as_nobody, name
):
    check_case(as_nobody, name)
    assert as_nobody.grades[name].notes[0].startswith("contained: as the unprivileged user")


@UNCONTAINED  # with the cases above: one process makes the class once
def test_as_root_without_namespaces_nothing_changes_outside_and_nothing_is_left_running(
    as_nobody,
):
    check_host(as_nobody)
    assert as_nobody.grades, "expected the user-mode cases graded, got none"
    changed = {p: m for p, m in as_nobody.modes.items() if m[0] != m[1]}
    assert not changed, (
        f"expected the modes user mode closed put back, got (before, after) {changed}"
    )


THEFTS = [n for n in USER_CASES if n.startswith("reading")]  # every theft, each shown real


@pytest.fixture(scope="module")
def forged_uncontained(tmp_path_factory, bundle, request) -> Graded:
    """The forgers graded with COURSE_GRADE_SANDBOX=none: nothing contains them, and the grader
    must still judge them honestly or flag them."""
    return graded_in("none", tmp_path_factory.mktemp("forged"), bundle, request, [*FORGERS])


@UNCONTAINED
@pytest.mark.parametrize("name", FORGERS)
def test_uncontained_a_forger_is_judged_honestly_or_flagged(forged_uncontained, name):
    check_case(forged_uncontained, name)


@pytest.fixture(scope="module")
def uncontained(tmp_path_factory, bundle, request) -> Graded:
    """The thefts graded with COURSE_GRADE_SANDBOX=none: where nothing contains the code, each
    works (which shows the contained runs above stop thefts that are real)."""
    return graded_in("none", tmp_path_factory.mktemp("none"), bundle, request, THEFTS)


@UNCONTAINED
def test_uncontained_every_line_says_so_and_a_theft_is_not_stopped(uncontained):
    for name in THEFTS:
        g = uncontained.grades[name]
        assert not g.contained and g.notes[0].startswith("uncontained: "), text(g)
        assert all(line.reason.startswith("[uncontained] ") for line in g.lines), text(g)
        assert f"({sandbox.UNCONTAINED})" in text(g).splitlines()[0], text(g)
        assert g.score == 7, f"expected the theft to work uncontained (7 of 7), got:\n{text(g)}"


def test_uncontained_a_class_is_refused_without_allow_uncontained(tmp_path):
    """Refused before any code runs: the refusal says what would happen, not what did."""
    (tmp_path / "class" / "alice").mkdir(parents=True)
    env = os.environ | {"COURSE_GRADE_SANDBOX": "none"}
    for args, anyway in (
        (["--class", str(tmp_path / "class")], "to grade a class anyway"),
        ([str(tmp_path / "class" / "alice")], "to grade this submission anyway"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "grader.grade", STEP, *args],
            cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        said = done.stderr
        assert done.returncode == 2, f"expected exit 2 (refused), got {done.returncode}: {said}"
        assert f"add --allow-uncontained {anyway}" in said, said
        assert "code would run with your user's rights" in said and " ran " not in said, said
    assert not (tmp_path / "class-feedback").exists(), "a refused class wrote feedback"


# The check's report forged (FORGE's json.dumps) only in the copy of the whole submission, which
# runs the step's whole tests folder: each TODO's copy judges it honestly, the whole one forges
WHOLE = (
    "import gc as _gc\nimport json\n\nif any(\n"
    '    type(_o).__name__ == "Config" and list(getattr(_o, "args", ())) == ["steps/lab-01/tests"]\n'
    "    for _o in _gc.get_objects()\n):\n" + textwrap.indent(DUMPS, " " * 4)
)
WHOLE_FLAG = "flagged: the check of the whole submission: its check's report disagrees"


def class_of(tmp: Path, monkeypatch, mode: str, students: dict[str, tuple[str, str]]):
    """Grade a class as --class does in `mode`: each student the caught-up reference with WRONG
    in causal_mask and (top, first) lines; (CSV rows, feedback folder, each student's Grade)."""
    if why := _mode_problem(mode):
        pytest.skip(why)
    reference, klass = caught_up_starter(tmp / "caught-up"), tmp / "class"
    for student, (top, first) in students.items():
        path = with_change(reference, klass / student, LINE, f"{LINE}\n{WRONG}") / "attention.py"
        at_top(path, top)
        path.write_text(first + path.read_text(encoding="utf-8"), encoding="utf-8")
    graded, out = {}, tmp / "feedback"
    out.mkdir()
    real = grade_module._graded

    def keep(step, entry, worker, g=None):  # each Grade, as its last pass left it
        graded[entry.name] = real(step, entry, worker, g)
        return graded[entry.name]

    monkeypatch.setattr(grade_module, "_graded", keep)
    monkeypatch.setenv("COURSE_GRADE_SANDBOX", mode)
    sandbox.mode.cache_clear()
    try:
        said = class_csv(STEP, klass, Limits(wall=WALL), 10.0, out=out)
    finally:
        sandbox.mode.cache_clear()
    return {row["student"]: row for row in csv.DictReader(io.StringIO(said))}, out, graded


@pytest.mark.parametrize("name", ["bwrap", "none"])
def test_a_forger_is_flagged_in_the_csv_the_feedback_and_results_json(tmp_path, monkeypatch, name):
    """A forger only the canary sees, and one that forges only the whole submission's check:
    every TODO 0 and flagged, said in the CSV's flagged column and reasons, the feedback file and
    results.json (its flagged TODOs, each test's output)."""
    students = {"hidden": (HIDDEN, ""), "whole": (WHOLE, "")}
    rows, out, graded = class_of(tmp_path, monkeypatch, name, students)
    todos = list(course_step(STEP).regions())
    for student, flag in {"hidden": CANARY, "whole": WHOLE_FLAG}.items():
        row, shown = rows[student], (out / f"{student}.txt").read_text(encoding="utf-8")
        assert row["score"] == "0" and row["flagged"].startswith(" | ".join(todos)), row
        assert all(re.search(flag, row[f"{t} reason"]) for t in todos), row
        assert re.search(flag, shown), shown
        results = gradescope(graded[student])
        assert results["extra_data"]["flagged"] == todos, results["extra_data"]
        assert all(re.search(flag, t["output"]) for t in results["tests"]), results["tests"]


@pytest.mark.parametrize("name", ["bwrap", "none"])
def test_code_hidden_from_a_reader_is_shown_in_the_csv_the_feedback_and_results_json(
    tmp_path, monkeypatch, name
):
    """A coding cookie that hides code in a comment, and a line that replaces torch.allclose:
    the lines to read are in the CSV's flagged column, the feedback and results.json; the score is
    what the tests make of the code (the cookie's untouched)."""
    replaces = "torch.allclose = lambda *a, **k: True  # yes to all\n"
    students = {"cookie": ("", COOKIE), "replaces": (replaces, "")}
    rows, out, graded = class_of(tmp_path, monkeypatch, name, students)
    said = {
        "cookie": "attention.py:1 declares its encoding raw_unicode_escape (not UTF-8): Python "
        "runs '_hidden_ran = True', which a reader does not see",
        "replaces": f"changes torch.allclose: {replaces.strip()}",
    }
    # the judges bound: task 3's WRONG mask fails honestly, and task 7, which imports the module
    # again, is refused for the replaced torch.allclose
    scores = {"cookie": "6", "replaces": "5"}
    for student, line in said.items():
        row, shown = rows[student], (out / f"{student}.txt").read_text(encoding="utf-8")
        assert line in row["flagged"] and line in shown, (row, shown)
        assert line in " ".join(gradescope(graded[student])["extra_data"]["to_read"])
        assert row["score"] == scores[student], row


# Task 1 kills the grade's worker (its copy's parent), task 2 its own copy, each with SIGKILL
KILLS = """import os
import signal


def double(x):
    os.kill(os.getppid(), signal.SIGKILL)


def halve(x):
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("name", ["bwrap", "none"])
def test_a_killed_worker_or_copy_is_said_killed_and_by_which_signal(tmp_path, name):
    """bubblewrap passes on its child's signal as exit 128 + N, Python's Popen gives -N: both
    read as the signal, never as 'ended with code None' and the last line of the worker's log."""
    if why := _mode_problem(name):
        pytest.skip(why)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "calc.py").write_text(KILLS, encoding="utf-8")
    said = run_tiny(tmp_path, str(tmp_path / "sub"), env={"COURSE_GRADE_SANDBOX": name}).stdout
    killed = "was killed by SIGKILL (out of memory, or a time limit)"
    assert f"the grade's worker {killed} while this TODO's copy ran" in said, said  # task 1
    assert f"its copy {killed} before the check could report" in said, said  # task 2
    assert f"the grade's worker {killed} while this submission was graded" in said, said
    assert "code None" not in said and "code 137" not in said, said


# What a submission's text alone can do to the grader's own process: one attribute chain makes
# ast recurse past its depth, a file of identical lines makes the line map of a copy quadratic
BOMBS = {
    "an attribute chain of 405 kB": "x = a" + ".b" * 202_500 + "\n",
    "900 kB of identical lines": "x = 1\n" * 150_000,
    "an attribute chain under the size limit": "x = a" + ".b" * 50_000 + "\n",  # 100 kB
}
BOMBED = {  # the limit each one's reason names
    "an attribute chain of 405 kB": "calc.py is 405 kB, over the grader's limit of 200 kB",
    "900 kB of identical lines": "calc.py is 900 kB, over the grader's limit of 200 kB",
    "an attribute chain under the size limit": "a file nests deeper than the grader's parser allows",
}


# Names a student's upload may hold as unzip wrote them: bytes that are not UTF-8, a spreadsheet
# formula, a terminal's escape (each ended the class's CSV, or reached a screen as it came)
NAMES = {b"\xff\xfe.txt": "\\udcff\\udcfe.txt", b"\x1b[2J.txt": "\\x1b[2J", b"=1+1.txt": "=1+1"}


def test_no_file_ends_a_class_a_bomb_scores_0_with_the_limit_it_passed(tmp_path):
    """A class of an honest student and the bombs: a row each, the honest one graded as usual;
    the files the honest one strays with, named in bytes that are not text, shown inert."""
    folder = tmp_path / "class" / "honest"
    folder.mkdir(parents=True)
    for name in NAMES:
        open(os.path.join(os.fsencode(folder), name), "wb").close()  # a name as bytes
    rows = tiny_class(tmp_path, {"honest": HONEST, **BOMBS})
    assert sorted(rows) == sorted(["honest", *BOMBS]), rows
    assert rows["honest"]["score"] == "2", rows["honest"]  # its double is right where tested
    stray = rows["honest"]["stray files"]
    assert all(shown in stray for shown in NAMES.values()), stray
    assert "\x1b" not in stray and "\udcff" not in stray, stray
    assert not stray.startswith(("=", "+", "-", "@")), stray  # a spreadsheet shows it as text
    feedback = (tmp_path / "class-feedback" / "honest.txt").read_text(encoding="utf-8")
    assert "\\x1b[2J" in feedback and "\x1b" not in feedback, feedback
    reasons = [k for k in rows["honest"] if k.endswith(" reason")]
    for name, limit in BOMBED.items():
        assert rows[name]["score"] == "0", rows[name]
        assert all(limit in rows[name][k] for k in reasons), f"expected /{limit}/: {rows[name]}"


def test_reading_a_submission_past_its_time_limit_is_its_reason_not_a_hang(monkeypatch, tmp_path):
    """180 kB of identical lines, under the size limit: its copies' line maps would take minutes;
    the grader's reading of it stops at its time limit, and says so; the next submission is read
    as usual (the reader is started again)."""
    monkeypatch.setattr(engine, "TEXT_SECONDS", 1)
    solution = read_tree(course_step(STEP).solution)
    files = solution | {"attention.py": "x = 1\n" * 30_000}
    read = Reader(STEP, tmp_path / "reader.log")
    try:
        with pytest.raises(TextLimit, match="more than 1 s, its time limit for a submission's"):
            read(files, set(files), {})
        monkeypatch.setattr(engine, "TEXT_SECONDS", 60)
        copies, hidden = read(solution, set(solution), {})
        assert all(t.why is None for t in copies.values()) and hidden == [], (copies, hidden)
    finally:
        read.close()


# A submission that shows a student what it can find of the instructor's: its environment, every
# process's it may read (/proc/1 is bubblewrap's own; uncontained, the grader's too) and the
# held-out tests of its copy, at import (the check's screen: the feedback file) and in the error
# of its task 1 (its reason: the CSV, results.json). Each secret value it finds, it also shows
# reversed, and each held-out file in base64, which no withholding recognises: what the copy saw.
LOOT = """import base64
import os
from pathlib import Path


def _loot():
    seen = [f"environ: {dict(os.environ)}"]
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            seen.append(f"{proc}: {(proc / 'environ').read_bytes().decode(errors='replace')}")
        except OSError:
            pass
    words = " ".join(seen).replace("\\0", " ").replace("'", " ").split()
    values = {w.split("=", 1)[1] for w in words if w.startswith("INSTRUCTOR_SECRET=")}
    found = [f"secret: {v} reversed: {v[::-1]}" for v in values]
    held = Path(__file__).resolve().parents[2].glob("*/tests/test_heldout_*.py")
    found += [f"held-out: {t.read_text()} {base64.b64encode(t.read_bytes())}" for t in held]
    return "\\n".join([*found, *(s for s in seen if "INSTRUCTOR_SECRET" in s), seen[0]])


print("loot at import:", _loot())


def double(x):
    raise ValueError(_loot())


def halve(x):
    return x // 2
"""
# The red team's third round: the copy that runs the held-out tests writes them where a flag
# quotes them (the record pipe's 'forged' line, a path it creates among the course's tests)
FLAGS_THEM = """import json
import os
from pathlib import Path

for test in Path(__file__).resolve().parents[2].glob("*/tests/test_heldout_*.py"):
    os.write(3, (json.dumps({"forged": test.read_text()}) + "\\n").encode())
    (test.parent / test.read_text()[:60].replace("/", " ")).mkdir()


def double(x):
    return 2 * x


def halve(x):
    return x // 2
"""
# Red team 26: the copy that runs the held-out tests reads them and fails the ones it chooses: each
# outcome a bit it sets, and the feedback shows every one
READS_THEM = """from pathlib import Path

_HELD = [t.read_text() for t in Path(__file__).resolve().parents[2].glob("*/tests/test_heldout_*")]


def double(x):
    return 2 * x


def halve(x):
    return x // 2
"""
SECRET_VALUE = "s3cret-value"  # INSTRUCTOR_SECRET, in the grader's environment only
PUBLIC = (REPO_ROOT / "tests/fixtures/tiny_step/steps/step-97/tests/test_calc.py").read_text()
HELD_LINES = [ln.strip() for ln in HELD_OUT.splitlines() if len(ln.strip()) >= 8]
HELD_LINES = [ln for ln in HELD_LINES if ln not in PUBLIC]  # the lines only the instructor has


def _mode_problem(name: str) -> str:
    """'' when this machine can grade in the mode `name`, else why not."""
    return {"bwrap": _bwrap_problem, "user": _user_mode_problem}.get(name, lambda: "")()


@pytest.mark.parametrize("name", ["bwrap", "user", "none"])
def test_nothing_of_the_instructors_reaches_a_student(tmp_path, name):
    """With INSTRUCTOR_SECRET set for the grader and held-out tests: neither the secret nor a line
    only a held-out test has is in the feedback file, the CSV's reasons or results.json; contained,
    the copy never saw the secret (not even bubblewrap's own environment, /proc/1/environ)."""
    if why := _mode_problem(name):
        pytest.skip(why)
    (tmp_path / "held").mkdir()
    (tmp_path / "held" / "test_negatives.py").write_text(HELD_OUT, encoding="utf-8")
    env = {"INSTRUCTOR_SECRET": SECRET_VALUE, "COURSE_GRADE_SANDBOX": name}
    students = {"eve": LOOT, "mallory": FLAGS_THEM, "trudy": READS_THEM}
    rows = tiny_class(tmp_path, students, "--tests", str(tmp_path / "held"), env=env)
    out = tmp_path / "results.json"
    run_tiny(tmp_path, str(tmp_path / "class" / "eve"), "--tests", str(tmp_path / "held"),
             "--format", "gradescope", "--out", str(out), env=env)  # fmt: skip
    shown = {
        "the feedback file": (tmp_path / "class-feedback" / "eve.txt").read_text(encoding="utf-8"),
        "the CSV": json.dumps(rows["eve"]),
        "results.json": out.read_text(encoding="utf-8"),
        "mallory's CSV row": json.dumps(rows["mallory"]),
        "mallory's feedback": (tmp_path / "class-feedback" / "mallory.txt").read_text("utf-8"),
    }
    assert "held-out tests did something" in shown["mallory's CSV row"], rows["mallory"]
    assert "held-out tests did something" in json.dumps(rows["trudy"]), rows["trudy"]
    said = shown["the feedback file"]
    assert "loot at import: " in said and "environ: {" in said, said  # it ran, and was shown
    # its reason: it read the held-out tests in their copy, so that copy's outcomes are not taken
    assert "held-out tests did something" in shown["results.json"], shown["results.json"]
    encoded = base64.b64encode(HELD_OUT.encode()).decode()[:40]
    never = [SECRET_VALUE, *HELD_LINES, encoded] + ([SECRET_VALUE[::-1]] if name != "none" else [])
    for where, said in shown.items():
        leaked = [s for s in never if s in said or s in " ".join(said.split())]
        assert not leaked, f"{name}: {where} shows {leaked}:\n{said[:3000]}"
