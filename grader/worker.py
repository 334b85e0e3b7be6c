"""The grade's worker, run inside the sandbox: imports torch and pytest once, then runs each copy it
is sent in a forked child, one at a time, so no copy ever sees another.

Standard library only until main() (it must not import the course: each copy brings its own).
The grader (grader/grade.py) writes frames to its stdin and reads one frame back per copy:
  in:  4-byte length, a JSON header {name, step, args, wall, cpu, memory, disk, files, tests}, each
       of the last two [[path, size]], then the files' bytes (the copy's starter, written over the
       base's), then the tests' (held-out tests, in this copy only);  {"end": true} stops.
  out: 4-byte length, a JSON header {name, returncode, timed_out, full, left, sizes}, then check.json,
       the screen and the record: one JSON line per test, sent by the check over a pipe as each
       test ends and read here while the copy runs, so nothing the copy does later rewrites it.
Between copies it kills every process the last one left (counted: `left`), and puts every place
it could write back as it was when the worker started, so no copy finds what another wrote.
"""

import contextlib
import gc
import hashlib
import importlib
import json
import os
import shutil
import signal
import struct
import sys
import time
from operator import attrgetter, is_
from pathlib import Path

_exit = os._exit  # the check replaces os._exit while it runs; the child leaves through this one
OUT = ".grade"  # inside a copy: check.json and the screen
RECORD_FD = 3  # where a copy's record plugin (_record) writes each test's outcome
RECORD_TAKEN = 75  # the copy's exit code when that descriptor is no longer the worker's pipe
HELD_TEST = "test_heldout_"  # a held-out test file's name in a copy's tests/: test_heldout_<x>.py
QUIET_IMPORT = "grade_quiet_import"  # a plugin a copy's arguments may name (-p): _quiet_import


def _read_exact(raw, n: int) -> bytearray:
    """`n` bytes from a raw pipe into one buffer (no copies left behind: it is zeroed after use)."""
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = raw.readinto(view[got:])
        if not k:
            raise EOFError("the grader closed the pipe")
        got += k
    return buf


def _header(raw) -> dict:
    (n,) = struct.unpack(">I", bytes(_read_exact(raw, 4)))
    return json.loads(bytes(_read_exact(raw, n)).decode("utf-8"))


def _send(out: int, header: dict, *blobs) -> None:
    """A frame to the grader: the header, then each blob (bytes or a Held's view), unbuffered."""
    data = json.dumps(header).encode("utf-8")
    for blob in (struct.pack(">I", len(data)) + data, *blobs):
        view = memoryview(blob)
        while view:
            view = view[os.write(out, view) :]


class Held:
    """A buffer allocated once and zeroed after each copy: what a copy sends this worker is never
    left in memory that a later copy's child inherits (Python's bytes would leave copies behind)."""

    def __init__(self, size: int):
        self.buf, self.n = bytearray(size), 0

    def view(self) -> memoryview:
        return memoryview(self.buf)[: self.n]

    def clear(self) -> None:
        self.buf[: self.n] = bytes(self.n)
        self.n = 0


def _write_copy(raw, header: dict, base: Path, copy: Path, rewritten: dict) -> dict[str, bytes]:
    """The base's files and pytest's `rewritten` code, then the frame's starter files over its
    starter/ and its held-out tests in the step's tests/ (only this copy has them); each buffer
    zeroed. The digests of what the base lacks, by path (_course_files)."""
    _remove(copy)  # read-only in parts (_read_only)
    shutil.copytree(base, copy, symlinks=False)
    for rel, data in rewritten.items():
        (copy / rel).write_bytes(data)
    starter = copy / "steps" / header["step"] / "starter"
    tests = copy / "steps" / header["step"] / "tests"
    shutil.rmtree(starter, ignore_errors=True)
    held = {rel: hashlib.sha256(data).digest() for rel, data in rewritten.items()}
    for folder, files in ((starter, header["files"]), (tests, header.get("tests", []))):
        for rel, size in files:
            target = (folder / rel).resolve()
            if not target.is_relative_to(folder.resolve()):
                raise ValueError(f"a path outside {folder.name}/: {rel}")
            target.parent.mkdir(parents=True, exist_ok=True)
            buf = _read_exact(raw, size)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, memoryview(buf))
                if folder == tests:
                    held[str((folder / rel).relative_to(copy))] = hashlib.sha256(buf).digest()
            finally:
                os.close(fd)
                buf[:] = bytes(size)  # what another copy's child could find in this memory: nothing
    (copy / OUT).mkdir()
    _read_only(copy)
    return held


def _child(copy: Path, header: dict, private: list[int], record: int) -> None:
    """In the forked child: limits, the copy as its world, pytest in this process; never returns."""
    code = 70
    try:
        for fd in private:
            os.close(fd)
        if record != RECORD_FD:  # first, before an open below takes its number
            os.dup2(record, RECORD_FD)
            os.close(record)
        _dumpable(True)
        os.setsid()  # its own group: the worker kills what it starts
        fd = os.open(copy / OUT / "screen.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        import faulthandler

        # a copy out of time is sent SIGUSR1 before it is killed: its stacks on the screen say
        # which line it hung in (its own descriptor: pytest points 2 elsewhere while a test runs)
        stacks = open(os.dup(fd), "w")  # noqa: SIM115 - open until the process ends
        faulthandler.register(signal.SIGUSR1, file=stacks, all_threads=True)
        import resource

        resource.setrlimit(resource.RLIMIT_CPU, (header["cpu"], header["cpu"] + 5))
        resource.setrlimit(resource.RLIMIT_AS, (header["memory"], header["memory"]))
        # no POSIX message queue (a place outside any folder, which outlives its maker) and no
        # file larger than all a copy may write (the worker stops it at that sum: _wait)
        resource.setrlimit(resource.RLIMIT_MSGQUEUE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (header["disk"], header["disk"]))
        os.chdir(copy)
        sys.path.insert(0, str(copy))
        os.environ.pop("COURSE_STEPS_DIR", None)
        import pytest

        sys.dont_write_bytecode = True  # no file of the copy's course is written: each is kept
        sys.modules[QUIET_IMPORT] = _quiet_import()
        given = set(header["given"]) if header["name"] != "check" else None
        record = _record(copy, header["step"], given)
        code = int(pytest.main(header["args"], plugins=[record]))
    except BaseException as exc:  # noqa: BLE001 - whatever happens, the worker must hear of it
        print(f"the copy could not run: {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        _exit(code)


def _record(copy: Path, step: str, given: set[str] | None):
    """The grade's record, the grader's pytest plugin in every copy: each test's outcome as the
    check collected it, down RECORD_FD as the test ends, so nothing the copy does afterwards
    rewrites it; then the end. Its writer and the check's own test_json are bound as pytest
    configures, before any of the copy's code is imported; so are the judges and the course's
    files, and after each test a judge replaced or emptied, a pytest hook of the student's code or
    a course file changed is sent as forged (the grader flags the copy); so is, in a copy that
    holds the reference of the TODOs it does not grade, a read of the step's code by the copy's
    own (any function of its files but those the starter gives: `given`, None for no watch)."""
    import json

    import _pytest.reports  # noqa: F401 - the judges of pytest's reporting, kept below
    import _pytest.runner  # noqa: F401
    import pytest
    import torch

    # the check's guard read from its file: importing common.check (a plugin) before pytest
    # configures would keep pytest from rewriting its asserts
    Judges = _module(copy / "common" / "check" / "guard.py", "grade_judges").Judges

    dumps, write, fd, fstat, leave = json.dumps, os.write, RECORD_FD, os.fstat, os._exit
    pipe = (fstat(fd).st_dev, fstat(fd).st_ino)  # the worker's pipe, before any of the copy's code
    judges, course, starter = Judges(), _course_files(copy), copy / "steps" / step / "starter"
    for helper in HELPERS:  # the copy's own, imported before any of the copy's code runs
        importlib.import_module(helper)
    earlier = _earlier(copy, step)  # the references its tests build expected models from
    held, kernels, traced = _held() + _held(_references(earlier)), _kernels(torch), _watch_tracers()
    dispatch, dtype, hooks = _dispatch(torch), torch.get_default_dtype(), _global_hooks()
    read = _watch_reads(starter, given) if given is not None else []
    modules = dict(sys.modules)  # each module imported before any of the copy's code ran
    # a tensor subclass or a mode answers no comparison: __torch_function__ (a subclass's and a
    # TorchFunctionMode's) and __torch_dispatch__ off while a test runs
    plain, undispatched = torch._C.DisableTorchFunction, torch._C._DisableTorchDispatch

    def forged(files: bool = False) -> str:
        """What the copy's code did to how it is judged (`files`: its course's files too), or ''."""
        if (now := torch.get_default_dtype()) is not dtype:
            return (
                f"set torch's default dtype to {now} (set_default_dtype), in which the tests make "
                "their expected values"
            )
        if (now := _global_hooks()) != hooks:
            which = next(n for n in now if now[n] != hooks.get(n))
            return (
                f"registered a hook of torch's own ({which}), which runs inside the tests' models "
                "and optimisers"
            )
        if changed := judges.restore() or _moved(held):
            return f"replaced {changed}, which the tests judge with"
        if torch._C._len_torch_function_stack() or torch._C._len_torch_dispatch_stack():
            return "left a torch mode on, which answers torch's operations in its place"
        if read and HELD_TEST in read[0]:
            return f"read a held-out test's file ({read[0]}), whose outcome is then its own to set"
        if read:
            return f"read the step's own code ({read[0]}), which holds other TODOs' reference here"
        if how := traced or _tracing():
            return (
                f"set a trace or profile function ({how[0]}), which can change a judge's variables"
            )
        if (now := _dispatch(torch)) != dispatch:
            key = sorted(set(now[0]) ^ set(dispatch[0]) or {"a key"})[0]
            return f"changed torch's dispatch ({key}), which then answers operations in its place"
        if op := next((o for o, d in _kernels(torch).items() if d != kernels[o]), None):
            return f"registered a kernel of its own for {op}, which the tests judge with"
        if mine := _hooks_from(configs, starter, known):
            return f"registered a pytest hook of its own ({mine}), which may rewrite outcomes"
        if which := next((n for n, (i, own) in items.items() if _shadowed(i) != own), None):
            return f"gave the test {which} a method of its own, which may rewrite its outcome"
        if files and (which := _changed(course, _course_files(copy))):
            return f"changed the course's own files in its copy ({which})"
        return ""

    configs = []  # pytest's config, kept as it configures
    known, items = set(), {}  # at collection: the hooks; each test's item and its own methods

    def ours() -> None:
        """End the copy at once (RECORD_TAKEN) when RECORD_FD is no longer the worker's pipe: what
        this plugin says would go elsewhere (red team 17 moved it to /dev/null, then wrote its own
        lines down a copy of it)."""
        try:
            now = fstat(fd)
        except OSError:
            leave(RECORD_TAKEN)
        if (now.st_dev, now.st_ino) != pipe:
            leave(RECORD_TAKEN)

    def send(line: dict) -> None:
        ours()
        data = (dumps(line) + "\n").encode("utf-8")
        try:
            while data:
                data = data[write(fd, data) :]
        except OSError:
            pass  # the worker stopped listening: the copy is over

    class Record:
        check, as_json = None, None

        @pytest.hookimpl(trylast=True)  # after the check has registered its collector
        def pytest_configure(self, config):
            configs.append(config)
            self.check = config.pluginmanager.get_plugin("student-check")
            self.as_json = type(self.check).test_json if self.check else None
            if self.check:  # the check's own room, its result type and its collector's methods
                self.results = self.check.results
                room = sys.modules[type(self.check).__module__]
                kept = {room.__name__: room, "Collector": type(self.check)}
                held.extend(_held(kept | {"TestResult": room.TestResult}))

        @pytest.hookimpl(wrapper=True)
        def pytest_runtest_call(self, item):
            __tracebackhide__ = True  # a failure's frames on the student's screen are theirs
            with plain(), undispatched():
                return (yield)

        def pytest_collection_finish(self, session):  # the tests are read: as before any code?
            if why := forged(files=True) or _unlike(session, modules):
                send({"forged": why})
            # the test modules' own names (expect, load, a test's helpers), from now on
            tests = {getattr(i, "module", None) for i in session.items} - {None}
            held.extend(_held({m.__name__: m for m in tests} | _references(tests)))
            known.update(_impls(configs))  # every hook there is: one added later is the copy's
            items.update({i.nodeid: (i, _shadowed(i)) for i in session.items})

        @pytest.hookimpl(trylast=True)  # after the check has kept the result
        def pytest_runtest_logreport(self, report):
            if report.when == "teardown":
                ours()  # at every test's end, whether or not a line follows
                if why := forged():
                    send({"forged": why})
            if self.check and (report.when == "call" or not report.passed):
                result = self.results.get(report.nodeid)
                if result is not None and result.outcome == "passed" and report.failed:
                    send({"forged": "made the check keep a test pytest failed as passed"})
                if self.check.results is not self.results:
                    send({"forged": "replaced the check's results"})
                if result is not None and result.step:
                    send({"test": report.nodeid, **self.as_json(self.check, result)})

        @pytest.hookimpl(trylast=True)  # after the screen and the check's own records
        def pytest_terminal_summary(self):
            if why := forged(files=True):
                send({"forged": why})
            if self.check:
                send({"end": len(self.check.results), "stopped": self.check.stopped})

    return Record()


# Where the judges look up what they call (a tensor's methods, common.expect's globals, pytest's
# Function.runtest): each of their attributes held as it was before the copy's code ran
# the course's helpers the tests call to judge (a copy swapped common.seeding's torch for its own)
HELPERS = ("common.seeding", "common.loader")
HELD = (
    "builtins", "math", "torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.optim",
    "torch.linalg", "torch.testing", "torch.Tensor", "common.expect", "_pytest.python.Function",
    "_pytest.runner", "_pytest.runner.CallInfo", "_pytest.reports.TestReport",
    "_pytest._code.code.ExceptionInfo", *HELPERS,
)  # fmt: skip
# what torch itself replaces as it lazily imports a part of itself: building the first optimiser
# imports torch._dynamo, which wraps torch.manual_seed (tests seed with generators of their own);
# set_default_dtype rebinds torch.Storage (the dtype itself is looked at in `forged`)
TORCHS_OWN = {"torch.manual_seed", "torch.Storage"}
CODE, DEFAULTS = attrgetter("__code__"), attrgetter("__defaults__")


# the operators the judges compare with (common.expect's !=, any, equal, the distance's sub
# and abs): a kernel registered over torch's (torch.library) answers in their place
JUDGED_OPS = ("any", "any.dim", "all", "equal", "ne.Tensor", "ne.Scalar", "eq.Tensor",
              "eq.Scalar", "sub.Tensor", "abs", "_to_copy", "_local_scalar_dense", "is_nonzero",
              "nonzero", "isclose", "allclose", "max", "isfinite", "isnan", "nan_to_num",
              "gt.Scalar", "ge.Scalar", "lt.Scalar", "le.Scalar")  # fmt: skip


# what sets a function that runs at every line or call of the judges (a trace function can write a
# judge's locals); the check's own line events use sys.monitoring's tool CHECK_TOOL, no tracer
TRACERS = (("sys", "settrace"), ("sys", "setprofile"), ("threading", "settrace"),
           ("threading", "setprofile"), ("threading", "settrace_all_threads"),
           ("threading", "setprofile_all_threads"))  # fmt: skip
CHECK_TOOL = (4, "course-check")  # common.check.collect.Collector.TOOL


def _watch_tracers() -> list[str]:
    """Each of TRACERS replaced by one that notes its call (in the list returned) before it sets
    anything: a trace set and removed within one test is seen too."""
    import threading  # noqa: F401 - TRACERS' module

    called = []

    def watched(name: str, real):
        def setter(*args, **kwargs):
            called.append(name)
            return real(*args, **kwargs)

        return setter

    for module, name in TRACERS:
        owner = sys.modules[module]
        if hasattr(owner, name):
            setattr(owner, name, watched(f"{module}.{name}", getattr(owner, name)))
    return called


def _watch_reads(starter: Path, given: set[str]) -> list[str]:
    """An audit hook (never removed) that notes each .py file of the starter (the student's files)
    opened by the copy's code (any function of its files but the `given` ones) but for an import:
    in a TODO's copy they hold the other TODOs' reference, and a student's code has no need to
    read them; nor the held-out tests, in the copy that runs them (their outcomes would be its)."""
    root, theirs = os.path.realpath(starter.parent), os.path.realpath(starter)
    tests = os.path.join(root, "tests", HELD_TEST)
    seen = []

    def hook(event: str, args: tuple) -> None:
        if event != "open" or seen or not isinstance(args[0], str | bytes | os.PathLike):
            return
        path = os.path.realpath(os.fsdecode(args[0]))
        held = path.startswith(tests)  # the held-out tests, there in their own copy only
        if not (held or path.startswith(theirs + os.sep) and path.endswith(".py")):
            return
        frame = sys._getframe(1)
        if frame.f_code.co_filename == IMPORTS and not _loaded(path):
            return  # an import reads the module it is about to run, once
        while frame is not None:  # the innermost frame of a reporter's or of the copy's decides
            code = frame.f_code
            if code.co_filename.startswith(REPORTERS):  # a warning or an unraisable error shown
                return  # reads its source line, whenever it comes (a file closed by the GC)
            if code.co_filename.startswith(theirs + os.sep):  # the student's files: whose code?
                if code.co_qualname not in given:
                    seen.append(os.path.relpath(path, os.path.dirname(root)))
                return
            frame = frame.f_back

    sys.addaudithook(hook)
    return seen


IMPORTS = "<frozen importlib._bootstrap_external>"  # where an import opens a module's source
# what shows a warning, an error or a stack with its source lines: warnings, traceback (a student's
# traceback.print_exc() left in), pytest's hooks
REPORTERS = (
    __import__("warnings").__file__,
    __import__("traceback").__file__,
    os.path.dirname(__import__("_pytest").__file__),
)


def _loaded(path: str) -> bool:
    """Whether a module imported so far was loaded from `path` (a real path). Only files of the
    same name are resolved: the real path of every module's file took 35 ms, at each import."""
    name = os.path.basename(path)
    files = (getattr(m, "__file__", None) for m in list(sys.modules.values()))
    return any(
        isinstance(f, str) and f.endswith(name) and os.path.realpath(f) == path for f in files
    )


def _tracing() -> list[str]:
    """A trace or profile function on, or a sys.monitoring tool the check did not take, by name."""
    import threading

    on = [f"sys.{n}" for n in ("gettrace", "getprofile") if getattr(sys, n)() is not None]
    on += [f"threading.{n}" for n in ("gettrace", "getprofile") if getattr(threading, n)()]
    tools = [(i, sys.monitoring.get_tool(i)) for i in range(6)]
    return on + [f"sys.monitoring tool {i}" for i, t in tools if t and (i, t) != CHECK_TOOL]


def _dispatch(torch) -> tuple[list[str], str, str]:
    """The dispatch keys with a backend fallback (every operator of such a key goes through it),
    and this thread's included and excluded keys: a fallback turned on answers any operator."""
    keys = torch._C.DispatchKey
    fallbacks = [
        n for n, k in keys.__members__.items() if torch._C._dispatch_has_backend_fallback(k)
    ]
    tls = torch._C._dispatch_tls_local_include_set(), torch._C._dispatch_tls_local_exclude_set()
    return fallbacks, str(tls[0]), str(tls[1])


def _kernels(torch) -> dict[str, list[str]]:
    """Each judged operator's dispatcher table, as torch registered it (Meta kernels, which torch
    adds as it lazily imports its parts, left out)."""
    return {
        op: [ln for ln in torch._C._dispatch_dump(f"aten::{op}").splitlines() if "Meta" not in ln]
        for op in JUDGED_OPS
    }


# torch's hooks on every module's forward and backward and every optimiser's step: one of them
# runs in a test's own model and reference optimiser (red team 23 scaled their weights with it)
GLOBAL_HOOKS = {
    "torch.nn.modules.module": ("_global_forward_hooks", "_global_forward_pre_hooks",
                                "_global_forward_hooks_always_called",
                                "_global_forward_hooks_with_kwargs", "_global_backward_hooks",
                                "_global_backward_pre_hooks", "_global_is_full_backward_hook",
                                "_global_module_registration_hooks",
                                "_global_parameter_registration_hooks",
                                "_global_buffer_registration_hooks"),
    "torch.optim.optimizer": ("_global_optimizer_pre_hooks", "_global_optimizer_post_hooks"),
}  # fmt: skip


def _global_hooks() -> dict[str, tuple]:
    """Each of GLOBAL_HOOKS as it is now: the object and what it holds, by name."""
    found = {}
    for module, names in GLOBAL_HOOKS.items():
        for name in names:
            value = getattr(sys.modules.get(module), name, None)
            held = tuple(value.items()) if isinstance(value, dict) else value
            found[f"{module}.{name}"] = (id(value), held)
    return found


def _built(torch) -> dict[str, type]:
    """torch's layers and optimisers, the classes a test builds its expected model and step from
    (a LayerNorm, an SGD), each built once first: an optimiser's first build wraps its class's
    step (torch's profiling hook), and must not read as the copy's change."""
    classes = {f"torch.nn.{k}": v for k, v in vars(torch.nn).items()
               if isinstance(v, type) and issubclass(v, torch.nn.Module)}  # fmt: skip
    weight = torch.zeros(1, requires_grad=True)
    for k, v in vars(torch.optim).items():
        if isinstance(v, type) and issubclass(v, torch.optim.Optimizer):
            with contextlib.suppress(Exception):  # one that needs more than a weight: as it is
                v([weight])
            classes[f"torch.optim.{k}"] = v
    return classes


def _held(owners: dict[str, object] | None = None) -> list[tuple]:
    """(owner's name, its namespace, what each name added to it would shadow (a base class's, a
    builtin), each attribute with its value and its code) for HELD's modules and classes and
    torch's layers and optimisers (or `owners`, by name), now."""
    if owners is None:
        found = {n: sys.modules.get(n) or getattr(sys.modules.get(n.rpartition(".")[0]),
                                                  n.rpartition(".")[2], None) for n in HELD}  # fmt: skip
        owners = {name: owner for name, owner in found.items() if owner is not None}
        owners |= _built(sys.modules["torch"])
    held = []
    for name, owner in owners.items():
        space = vars(owner)
        kept = [(k, v, getattr(v, "__code__", None), getattr(v, "__defaults__", None))
                for k, v in list(space.items())]  # fmt: skip
        # what a name not in the namespace resolves to now: the same value set there changes nothing
        inherited = {k: getattr(owner, k, None) for k in set(dir(owner)) - set(space)}
        inherited |= {k: v for k, v in vars(sys.modules["builtins"]).items() if k not in space}
        coded = [entry for entry in kept if entry[2] is not None]  # and each one's defaults
        same = ([v for _, v, _, _ in kept], [v for _, v, _, _ in coded],
                [code for _, _, code, _ in coded], [d for _, _, _, d in coded])  # fmt: skip
        held.append((name, space, inherited, kept, set(space), same))
    return held


def _earlier(copy: Path, step: str) -> list:
    """The earlier steps' modules the step's [uses] names, loaded by the copy's own loader before
    any of the copy's code runs (each is loaded once: the tests and the student's code get these)."""
    import tomllib

    loader, found = sys.modules["common.loader"], []
    uses = tomllib.loads((copy / "steps" / step / "step.toml").read_text("utf-8")).get("uses", {})
    for name, modules in uses.items():
        for module in modules:
            with contextlib.suppress(Exception):  # one that does not load: its tests say so
                found.append(loader.reference(name, module))
    return found


def _references(roots) -> dict[str, object]:
    """The earlier steps' references among `roots` and the modules they hold (a module the loader
    named _course_..., not the student's), with their classes: a test builds its expected model
    from them (Step 5's GPT and its Block, Step 4's Head)."""
    found, seen = {}, set()
    todo = [m for r in roots for m in (r, *vars(r).values()) if isinstance(m, type(sys))]
    while todo:  # and the references they import (Step 5's gpt imports Step 4's head)
        module = todo.pop()
        name = module.__name__
        if name in seen or not name.startswith("_course_") or "starter" in name or "fresh" in name:
            continue
        seen.add(name)
        found[name] = module
        for k, v in vars(module).items():
            if isinstance(v, type(sys)):
                todo.append(v)
            elif isinstance(v, type) and v.__module__ == name:
                found[f"{name}.{k}"] = v
    return found


def _unlike(session, modules: dict) -> str:
    """A name of a test module that holds another object than the module (or a module's function
    or class) it was imported as, before any of the copy's code ran, or ''."""
    for module in {getattr(i, "module", None) for i in session.items} - {None}:
        for key, value in vars(module).items():
            origin = getattr(value, "__name__", None) if isinstance(value, type(sys)) else None
            owner = getattr(value, "__module__", None) if callable(value) else None
            if origin in modules and modules[origin] is not value:
                return f"{module.__name__}.{key} is not the module {origin}"
            real = getattr(modules.get(owner), getattr(value, "__name__", ""), value)
            if (
                owner in modules
                and callable(real)
                and real is not value
                and owner != module.__name__
            ):
                return f"{module.__name__}.{key} is not {owner}.{value.__name__}"
    return ""


def _moved(held: list[tuple]) -> str:
    """What of `held` has been replaced, deleted, emptied or shadowed since, named ('' none).
    Run after every test: identities only, and a name added looked at once (torch adds its own)."""
    moved = []
    for name, space, inherited, kept, known, (values, functions, codes, defaults) in held:
        with contextlib.suppress(Exception):  # as it was, in C loops (a test's 5 ms, not 0.1 s)
            if (
                len(space) == len(values)
                and all(map(is_, space.values(), values))  # each value the same object
                and all(map(is_, map(CODE, functions), codes))  # each function its own code
                and all(map(is_, map(DEFAULTS, functions), defaults))  # and its own defaults
            ):
                continue
        get = space.get
        changed = [
            k
            for k, v, code, made in kept
            if get(k) is not v
            or code is not None
            and (v.__code__ is not code or getattr(v, "__defaults__", None) is not made)
        ]
        if len(space) != len(known):  # names added (or taken away: those are changed above)
            added = [k for k in list(space) if k not in known]
            changed += [k for k in added if k in inherited and space[k] is not inherited[k]]
            known.update(k for k in added if k not in inherited)
        moved += [f"{name}.{k}" for k in changed if f"{name}.{k}" not in TORCHS_OWN]
    return ", ".join(moved[:3]) + (f" and {len(moved) - 3} more" if len(moved) > 3 else "")


def _module(path: Path, name: str):
    """The module at `path`, imported as `name` alone (no package of it imported)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _course_roots(copy: Path) -> list[Path]:
    """Where the copy's course that judges it lives: common/, the conftest and its compiled code,
    each step's tests."""
    roots = [copy / name for name in ("common", "conftest.py", "__pycache__")]
    return roots + sorted((copy / "steps").glob("*/tests"))


def _course_files(copy: Path) -> dict[str, bytes]:
    """Every file of the copy's course (_course_roots), by path, as its sha256: none may change
    while the copy runs (a pytest .pyc planted included). Read into a buffer zeroed after: a
    held-out test's text stays in no memory that a later copy's child inherits. Walked as plain
    strings, not Path: it runs four times a copy."""
    found, top = {}, str(copy)
    for root in map(str, _course_roots(copy)):
        if not os.path.isdir(root) or os.path.islink(root):
            _digest(root, found, len(top) + 1)
            continue
        for folder, dirs, files in os.walk(root):  # links to folders are files here, not walked
            dirs.sort()
            links = [d for d in dirs if os.path.islink(os.path.join(folder, d))]
            for name in sorted(files + links):
                _digest(os.path.join(folder, name), found, len(top) + 1)
    return found


def _digest(path: str, into: dict[str, bytes], cut: int) -> None:
    """`path`'s sha256 into `into` under its name past `cut` characters (nothing if unreadable)."""
    with contextlib.suppress(OSError), open(path, "rb", buffering=0) as file:
        buf = bytearray(os.fstat(file.fileno()).st_size)
        file.readinto(buf)
        into[path[cut:]] = hashlib.sha256(buf).digest()
        buf[:] = bytes(len(buf))


def _rewritten(base: Path, copy: Path, step: str) -> dict[str, bytes]:
    """pytest's rewritten code of what every copy's run rewrites (the conftests, the step's tests,
    the check, a plugin), compiled once as each copy will see it, by path: a copy writes no .pyc,
    and rewrote these a tenth of a second each time. Read by pytest as its own (a .pyc of the
    source's time and size); a held-out test, not here, is rewritten in its copy."""
    import ast
    import importlib.util
    import marshal

    from _pytest.assertion.rewrite import PYC_TAIL, rewrite_asserts

    found = {}
    tests, check = base / "steps" / step / "tests", base / "common" / "check"
    for path in [base / "conftest.py", *sorted(tests.glob("*.py")), *sorted(check.glob("*.py"))]:
        rel, source, stat = path.relative_to(base), path.read_bytes(), path.stat()
        tree = ast.parse(source, filename=str(copy / rel))
        rewrite_asserts(tree, source, str(copy / rel))  # no config: the course's ini is pytest's
        code = compile(tree, str(copy / rel), "exec", dont_inherit=True)
        head = [int(stat.st_mtime), stat.st_size]  # what pytest checks the source against
        fields = b"".join((n & 0xFFFFFFFF).to_bytes(4, "little") for n in head)
        pyc = importlib.util.MAGIC_NUMBER + bytes(4) + fields + marshal.dumps(code)
        found[str(rel.parent / "__pycache__" / (path.stem + PYC_TAIL))] = pyc
    return found


def _changed(was: dict[str, bytes], now: dict[str, bytes]) -> str:
    """The first path whose file differs between `was` and `now` (added, removed, changed), or ''."""
    return min((p for p in was.keys() | now.keys() if was.get(p) != now.get(p)), default="")


def _hooks_from(configs: list, starter: Path, known: set[int]) -> str:
    """The first pytest hook implemented by code under `starter` (the student's), or, once the
    tests are collected (`known`: each hook's function then), registered since, or ''."""
    if not configs:
        return ""
    mine = tuple(dict.fromkeys([f"{starter}{os.sep}", f"{starter.resolve()}{os.sep}"]))
    for name, caller in vars(configs[0].pluginmanager.hook).items():
        for impl in getattr(caller, "get_hookimpls", list)():
            function = getattr(impl, "function", None)
            code = getattr(function, "__code__", None)
            if code and code.co_filename.startswith(mine) or known and id(function) not in known:
                return name
    return ""


def _impls(configs: list) -> set[int]:
    """The ids of the functions of every pytest hook registered now."""
    callers = vars(configs[0].pluginmanager.hook).values() if configs else ()
    return {id(i.function) for c in callers for i in getattr(c, "get_hookimpls", list)()}


def _shadowed(item) -> set[str]:
    """The names of a test item's methods (runtest) that the item itself holds in their place."""
    return {k for k in vars(item) if callable(getattr(type(item), k, None))}


def _read_only(copy: Path) -> None:
    """The copy's course (common/, each step's tests, the conftest) read-only: a copy that writes
    its own tests or the course's checks is refused (and, if it gets past that, flagged)."""
    for root in _course_roots(copy):
        for path in [root] if root.is_file() else [*root.rglob("*"), root]:  # root last
            with contextlib.suppress(OSError):
                path.chmod(0o555 if path.is_dir() else 0o444)


def _quiet_import():
    """A pytest plugin (a module, for `-p`): the step's modules, imported as the session starts,
    import with their warnings ignored. pytest's filterwarnings=error makes a warning there an
    error, and the check then sets the whole step aside: in every TODO's copy, each would score 0
    for one line that is none of theirs. The tests still fail on a warning."""
    import types
    import warnings

    import pytest

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionstart(session):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return (yield)

    # named by -p, pytest would warn that it cannot rewrite this module's asserts (it has none)
    plugin = types.ModuleType(QUIET_IMPORT, "PYTEST_DONT_REWRITE")
    plugin.pytest_sessionstart = pytest_sessionstart
    return plugin


def _others() -> list[int]:
    """Every live process a copy may have left: in a PID namespace of its own, all but this worker
    and its init; as a user of its own, every process of that user but this worker; elsewhere,
    this worker's descendants (it is their subreaper: a daemon that left its parent comes here)."""
    me, uid = os.getpid(), os.getuid()
    alone, own_user = os.environ.get("COURSE_GRADE_PIDNS") == "1", _kill_all()
    found, parents = [], {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in (me, 1):
            continue
        try:
            state, parent = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
            if state in "ZX":
                continue  # dead already: only its exit status is left, for this worker to reap
            if alone or (own_user and entry.stat().st_uid == uid):
                found.append(int(entry.name))
            else:
                parents[int(entry.name)] = int(parent)
        except (OSError, ValueError):
            continue  # gone already
    mine, grew = {me}, True
    while grew:  # descendants of this worker, however deep
        more = {pid for pid, parent in parents.items() if parent in mine} - mine
        mine |= more
        grew = bool(more)
    return sorted(set(found) | (mine - {me}))


def _kill_all() -> bool:
    return os.environ.get("COURSE_GRADE_KILL") == "all"


def _kill_leftovers(child: int) -> int:
    """Kill every process the copy left, once its child has ended (its group, and _others);
    return how many were left running."""
    left: set[int] = set()
    for _ in range(20):  # a process may fork while we kill: until none is left
        pids = _others()
        if not pids:
            break
        left |= set(pids)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child, signal.SIGKILL)
            if _kill_all():  # every process of its namespace or user but itself, in one call:
                os.kill(-1, signal.SIGKILL)  # one that forks to change its PID cannot slip by
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
        _reap()
    _reap()
    return len(left)


def _reap() -> None:
    """Collect the exit status of every dead child (orphans come to this worker, the subreaper)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if not pid:
            return


def _subreaper() -> None:
    """Linux: orphans of a copy become this worker's children, not init's, so none escapes."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def _wait(child: int, wall: float, record: int, got: "Held", full) -> tuple[int | None, str]:
    """(exit code or -signal, '' or why it was stopped) of the child, killed at `wall` seconds or
    as soon as `full()` says it wrote too much (asked twice a second); what it writes to the
    record pipe is read into `got` meanwhile (a full pipe would stop it)."""
    deadline, look = time.monotonic() + wall, 0.0
    while time.monotonic() < deadline:
        _drain(record, got)
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid:
            return os.waitstatus_to_exitcode(status), ""
        if time.monotonic() > look and (why := full()):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child, signal.SIGKILL)  # its whole group: a writer it started too
            os.waitpid(child, 0)
            return None, why
        look = max(look, time.monotonic() + 0.5)
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):
        os.kill(child, signal.SIGUSR1)  # faulthandler writes where each thread is
        time.sleep(0.5)
        os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)  # SIGKILL cannot be refused: this returns
    return None, "time"


def _cap(disk: int, roots: list[Path], places: "Places | None"):
    """A look at what the copy wrote since now, in `roots` and what `places` did not hold: why it
    wrote too much ('' while it did not)."""

    def written() -> int:
        return sum(_used(r) for r in roots) + (places.made() if places else 0)

    start = written()  # the copy's own files, just written

    def full() -> str:
        if (n := written() - start) <= disk:
            return ""
        return (
            f"its copy wrote more than {disk >> 20} MB ({n >> 20} MB), all a copy may write in "
            "its folder, /tmp and /dev/shm"
        )

    return full


def _used(path: Path) -> int:
    """Bytes of disk (or of a tmpfs's memory) that the files under `path` take."""
    total = 0
    with contextlib.suppress(OSError):
        total = os.lstat(path).st_blocks * 512  # a file (os.walk yields nothing for one)
    for folder, dirs, names in os.walk(path, onerror=lambda e: None):
        for name in [*dirs, *names]:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_blocks * 512
    return total


RECORD_LIMIT = 4 * 2**20  # bytes of record a copy may send: far more than a step's tests need
SCREEN_LIMIT = 200_000  # bytes of a copy's screen sent back: its last ones


def _drain(fd: int, got: Held) -> None:
    """Whatever the record pipe holds now, appended to `got` (non-blocking; nothing past its end)."""
    import select

    while got.n < len(got.buf) and select.select([fd], [], [], 0)[0]:
        try:
            k = os.readv(fd, [memoryview(got.buf)[got.n :]])
        except BlockingIOError:
            return
        if not k:
            return
        got.n += k


class Places:
    """Every folder a copy could write, as it was when the worker started: after each copy, what
    this user made there since, its SysV IPC objects and keyrings go (nothing left for the next)."""

    FIXED = ("/tmp", "/var/tmp", "/dev", "/run/lock", "/var/lock")

    def __init__(self, work: Path):
        roots = {Path(p) for p in self.FIXED} | {work, Path.home()}
        roots.add(Path(os.environ.get("TMPDIR", "/tmp")))
        if os.environ.get("COURSE_GRADE_SCAN") == "1":  # user mode: the machine's own folders too
            roots.add(Path("/"))
        self.uid = os.getuid()
        self.folders: dict[Path, tuple[set[str], int | None]] = {}  # -> (entries, mode if ours)
        self.times: dict[Path, tuple[int, int]] = {}  # our folders' access and change times
        for root in sorted(r for r in roots if r.is_dir()):
            for folder in _writable(root):
                if folder not in self.folders:
                    st = folder.stat()
                    entries = set(os.listdir(folder))
                    self.folders[folder] = (entries, st.st_mode if st.st_uid == self.uid else None)
                    if st.st_uid == self.uid:
                        self.times[folder] = (st.st_atime_ns, st.st_mtime_ns)

    def made(self) -> int:
        """Bytes of what this user made in these folders since the worker started."""
        return sum(_used(path) for path in self._new())

    def _new(self) -> list[Path]:
        """What this user made in these folders since the worker started."""
        found = []
        for folder, (entries, _) in self.folders.items():
            with contextlib.suppress(OSError):
                for name in set(os.listdir(folder)) - entries:
                    with contextlib.suppress(OSError):
                        if (folder / name).lstat().st_uid == self.uid:
                            found.append(folder / name)
        return found

    def wipe(self) -> None:
        """Remove what this user made in these folders since the worker started."""
        for folder, (_, mode) in self.folders.items():
            if mode is not None:  # ours: a copy may have closed it, moved it or removed it
                try:
                    folder.mkdir(parents=True, exist_ok=True)
                    os.chmod(folder, mode & 0o7777)
                    for name in os.listxattr(folder):  # a stash needs no file: an attribute
                        if name.startswith("user."):
                            os.removexattr(folder, name)
                except (OSError, AttributeError):  # AttributeError: no xattrs on this OS
                    pass
        for path in self._new():
            _remove(path)
        for folder, times in self.times.items():  # a stash needs no file: a folder's times
            with contextlib.suppress(OSError):
                os.utime(folder, ns=times)
        _clear_ipc(self.uid)


PRUNED = ("/proc", "/sys", "/usr", sys.base_prefix, sys.prefix)  # never writable by a copy


def _writable(root: Path) -> list[Path]:
    """Every folder under `root` (itself included) this user may create files in."""
    found = []
    for folder, dirs, _ in os.walk(root, onerror=lambda e: None):
        dirs[:] = [d for d in dirs if os.path.join(folder, d) not in PRUNED]
        if os.access(folder, os.W_OK | os.X_OK):
            found.append(Path(folder))
    return found


def _remove(path: Path) -> None:
    """Remove a file or a whole folder this user owns, even one it made unreadable to itself."""
    with contextlib.suppress(OSError):
        if not path.is_dir() or path.is_symlink():
            path.unlink()
            return
        os.chmod(path, 0o700)
        for folder, dirs, _ in os.walk(path, onerror=lambda e: None):
            for name in dirs:  # opened before os.walk goes in
                with contextlib.suppress(OSError):
                    os.chmod(Path(folder) / name, 0o700)
        shutil.rmtree(path, ignore_errors=True)


KEYCTL = {"x86_64": 250, "aarch64": 219}  # the keyctl system call's number on each machine


def _clear_ipc(uid: int) -> None:
    """Linux: remove this user's SysV shared memory, message queues and semaphores, and clear its
    keyrings: each outlives the process that made it."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    # the owner's column in each of /proc/sysvipc's tables; IPC_RMID is 0 for all three calls
    for kind, column in (("shm", 7), ("msg", 7), ("sem", 4)):
        try:
            rows = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if int(cols[column]) != uid:
                continue
            if kind == "shm":
                libc.shmctl(int(cols[1]), 0, None)
            elif kind == "msg":
                libc.msgctl(int(cols[1]), 0, None)
            else:
                libc.semctl(int(cols[1]), 0, 0)
    if number := KEYCTL.get(os.uname().machine):
        for ring in (-4, -5):  # KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING
            libc.syscall(number, 7, ring)  # KEYCTL_CLEAR


def _read(path: Path, into: Held) -> None:
    """A file's last bytes, as many as `into` holds (none when the copy left no such file)."""
    with contextlib.suppress(OSError), path.open("rb", buffering=0) as f:
        f.seek(max(0, os.fstat(f.fileno()).st_size - len(into.buf)))
        while into.n < len(into.buf) and (k := f.readinto(memoryview(into.buf)[into.n :])):
            into.n += k


def _warm() -> None:
    """Import once what every copy's run imports, so each forked child starts warm."""
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = (
        "1"  # no entry-point scan per copy: -p names them
    )
    import pytest  # noqa: F401
    import torch
    import torch.nn.functional  # noqa: F401

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        figure = plt.figure()  # a text drawn once loads its font (2 s), here and not per copy
        figure.text(0, 0, "warm $x_t$")
        figure.canvas.draw()
        plt.close(figure)
    except ImportError:  # a course without figures
        pass
    torch.manual_seed(0)  # initialises torch's default generator before the fork
    _built(torch)  # each optimiser's first build (it imports torch._dynamo: 2 s) paid once here


def _warm_step(step: Path) -> None:
    """What the step's code pays for on first use, paid once here rather than in every copy, and
    only by a step that uses it: torch._dynamo, which an optimiser's first step imports (1.6 s);
    torch.testing's first comparison, which imports sympy and torch.distributed (0.9 s)."""
    import torch

    code = [p.read_text("utf-8", "replace") for p in step.rglob("*.py")]
    if any("torch.optim" in text for text in code):
        import torch._dynamo  # noqa: F401
    if any("torch.testing" in text for text in code):
        torch.testing.assert_close(torch.zeros(1), torch.zeros(1))


def _dumpable(on: bool) -> None:
    """Linux: whether processes of the same user may trace this one or read its memory. The worker
    is not (a copy's child must not reach into it); each child is again (pytest reads /proc/self)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(4, int(on), 0, 0, 0)  # PR_SET_DUMPABLE


def main() -> int:
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent]
    base, work = Path(sys.argv[1]), Path(sys.argv[2])
    sys.modules.setdefault("triton", None)  # as common/__init__.py: CUDA torch's triton stays out
    _warm()
    _dumpable(False)
    _subreaper()

    raw = open(os.dup(0), "rb", buffering=0)  # noqa: SIM115 - the grader's frames
    out = os.dup(1)  # the answers, written unbuffered (no copy of them left in a buffer)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)  # a child never writes into the answers by accident, nor on purpose
    private = [raw.fileno(), out]
    report, screen, got = Held(8 * 2**20), Held(SCREEN_LIMIT), Held(RECORD_LIMIT)
    held = (report, screen, got)
    copy = work / "copy"
    header = _header(raw)
    rewritten = {}
    if not header.get("end"):  # the first copy names the step; its places are taken after this
        _warm_step(base / "steps" / header["step"])
        rewritten = _rewritten(base, copy, header["step"])
    places = Places(work) if os.environ.get("COURSE_GRADE_WIPE") == "1" else None
    course = _course_files(base)  # what every copy's course must stay
    # what every child inherits, out of the collector's sight: a child's collections then never
    # walk (and so never copy) the worker's million objects of torch, pytest and matplotlib
    gc.freeze()
    while not header.get("end"):
        added = _write_copy(raw, header, base, copy, rewritten)
        full = _cap(header["disk"], [work] if places is None else [], places)
        record_r, record_w = os.pipe()
        child = os.fork()
        if child == 0:
            _child(copy, header, [*private, record_r], record_w)
        os.close(record_w)  # the copy's processes hold the only writing end
        code, stopped = _wait(child, header["wall"], record_r, got, full)
        stopped = stopped or full()  # it filled a tmpfs (the kernel's cap) and ended before a look
        left = _kill_leftovers(child)
        _drain(record_r, got)  # what the copy wrote before it ended; nothing can be added now
        os.close(record_r)
        _read(copy / OUT / "check.json", report)
        _read(copy / OUT / "screen.txt", screen)
        changed = _changed(course | added, _course_files(copy))
        _remove(copy)
        if places:
            places.wipe()
        sizes = [report.n, screen.n, got.n]
        answer = {"name": header["name"], "returncode": code, "timed_out": stopped == "time"}
        answer["full"] = stopped if stopped != "time" else ""  # why it was stopped for its writes
        answer["changed"] = changed  # a course file the copy left changed, or ''
        _send(out, answer | {"sizes": sizes, "left": left}, *(h.view() for h in held))
        for h in held:  # what the next copy's child could find in memory: zeros
            h.clear()
        header = _header(raw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
