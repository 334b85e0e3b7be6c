"""The grade's engine: each TODO scored on its own tests, in a copy where every other TODO its tests
run is the reference's, all inside the sandbox (grader/sandbox.py) through one worker (grader/worker.py).

Which tests are a TODO's own is read off the reference's run (CONTRIBUTING, "How a grade is made").
"""

import ast
import builtins
import codecs
import compileall
import contextlib
import difflib
import fcntl
import functools
import hashlib
import importlib.metadata
import json
import math
import os
import re
import resource
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
import unicodedata
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from common import OUT_DIR, REPO_ROOT, SOLUTIONS_DIR, STEPS_DIR, shown, source_lines, write_json
from common.course import course, course_step
from common.course.bugs import committed
from common.course.todos import Todo, module_name, parse, raised_todos, split_id, without_code
from common.loader import py_files
from grader.sandbox import Limits, ended_by, instructor_values, start, stop
from grader.variants import given_from_reference, read_tree, variant
from grader.worker import HELD_TEST as HELD
from grader.worker import RECORD_TAKEN, SCREEN_LIMIT
from tools import pristine
from tools.release import released_bugs

REFUSED = "the graded copy holds no reference solution of this step: grade your own code"
COURSE_FILES = ["common", "conftest.py", "pyproject.toml"]
GRACE = 30.0  # seconds past a submission's wall limit the worker gets to answer before it is killed
PIPE = 65536  # bytes written to the worker at a time: a pipe's buffer
TRUSTED = 120.0  # CPU seconds per test for the reference's own runs: a loaded machine is no bug


# --- the graded base: the course as shipped, without this step's reference ----------------------


def hollow(text: str, where: str) -> str:
    """A marked solution file without its reference code: each region raises REFUSED (a shipped
    bug keeps its STARTER code); the markers stay, so the check still reads the regions."""
    refused = lambda r: r.starter or [f'{r.indent}raise RuntimeError("{REFUSED}")']  # noqa: E731
    return without_code(text, where, refused, header=False)


def build_base(step: str, dest: Path) -> Path:
    """A small repository under `dest`: the course's code, the earlier steps as shipped, and this
    step with its reference taken out of solution/ (but the modules its [grade] keeps)."""
    root = dest / "base"
    root.mkdir(parents=True)
    for name in COURSE_FILES:
        src = REPO_ROOT / name
        if src.is_dir():
            shutil.copytree(src, root / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, root / name)
    if SOLUTIONS_DIR.is_dir():
        shutil.copytree(
            SOLUTIONS_DIR, root / "solutions", ignore=shutil.ignore_patterns("__pycache__")
        )
    here = course_step(step, STEPS_DIR)
    earlier = [s.name for s in course() if s.order < here.order and not s.checkpoint]
    pristine([*earlier, step], root)
    if here.bugs():  # the rows the check shows, not the reference lines bugs.py commits
        (root / "steps" / step / "bugs.py").write_text(released_bugs(here), encoding="utf-8")
    solution = root / "steps" / step / "solution"
    kept = (here.grade or {}).get("reference_kept", [])
    for path in py_files(solution):
        if module_name(solution, path) not in kept:
            text = path.read_text(encoding="utf-8")
            path.write_text(hollow(text, shown(path)), encoding="utf-8", newline="\n")
    # compiled once here: every copy is the base copied with its times kept, so Python reads these
    # (a copy may write none: PYTHONDONTWRITEBYTECODE) instead of compiling the course again
    compileall.compile_dir(root, quiet=2, workers=1)
    return root


# --- talking to the worker ------------------------------------------------------------------------


@dataclass
class Run:
    """One copy's run, as the worker reported it."""

    name: str
    report: dict | None  # the check's --check-json for the step (None: it wrote none)
    screen: str
    returncode: int | None
    timed_out: bool = False
    record: dict[str, dict] | None = None  # the grader's record of each test (None: incomplete)
    flags: list[str] = field(default_factory=list)  # why the copy's own word cannot be taken
    wall: float = 0.0  # the seconds it was given
    worker: str = ""  # how the grade's worker ended, when it did while this copy ran
    full: str = ""  # why the copy was stopped for what it wrote (Limits.disk), or ''

    def tests(self) -> dict[str, dict]:
        """Each test's outcome as the grader recorded it while the copy ran."""
        return self.record or {}


WORST = {"passed": 0, "skipped": 1, "failed": 2}  # a test reported twice keeps its worst outcome


def read_record(blob: bytes) -> tuple[dict[str, dict] | None, list[str]]:
    """The grader's record of a copy (each test's outcome, None when the check never reached its
    end) and what in it cannot be the check's own doing: lines after its end, lines it never writes."""
    tests: dict[str, dict] = {}
    flags, ended = [], False
    for raw in blob.decode("utf-8", errors="replace").splitlines():
        try:
            line = json.loads(raw)
            if not isinstance(line, dict):
                raise ValueError(line)
        except (ValueError, RecursionError):  # `[[[[...`: the copy's bytes, not the check's
            flags.append("its record holds a line the check never writes")
            break
        if ended:
            flags.append("its processes wrote to the grade's record after its check had ended")
            break
        if "end" in line:
            ended = True
        elif isinstance(line.get("forged"), str):  # the grader's plugin saw the copy forge
            if (why := f"its code {line['forged']}") not in flags:
                flags.append(why)
        elif isinstance(line.get("test"), str) and line.get("outcome") in WORST:
            nodeid = line.pop("test")
            if WORST[line["outcome"]] >= WORST[tests.get(nodeid, {"outcome": "passed"})["outcome"]]:
                tests[nodeid] = line
        else:
            flags.append("its record holds a line the check never writes")
            break
    return (tests if ended else None), flags


def disagreement(report: dict | None, record: dict[str, dict]) -> str:
    """'' when the check's report says of each test what the grader recorded, else how it differs."""
    said = {n: t.get("outcome") if isinstance(t, dict) else t
            for n, t in ((report or {}).get("tests") or {}).items()}  # fmt: skip
    seen = {n: t["outcome"] for n, t in record.items()}
    differ = sorted(n for n in said.keys() | seen.keys() if said.get(n) != seen.get(n))
    if not differ:
        return ""
    first = differ[0]
    return (
        f"its check's report disagrees with the grader's record on {len(differ)} "
        f"test{'s' if len(differ) != 1 else ''} ({first.split('::')[-1]}: the report says "
        f"{said.get(first, 'nothing')}, the record {seen.get(first, 'nothing')})"
    )


COURSE_HELD = Path(__file__).parent / "heldout"  # the course's held-out tests: <step>/test_*.py


def held_out(step: str, folder: Path | None) -> dict[str, str]:
    """The held-out test files by their name in a copy: the course's of `step` (its contracts at
    inputs the visible tests never use), then an instructor's (the .py files in `folder`)."""
    course = sorted((COURSE_HELD / step).glob("test_*.py"))
    theirs = sorted(folder.glob("*.py")) if folder else []
    named = [(f"course_{t.stem.removeprefix('test_')}", t) for t in course]
    named += [(t.stem.removeprefix("test_"), t) for t in theirs]
    return {f"{HELD}{name}.py": t.read_text(encoding="utf-8") for name, t in named}


def is_held(nodeid: str) -> bool:
    """Whether a test's node id is a held-out test's."""
    return f"/{HELD}" in nodeid.split("::")[0]


class Worker:
    """The sandboxed worker of one step: send it a copy's starter files and pytest arguments, get
    its Run. One worker serves many submissions in turn (no copy sees another: the worker empties
    what a copy wrote and kills what it left); it is started again if a submission stopped it.
    The held-out tests are in no file the sandbox can read: a copy that runs them (`held`) is
    sent them, and only their outcomes leave it (grade._line)."""

    def __init__(self, step: str, limits: Limits, per_test: float, heldout: Path | None = None):
        self.step, self.limits, self.per_test = step, limits, per_test
        self.heldout = held_out(step, heldout)
        self.tmp = Path(tempfile.mkdtemp(prefix="course-grade-"))
        self.base = build_base(step, self.tmp)
        self.given = given_functions(step)
        self.fingerprint = fingerprint(self.base, self.heldout)
        self.log = self.tmp / "worker.log"
        self.withheld = withholding()
        self.read = Reader(step, self.tmp / "reader.log")  # each submission's text, out of process
        self.proc = None
        self.done: dict[str, Run] = {}  # a copy's key -> its run
        self.held = False  # whether the running worker has held held-out tests (names, paths)
        self.grace = GRACE
        self.begin()

    def begin(self) -> None:
        """A new submission: a fresh time budget (the process starts with the first copy)."""
        self.deadline = time.monotonic() + self.limits.wall
        self.answer_by = self.deadline + self.grace
        self.died = ""  # how the worker ended while this submission's copies ran ('' if it did not)

    def _ensure(self) -> None:
        """A running worker: started on first use, and again if a submission stopped it."""
        if self.proc is not None and self.proc.poll() is None:
            return
        if self.proc is not None:
            stop(self.proc, again=True)
        work = self.tmp / f"work-{time.monotonic_ns()}"
        work.mkdir()
        _open_to_worker(self.tmp, self.base)
        self.proc = start(self.base, work, self.limits, self.log)
        self.held = False

    def run(
        self, name: str, files: dict[str, str], tests: list[str], extra=(), per_test=None,
        wall: float | None = None, held: bool = False,
    ) -> Run:  # fmt: skip
        """Run `tests` (paths or node ids) on a copy whose starter is `files` (`held`: with the
        held-out tests), for at most `wall` seconds (default: the limits' per copy) within the
        submission's; a copy this worker already ran with the same bytes and tests is not run
        again (its result cannot differ)."""
        key = json.dumps([sorted(files.items()), tests, list(extra), held])
        if key in self.done:
            return self.done[key]
        if not tests:  # pytest given no path runs every test it finds: never what is meant
            raise ValueError(f"{name}: no test to run")
        wall = min(wall or self.limits.copy, self.deadline - time.monotonic())
        if self.held and not held:  # no copy a student reads forks from a worker that held them
            self.restart()
        tests_files = self.heldout if held else {}
        run = self._run(name, files, tests_files, tests, extra, per_test or self.per_test, wall)
        self.held = self.held or held
        if run.record is not None and not run.timed_out and not run.flags:
            self.done[key] = run
        return run

    def _run(
        self, name: str, files: dict[str, str], held: dict[str, str], tests: list[str], extra,
        per_test, left: float,
    ) -> Run:  # fmt: skip
        if left < 5:
            return Run(name, None, "", None, timed_out=True, wall=0)
        self._ensure()
        self.answer_by = time.monotonic() + left + self.grace
        blobs = [(rel, text.encode("utf-8")) for rel, text in sorted(files.items())]
        sent = [(rel, text.encode("utf-8")) for rel, text in sorted(held.items())]
        args = [*tests, "--impl", "starter", "--check-json", ".grade/check.json", "-q"]
        args += [f"--timeout={per_test:g}", "-p", "pytest_timeout", "-p", "no:cacheprovider"]
        args += ["--rootdir=.", *extra]
        header = {"name": name, "step": self.step, "args": args, "wall": left}
        header |= {"cpu": self.limits.cpu, "memory": self.limits.memory, "disk": self.limits.disk}
        header["files"] = [[rel, len(b)] for rel, b in blobs]
        header["given"] = self.given
        header["tests"] = [[rel, len(b)] for rel, b in sent]
        try:
            self._send(header, [b for _, b in blobs + sent])
            answer = self._receive()
        except TimeoutError:
            return Run(name, None, "", None, timed_out=True, wall=left)
        except (OSError, EOFError, ValueError):  # the worker ended (its log is the grader's)
            self.died = self.ended()
            return Run(name, None, "", None, wall=left, worker=self.died)
        report, screen, blob = answer["blobs"]
        try:
            data = json.loads(report.decode("utf-8")).get(self.step) if report else None
        except (ValueError, AttributeError, RecursionError):
            data = None  # what came back is not the check's JSON
        if not isinstance(data, dict) or not isinstance(data.get("tests", {}), dict):
            data = None  # nor is a report of another shape (the copy may write it)
        if len(screen) >= SCREEN_LIMIT:  # its last bytes: a line cut at the front is dropped whole
            screen = screen.partition(b"\n")[2]  # (a secret cut in two is no longer withheld)
        text = screen.decode("utf-8", errors="replace")
        record, flags = read_record(blob)
        changed = f"its code changed the course's own files in its copy ({answer.get('changed')})"
        if answer.get("changed") and changed not in flags:  # the worker's look, after it ended
            flags.append(changed)
        if (n := answer.get("left")) and not answer["timed_out"]:  # a hang is charged as one
            flags.append(
                f"{n} of its processes {'were' if n > 1 else 'was'} still running after it ended"
            )
        if record is not None and not answer["timed_out"] and (why := disagreement(data, record)):
            flags.append(why)
        code = answer["returncode"]
        if code == RECORD_TAKEN:  # the grader's plugin ended it: its pipe was not the worker's
            flags.append("its code took the grade's record from it (its descriptor moved)")
        if record is not None and code is not None and code < 0:  # pytest never ends so
            flags.append(f"its check was killed (signal {-code}) after its record said it ended")
        return Run(
            name, data, text, answer["returncode"], answer["timed_out"], record, flags, left,
            full=answer.get("full", ""),
        )  # fmt: skip

    def _send(self, header: dict, blobs: list[bytes]) -> None:
        data = json.dumps(header).encode("utf-8")
        view = memoryview(struct.pack(">I", len(data)) + data + b"".join(blobs))
        fd = self.proc.stdin.fileno()
        while view:
            self._ready(fd, write=True)
            view = view[os.write(fd, view[:PIPE]) :]

    def _ready(self, fd: int, write: bool = False) -> None:
        """Wait until the worker's pipe can be used, at most until this copy's time and a grace:
        a worker a copy stopped (SIGSTOP) is killed, never waited for."""
        left = max(0.0, self.answer_by - time.monotonic())
        readable, writable, _ = select.select(
            [] if write else [fd], [fd] if write else [], [], left
        )
        if not (writable if write else readable):
            stop(self.proc, again=True)
            raise TimeoutError("the grade's worker did not answer in time")

    def _receive(self) -> dict:
        (n,) = struct.unpack(">I", self._exact(4))
        header = json.loads(self._exact(n).decode("utf-8"))
        header["blobs"] = [self._exact(size) for size in header["sizes"]]
        return header

    def _exact(self, n: int) -> bytes:
        data, fd = b"", self.proc.stdout.fileno()
        while len(data) < n:
            self._ready(fd)
            chunk = os.read(fd, n - len(data))
            if not chunk:
                raise EOFError("the worker ended")
            data += chunk
        return data

    def ended(self) -> str:
        """How the worker's process ended (sandbox.ended_by), waited for a moment: its pipes close
        just before its exit is seen."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        bwrapped = Path(str(self.proc.args[0])).name == "bwrap"  # it passes on a signal as 128 + N
        return ended_by(self.proc.returncode, bwrapped)

    def hide(self, text: str) -> str:
        """`text` (what a copy printed) as a student may read it: what `withheld` names, withheld."""
        return self.withheld.sub(WITHHELD, text) if self.withheld else text

    def restart(self) -> None:
        """Stop the worker's process, wherever it was in a copy: the next copy starts a new one."""
        if self.proc is not None:
            stop(self.proc, again=True)

    def close(self) -> None:
        """End the worker and everything it started, and remove its folders."""
        self.read.close()
        if self.proc is not None:
            # closed, gone or silent: stopped below
            with contextlib.suppress(OSError, ValueError, subprocess.TimeoutExpired):
                self._send({"end": True}, [])
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            stop(self.proc)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


WITHHELD = "[withheld]"


def withholding() -> re.Pattern | None:
    """What no student may read of what a copy prints, as one pattern (None: nothing): each value
    of the grader's environment that no copy is given (sandbox.instructor_values), but a path
    that exists (PWD, the interpreter's `_`): a copy's own tracebacks name the packages under it."""
    found = [re.escape(v) for v in instructor_values() if not os.path.exists(v)]
    return re.compile("|".join(sorted(found, key=len, reverse=True))) if found else None


def fingerprint(folder: Path, heldout: dict[str, str]) -> str:
    """sha256 over every file of a folder and the held-out tests, each's relative path and bytes:
    what a run depends on."""
    digest = hashlib.sha256()
    files = [(p.relative_to(folder).as_posix(), p.read_bytes()) for p in folder.rglob("*")
             if p.is_file() and "__pycache__" not in p.parts]  # fmt: skip
    files += [(f"held/{name}", text.encode("utf-8")) for name, text in heldout.items()]
    for rel, data in sorted(files):
        digest.update(rel.encode() + b"\0" + data)
    return digest.hexdigest()


@contextlib.contextmanager
def _locked(path: Path):
    """Hold an exclusive lock on `path` (created) while the block runs."""
    with path.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # released when the file closes
        yield


def _open_to_worker(tmp: Path, base: Path) -> None:
    """The base readable and the grader's folder passable by the worker (user mode runs it as
    another user); nothing in either is secret: the base holds no reference of this step."""
    tmp.chmod(0o711)
    for path in [base, *base.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


# --- which tests are each TODO's own ----------------------------------------------------------------


@dataclass
class Owners:
    """Each TODO's own tests, as their `todo` markers name them (tests/test_owners.py holds each
    marker to the TODO the test runs last on the reference), less those a stub passes; and the
    tests that cannot pass in a graded copy (they fail on the reference there)."""

    tests: dict[str, list[str]] = field(default_factory=dict)  # TODO id -> its tests' node ids
    broken: list[str] = field(default_factory=list)  # fail on the reference: counted for none
    given: int = 0  # tests of code the starter gives: counted for none
    core: list[str] = field(default_factory=list)  # owned tests marked `core`: failing one halves
    # TODO id -> the other TODOs its copy runs: those the tests of its tests' files ran on the
    # reference (a fixture shared in a file included), and those the run's first test ran (a
    # session's); the others are the starter's stubs in its copy: it holds no reference of theirs
    needs: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def cached(cls, worker: "Worker", todos: dict[str, Todo]) -> "Owners":
        """The owners of this exact base and grader (owners_path): read once, then kept in out/ (the
        autograder's setup.sh reads them into its image), which no graded copy can see; a file
        there that is not what this code writes (forged, stale, cut short) is read again."""
        path = owners_path(worker.step, worker.fingerprint)
        if (owners := cls.parsed(path, todos)) is None:
            path.parent.mkdir(parents=True, exist_ok=True)
            with _locked(path.with_name(f"{path.name}.lock")):  # graders at once read them once
                if (owners := cls.parsed(path, todos)) is None:
                    owners = cls.read(worker, todos)
                    part = path.with_name(f"{path.name}.{os.getpid()}.part")
                    part.write_text(json.dumps(asdict(owners), indent=1) + "\n", encoding="utf-8")
                    os.replace(part, path)  # never half-written, whoever reads it at once
        failing = [n.split("::", 1)[1] for n in owners.broken if is_held(n)]
        if failing and path not in _SAID:  # the instructor's to fix, said once per grader
            _SAID.add(path)
            print(f"held-out tests the reference fails, counted for no TODO: {', '.join(failing)}",
                  file=sys.stderr)  # fmt: skip
        return owners

    @classmethod
    def parsed(cls, path: Path, todos: dict[str, Todo]) -> "Owners | None":
        """The owners a cache file holds, or None when it is missing or not exactly their shape:
        the four keys, each TODO's list of node ids, core tests among them."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if set(data) != {f.name for f in fields(cls)}:
                return None
            owners = cls(**data)
            lists = [owners.broken, owners.core, *owners.tests.values(), *owners.needs.values()]
            owned = {n for v in owners.tests.values() for n in v}
        except (OSError, ValueError, TypeError, AttributeError):  # not JSON, not a dict of four
            return None
        if all(type(v) is list and all(type(n) is str for n in v) for v in lists) and (
            set(todos) <= set(owners.tests)
            and type(owners.given) is int
            and set(owners.core) <= owned
        ):
            return owners
        return None

    @classmethod
    def read(cls, worker: "Worker", todos: dict[str, Todo]) -> "Owners":
        """Run the reference, then each TODO as a stub that returns None beside the reference's
        other TODOs: a test that still passes tests nothing a student writes: no TODO's own."""
        step = worker.step
        reference = reference_files(step)
        wall = worker.limits.wall  # the course's own runs: the whole submission's time
        held = bool(worker.heldout)  # the held-out tests' owners are read as the others'
        run = worker.run(
            "reference", reference, [f"steps/{step}/tests"], per_test=TRUSTED, wall=wall, held=held
        )
        owners = cls.from_run(run, todos)
        stubs = {rel: stubbed(text, rel) for rel, text in reference.items()}
        for todo, tests in owners.tests.items():
            if tests:
                copy = variant(stubs, reference, todos, todo)
                run = worker.run(
                    f"stub {todo}", copy, tests, per_test=TRUSTED, wall=wall, held=held
                )
                idle = {n for n, t in run.tests().items() if t["outcome"] == "passed"}
                owners.tests[todo] = [n for n in tests if n not in idle]
                owners.given += len(idle)
        owners.core = [n for n in owners.core if any(n in v for v in owners.tests.values())]
        worker.begin()  # reading the owners is the course's time, not the submission's
        return owners

    @classmethod
    def from_run(cls, run: Run, todos: dict[str, Todo]) -> "Owners":
        if run.record is None or run.report is None or run.report.get("stopped"):
            raise RuntimeError(
                f"the reference did not run in the graded copy:\n{run.screen[-1500:]}"
            )
        owners = cls({todo: [] for todo in todos})
        ran = {}  # each test file -> the TODOs its tests ran
        for nodeid, t in run.tests().items():
            ran.setdefault(nodeid.split("::")[0], set()).update(t.get("ran") or [])
            if t["outcome"] != "passed":
                owners.broken.append(nodeid)
            elif t.get("given") and not t.get("marked"):
                owners.given += 1  # code the starter gives: it earns no TODO anything
            elif todo := _marked(t.get("marked"), todos):  # each test names its own TODO
                owners.tests.setdefault(todo, []).append(nodeid)
                if t.get("core"):
                    owners.core.append(nodeid)
            else:
                owners.given += 1
        first = set(next(iter(run.tests().values()), {}).get("ran") or [])
        for todo, tests in owners.tests.items():
            files = {n.split("::")[0] for n in tests}
            needed = first.union(*(ran[f] for f in files)) - {todo}
            owners.needs[todo] = [t for t in todos if t in needed]
        return owners


_SAID: set[Path] = set()  # the owners whose failing held-out tests this process has said


def owners_path(step: str, base: str) -> Path:
    """Where the owners of a base (its fingerprint) are kept: named by it and by the grader's own
    code, which reads them, so a change to either reads them again."""
    digest = hashlib.sha256(f"{base}\0{_grader_code()}".encode()).hexdigest()
    return OUT_DIR / "grade-owners" / f"{step}-{digest[:16]}.json"


@functools.cache
def _grader_code() -> str:
    """sha256 over the grader's modules (grader/*.py), read once per process."""
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def stubbed(text: str, where: str) -> str:
    """A solution file with every TODO region's code replaced by `return None`."""
    if not where.endswith(".py"):
        return text
    kept, regions = parse(text, where)
    made = iter(regions)
    return "\n".join(k if k is not None else f"{next(made).indent}return None" for k in kept) + "\n"


def _marked(marker: str | None, todos: dict[str, Todo]) -> str | None:
    """The TODO a `todo` marker names ('task 3', or a whole id), or None."""
    if not marker:
        return None
    return next((t for t in todos if marker in (t, split_id(t)[1])), None)


# --- one submission's lines ------------------------------------------------------------------------


def not_written(todo: Todo, files: dict[str, str], submitted: set[str], rel: str) -> str | None:
    """Why a TODO is not written yet (its file missing, its raise or its shipped code still there)."""
    if rel not in submitted:
        return f"not written: the submission has no {rel}"
    text = files[rel]
    if any(found == todo.id for found, _, _ in raised_todos(text)):
        return "not written yet (it still raises NotImplementedError)"
    shipped = todo.shipped
    if shipped and all(line.strip() in {t.strip() for t in source_lines(text)} for line in shipped):
        return "not written yet (the code it ships with is unchanged)"
    if _stub(todo, text):
        return "not written yet (its code only returns None)"
    return None


STUB = {"pass", "...", "return", "return None"}  # a body that does nothing


def _stub(todo: Todo, text: str) -> bool:
    """Does every function of the TODO hold nothing of the student's but `pass` or `return None`
    (beside the code the starter gives, its docstring and comments)?"""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False  # its copy says why, in its own words
    lines, found = source_lines(text), []
    given = {g.split("#")[0].strip() for g in todo.given}  # its lines without their comments
    for name in filter(None, todo.functions):
        node = tree
        for part in name.split("."):
            body = getattr(node, "body", [])
            node = next((n for n in body if getattr(n, "name", None) == part), None)
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return False
        body = node.body[1:] if ast.get_docstring(node) is not None else node.body
        code = [ln.split("#")[0].strip() for s in body for ln in lines[s.lineno - 1 : s.end_lineno]]
        found += [c for c in code if c and c not in given]
    return bool(found) and set(found) <= STUB


def given_functions(step: str) -> list[str]:
    """The qualified names of the functions the starter gives (not a TODO's): code of the course's
    in the student's files, which may read them (a checkpoint's code identity)."""
    todos = {f for todo in course_step(step).regions().values() for f in todo.functions}
    files = starter_files(step)
    found = set().union(*(_qualnames(ast.parse(t)) for r, t in files.items() if r.endswith(".py")))
    return sorted(found - todos)


def _qualnames(tree: ast.Module) -> set[str]:
    """Each function's qualified name in a module (`KVCache.append`)."""
    names, todo = set(), [(tree, "")]
    while todo:
        node, prefix = todo.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    names.add(name)
                inner = "." if isinstance(child, ast.ClassDef) else ".<locals>."
                todo.append((child, f"{name}{inner}"))
    return names


def starter_files(step: str) -> dict[str, str]:
    """The starter as generated from the solution (its .py files and predictions.toml): what
    stands for a file the submission lacks."""
    from tools.starters import starters

    layout = course_step(step)
    made = starters(layout.folder)
    return {p.relative_to(layout.starter).as_posix(): text for p, text in made.items()}


def reference_files(step: str) -> dict[str, str]:
    return read_tree(course_step(step).solution)


SHOWN = 400  # characters of a failure's message a student's reason may quote (its first line: whole, but for a runaway)
PLACE = re.compile(r'(?P<file>[\w./\\-]+\.py)(?P<sep>:|", line )(?P<line>\d+)')  # x.py:12


def moved_lines(files: dict[str, str], copy: dict[str, str]) -> dict[str, dict[int, int]]:
    """For each file the graded copy changed: its lines -> the same lines' numbers in the
    student's file (the copy swaps other TODOs' functions, which moves what follows them)."""
    out = {}
    for rel, text in copy.items():
        mine = files.get(rel)
        if mine is None or mine == text:
            continue
        a, b = source_lines(mine), source_lines(text)
        blocks = difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
        out[rel] = {j + k + 1: i + k + 1 for i, j, n in blocks for k in range(n)}
    return out


def students_lines(message: str, moved: dict[str, dict[int, int]]) -> str:
    """`message` with each place in a file the copy changed (`layers.py:110`, `layers.py", line
    110`) said at its line in the student's own file (the copy's line, when the student's file
    has no such line: a line the reference put there)."""

    def place(m: re.Match) -> str:
        path = m["file"].replace("\\", "/")
        rel = max((r for r in moved if path == r or path.endswith(f"/{r}")), key=len, default=None)
        line = moved[rel].get(int(m["line"]), int(m["line"])) if rel else int(m["line"])
        return f"{m['file']}{m['sep']}{line}"

    return PLACE.sub(place, message) if moved else message


def scrub(
    message: str, todos: dict[str, Todo], mine: str, moved: dict[str, dict[int, int]] | None = None,
    hide=lambda m: m,
) -> str:  # fmt: skip
    """A failure's message as a student may read it: at their own lines (`moved`), what `hide`
    (Worker.hide) withholds withheld before it is cut to SHOWN characters, and the whole withheld
    when it quotes another TODO's reference (a copy could raise it back)."""
    # cut first: what a student reads is its first SHOWN characters, and a place's pattern takes
    # time that grows with the square of a runaway line's length (red team 16: 195,000 characters)
    flat = hide(" ".join(students_lines(message[: 10 * SHOWN], moved or {}).split()))
    for todo in todos.values():
        if todo.id == mine:
            continue
        for region in todo.regions:
            for line in region.code:
                code = " ".join(line.split("#")[0].split())
                if len(code) >= 12 and code in flat:
                    kind = flat.split(": ", 1)[0] if ": " in flat else "its error"
                    return f"{kind[:40]}: its message quotes the course's reference code: not shown"
    return flat if len(flat) <= SHOWN else flat[: SHOWN - 3] + "..."


def own_outcome(
    run: Run, own: list[str], scrubbed=lambda m: m, core=()
) -> tuple[int, int, str, str | None, list[tuple[str, bool, bool]]]:
    """(passed, total, the reason: the first failing core test's or else test's, a visible one's
    before a held-out one's, scrubbed; the guard's refusal if any; each test's (node id, passed,
    core)) of a TODO's own tests."""
    tests, core = run.tests(), set(core)
    each = [(n, tests.get(n, {}).get("outcome") == "passed", n in core) for n in own]
    passed = sum(ok for _, ok, _ in each)
    failures = [(n, tests[n]) for n in own if n in tests and tests[n]["outcome"] != "passed"]
    refused = next((t["refused"] for _, t in failures if t.get("refused")), None)
    if failures:
        # a core test's first, and one the student can read before a held-out one
        nodeid, first = min(failures, key=lambda f: (f[0] not in core, is_held(f[0])))
        why = f"{nodeid.split('::')[-1]}: {scrubbed(first['error'] or first['outcome'])}"
    elif missing := [n for n in own if n not in tests]:
        stopped = (run.report or {}).get("stopped")  # the copy's own word: never quoted (red team
        # 16 wrote another TODO's reference there), only whether there was one
        why = f"{len(missing)} of its tests did not report" + (
            " (its check was stopped before them)" if stopped else " (the copy ended early)"
        )
    else:
        why = ""
    return passed, len(own), why, refused, each


@dataclass
class Canary:
    """Checks a copy cannot tell from its real runs, whose right outcome is failure: the student's
    files with every TODO's functions the reference's (their own code outside them, where a
    forger's lives, kept) and, for each TODO that earned something, a curated bug of the step
    (bugs.py) committed that one of its own tests (else another TODO's) fails. Code that makes a
    bug's test pass forges its outcomes. One copy for them all: a copy's start is most of its cost."""

    files: dict[str, str]
    bugs: dict[str, tuple[str, str]]  # TODO id -> (node id of the test its bug fails, the bug)

    @property
    def tests(self) -> list[str]:
        return list(dict.fromkeys(test for test, _ in self.bugs.values()))


def canary(step: str, copy: dict[str, str], todos: list[Todo], owners: Owners) -> Canary | None:
    """The canary of the TODOs that earned something (`todos`), from the `copy` of one of them:
    None when no curated bug fits."""
    layout, reference, tests = course_step(step), reference_files(step), f"steps/{step}/tests"
    target = (layout.mutation or {}).get("target", "")
    # every TODO the reference's: the first's, and those its copy holds as the starter's stubs
    files, bugs, chosen = variant(copy, reference, layout.regions(), ""), {}, {}
    for todo in todos:
        own = owners.tests.get(todo.id, [])
        for bug in sorted(layout.bugs(), key=lambda b: f"{tests}/{b.fails}" not in own):
            rel, fails = f"{(bug.module or target).replace('.', '/')}.py", f"{tests}/{bug.fails}"
            if bug.name in chosen:
                bugs[todo.id] = (fails, bug.name)
                break
            if not bug.fails or rel not in files:
                continue
            try:
                files[rel] = committed(files[rel], bug, rel)
            except ValueError:  # the student's own code holds the bug's line too
                continue
            chosen[bug.name] = bugs[todo.id] = (fails, bug.name)
            break
    return Canary(files, bugs) if bugs else None


def canary_passed(run: Run, c: Canary, todo: str) -> str:
    """Why the canary's run shows `todo`'s copy forging ('' when its bug's test failed, as it must,
    or it had none)."""
    if todo not in c.bugs:
        return ""
    if run.flags:
        return f"its canary: {'; '.join(run.flags)}"
    test, bug = c.bugs[todo]
    if run.tests().get(test, {}).get("outcome") == "passed":
        return (
            f"its code made a canary pass: {test.split('::')[-1]}, run on the reference with a "
            f"curated bug ({bug}) that this test fails"
        )
    return ""


# --- the grader's own reading of a submission, bounded ----------------------------------------------

TEXT_SECONDS = 30  # wall seconds to read one submission's text (each TODO's copy and line map):
# a real one takes a tenth of a second; a file of identical lines makes the line map quadratic
TEXT_MEMORY = 2 * 2**30  # bytes of address space for it


class TextLimit(Exception):
    """A submission whose text the grader could not read within its limits: why, in one line."""


@dataclass
class Texts:
    """What the grader reads off a submission's text for one TODO, before any of it runs."""

    why: str | None  # why it is not written yet (None: it is)
    copy: dict[str, str] = field(default_factory=dict)  # its graded copy's starter files
    moved: dict[str, dict[int, int]] = field(default_factory=dict)  # the copy's lines -> theirs


class Reader:
    """The grader's reader of submissions' text: one child process (`python -m grader.engine`),
    kept from one submission to the next, within TEXT_MEMORY; a read that passes TEXT_SECONDS or
    a limit ends it (the next read starts another). A file nested past the parser's depth, or
    whose line map is quadratic, ends its own submission's grade (TextLimit), never the grader's
    process or the class it grades."""

    def __init__(self, step: str, log: Path):
        self.step, self.log, self.proc = step, log, None

    def __call__(self, files: dict[str, str], submitted: set[str], needs: dict[str, list[str]]):
        """Each TODO's Texts (its copy: the `needs` of it the reference's), and what a reader
        would not see the files do (hidden)."""
        if self.proc is None or self.proc.poll() is not None:
            with self.log.open("ab") as said:  # the child's own copy stays open
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", "grader.engine"], stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE, stderr=said, cwd=REPO_ROOT,
                )  # fmt: skip
        ask = {"step": self.step, "files": files, "submitted": sorted(submitted), "needs": needs}
        try:
            answer = self._ask(json.dumps(ask).encode("utf-8") + b"\n")
        except TimeoutError:
            self.close()
            raise TextLimit(
                f"reading its files took the grader more than {TEXT_SECONDS} s, its time limit "
                "for a submission's text (a file of many identical lines?)"
            ) from None
        except (OSError, EOFError, ValueError):
            self.close()
            said = self.log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
            last = (said or ["no output"])[-1]
            raise TextLimit(f"the grader failed reading its files: {last[:SHOWN]}") from None
        if "limit" in answer:
            self.close()  # a child that ran out of memory or stack is not asked again
            raise TextLimit(answer["limit"])
        read = {
            todo: Texts(
                t["why"],
                t["copy"],
                {r: {int(k): v for k, v in m.items()} for r, m in t["moved"].items()},
            )
            for todo, t in answer["todos"].items()
        }
        return read, answer["hidden"]

    def _ask(self, line: bytes) -> dict:
        """The child's answer to one request line, within TEXT_SECONDS of sending it."""
        deadline, out = time.monotonic() + TEXT_SECONDS, self.proc.stdout.fileno()
        self.proc.stdin.write(line)
        self.proc.stdin.flush()
        got = bytearray()
        while not got.endswith(b"\n"):
            ready, _, _ = select.select([out], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise TimeoutError
            chunk = os.read(out, PIPE)
            if not chunk:
                raise EOFError("the reader ended")
            got += chunk
        return json.loads(got)

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc.stdin.close()
            self.proc.stdout.close()
            self.proc = None


COOKIE = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")  # PEP 263's, in line 1 or 2
# calls whose value is a module by its name (the course's loaders: an earlier step's reference)
MODULE_CALLS = ("__import__", "import_module", "reference", "load", "load_file")
REACHING = ("getattr", "vars")  # calls whose value is reached from their first argument
FILLING = ("update", "setdefault", "__setitem__", "__delitem__", "pop", "clear")  # a dict's


def hidden(step: str, files: dict[str, str], submitted: set[str]) -> list[str]:
    """What in the submitted .py files a reader of their text would not see they do, one line
    each with its place: an encoding other than UTF-8 (Python runs other lines than a reader
    reads), and an attribute of a module the submission did not define set, replaced or deleted
    (the course's, pytest's, torch's judges: `torch.allclose = ...`, `setattr(pytest, ...)`)."""
    found, given = [], starter_files(step)
    for rel in sorted(r for r in submitted if r.endswith(".py") and r in files):
        text = files[rel]
        shipped = {ln.strip() for ln in source_lines(given.get(rel, ""))}  # the course's lines
        found += _encoded(rel, text) + _breaks(rel, text)
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue  # it does not import: the grade says so
        said = _foreign_writes(tree, text, shipped) + _machinery(tree, text, shipped)
        said += _kept_between_calls(tree, text, shipped)
        said += _unfamiliar(tree, text, shipped, {line for line, _ in said})
        found += [f"{rel}:{line} {why}" for line, why in said]
    return found


# what a TODO's own lines may import beyond the starter's imports, and call by a bare name
IMPORTS = {"torch", "math", "typing", "dataclasses", "collections", "itertools", "__future__"}
BUILTINS = {
    "len", "range", "enumerate", "zip", "min", "max", "sum", "abs", "float", "int", "bool", "list",
    "tuple", "dict", "set", "frozenset", "isinstance", "print", "round", "sorted", "reversed",
    "any", "all", "map", "filter", "super", "str", "repr", "divmod", "pow", "iter", "next", "slice",
    "object", "property", "staticmethod", "classmethod", "callable", "hasattr", "None", "True",
    "False", "NotImplemented", "Ellipsis", "ValueError", "TypeError", "RuntimeError", "KeyError",
    "IndexError", "NotImplementedError", "AssertionError", "Exception", "ZeroDivisionError",
    "StopIteration", "ArithmeticError", "OverflowError",
}  # fmt: skip


# torch's own ways to run code or reach the machine, which no TODO needs: torch.load of a pickle
LOADERS = {"load", "save", "hub", "package", "library", "ops", "serialization", "jit", "compile",
           "utils", "cuda", "backends", "multiprocessing", "distributed", "overrides", "fx",
           "export", "onnx", "profiler", "classes"}  # fmt: skip


@functools.cache
def _vocabulary() -> tuple[frozenset[str], frozenset[str]]:
    """(the names, the attributes) honest TODO code is written in: what the references' TODO lines
    use, and torch's public API."""
    names, attributes = set(BUILTINS), {"__init__", "__call__"}  # super().__init__(...)
    for path in STEPS_DIR.glob("*/solution/*.py"):  # the references' TODO lines, not given code's
        for region in parse(path.read_text(encoding="utf-8"), shown(path))[1]:
            for node in ast.walk(ast.parse(textwrap.dedent("\n".join(region.code)))):
                names |= {node.id} if isinstance(node, ast.Name) else set()
                attributes |= {node.attr} if isinstance(node, ast.Attribute) else set()
    return frozenset(names), frozenset(attributes | _torch_names() - LOADERS)


def _torch_names() -> set[str]:
    """The public attributes of torch, its tensors, nn, F and Python's plain types: read by
    importing torch once per torch version (2 s), then from out/ (a class's readers start at
    once)."""
    try:
        version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:  # a grader without torch: the course's words
        return set()
    code = hashlib.sha256(_grader_code().encode()).hexdigest()[:12]  # its reading may change
    kept = OUT_DIR / "grade-vocabulary" / f"torch-{version}-py3{sys.version_info[1]}-{code}.json"
    with contextlib.suppress(OSError, ValueError):
        return set(json.loads(kept.read_text(encoding="utf-8")))
    import torch  # noqa: PLC0415 - only a reader pays for it, once per torch

    spaces = [torch, torch.Tensor, torch.nn, torch.nn.functional, torch.nn.Module, torch.linalg,
              torch.Generator, math, dict, list, tuple, set, str, int, float]  # fmt: skip
    names = set()
    for space in spaces:
        for name in dir(space):
            value = getattr(space, name, None)
            foreign = isinstance(value, type(math)) and not value.__name__.startswith("torch.")
            hooked = "hook" in name or name.startswith("register_")  # code run by torch's calls
            if not name.startswith("_") and not foreign and not hooked:  # torch.os: not torch's
                names.add(name)
    for layer in (torch.nn.Linear(1, 1), torch.nn.LayerNorm(1), torch.nn.Embedding(1, 1)):
        names |= {n for n in [*vars(layer), *layer._parameters] if not n.startswith("_")}  # .weight
    names -= {"format", "format_map"}  # "{0.__globals__}".format(f): an attribute by a string
    with contextlib.suppress(OSError):  # another reader may be writing it too
        write_json(kept, sorted(names))
    return names


def _unfamiliar(tree, text: str, shipped: set[str], listed: set[int]) -> list[tuple[int, str]]:
    """Each line of its own that reaches a name, an attribute (a `match` pattern's too) or an
    import that neither the course's code, torch's API nor the file itself defines: what a
    forger spells to reach the interpreter's machinery without a word the list above knows
    (pkgutil.resolve_name, _operator.attrgetter, os.execl); `listed`: lines already listed."""
    names, attributes = _vocabulary()
    own = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    fields = set()  # the attributes the file gives its own objects: self.heads = ..., a method
    given = set()  # ... those the starter's own lines give (KVCache's self.h): on any object
    lines, found = source_lines(text), {}
    for node in ast.walk(tree):  # what the file defines: functions, classes, arguments, imports
        own |= {node.name} if isinstance(node, ast.FunctionDef | ast.ClassDef) else set()
        own |= {node.arg} if isinstance(node, ast.arg) else set()
        own |= {node.name} if isinstance(node, ast.ExceptHandler) and node.name else set()
        own |= {getattr(node, "name", None) or ""} if isinstance(node, ast.MatchAs) else set()
        if isinstance(node, ast.Import | ast.ImportFrom):
            own |= {(a.asname or a.name).split(".")[0] for a in node.names}
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if getattr(node.value, "id", "") == "self":  # self.heads = ...: not x.load = 0
                fields.add(node.attr)
                if lines[node.lineno - 1].strip() in shipped:
                    given.add(node.attr)
        if isinstance(node, ast.ClassDef):  # its methods
            fields |= {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
    own -= set(dir(builtins)) - BUILTINS  # a parameter named open does not make open() the file's
    for node in ast.walk(tree):
        what = ""
        if isinstance(node, ast.Import | ast.ImportFrom) and not getattr(node, "level", 0):
            roots = (
                [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            )
            what = next((r for r in roots if r and r.split(".")[0] not in IMPORTS | {"common"}), "")
            if isinstance(node, ast.ImportFrom) and not what:  # from torch.serialization import os
                what = next((a.name for a in node.names if a.name not in attributes | names), "")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            what = node.id if node.id not in names | own else ""
        elif isinstance(node, ast.Attribute) and node.attr not in attributes | given | (
            fields if getattr(node.value, "id", "") in ("self", "cls") else set()
        ):  # its own fields on its own objects only: `self.pickle = 0` unlocks no `x.pickle`
            what = f".{node.attr}"
        elif isinstance(node, ast.MatchClass):  # case object(f_back=b): attributes by pattern
            what = next((f".{a}" for a in node.kwd_attrs if a not in attributes | fields), "")
        elif isinstance(node, ast.Constant) and isinstance(node.value, bytes):
            what = "a bytes literal"  # a pickle's bytes run code that no line shows
        line = _own_line(node, lines, shipped) if what else 0
        if line and line not in found and line not in listed:
            code = lines[line - 1].strip()
            found[line] = f"reaches {what}, which no course code uses: {code[:120]}"
    return sorted(found.items())


# What a TODO never needs and a forger does: code run from a string, the interpreter's and
# pytest's own machinery, a file descriptor written or a process signalled by hand.
DYNAMIC = {"exec", "eval", "compile", "__import__", "breakpoint", "getattr", "setattr", "delattr",
           "vars", "globals", "locals"}  # fmt: skip
MACHINERY = {
    "ctypes", "gc", "marshal", "importlib", "posix", "_posixsubprocess", "builtins", "types",
    "inspect", "_pytest", "pytest", "pluggy", "signal", "faulthandler", "atexit", "threading",
    "multiprocessing", "subprocess", "socket", "pickle", "code", "codeop", "base64", "zlib",
    "unittest", "functools", "operator",
}  # fmt: skip
INNARDS = {
    "__code__", "__globals__", "__builtins__", "__subclasses__", "__closure__", "f_locals",
    "f_globals", "f_back", "tb_frame", "gi_frame", "meta_path", "path_hooks", "settrace",
    "setprofile", "addaudithook", "_getframe", "_exit", "fdopen", "dup2", "kill", "killpg",
    "fork", "abort", "execv", "execve", "system", "popen", "utime", "setxattr", "modules",
    "__setattr__", "__delattr__", "__dict__", "cell_contents", "co_freevars", "pluginmanager",
    "get_plugins", "__self__", "__func__", "__wrapped__", "__traceback__", "__mro__", "__bases__",
    "__getattribute__", "fromhex", "listdir", "scandir", "FileIO", "as_subclass",
    "_make_subclass", "_make_wrapper_subclass",  # a tensor whose own ops answer any comparison
    "from_file", "untyped_storage", "_typed_storage", "storage",  # a file's bytes as a tensor's
    "TorchFunctionMode", "TorchDispatchMode", "_push_mode", "_pop_mode",  # torch's ops answered
    "library", "Library", "impl", "_C", "ops",  # a kernel of its own registered over torch's
    "os", "sys", "posix", "builtins", "gc", "ctypes", "importlib",  # torch.os: no import seen
    # a frame reached without _getframe (a coroutine's, an async generator's, a signal handler's)
    # and what it holds; a function's source or names read back (red team 18)
    "f_builtins", "f_code", "cr_frame", "ag_frame", "cr_code", "ag_code", "gi_code", "co_consts",
    "co_names", "getsource", "getsourcelines", "getlines",
}  # fmt: skip
# the operating system's descriptors and folders, reached from os (os.write(3, ...): the record)
OS_LOW = {"write", "open", "read", "dup", "dup2", "fdopen", "listdir", "scandir", "_exit", "kill",
          "system"}  # fmt: skip
# ... and where a name alone reaches them: a builtin's own namespace, the import machinery
BARE = {"__builtins__", "__import__", "__loader__", "__spec__"}
# the methods a TODO's class defines that Python calls by itself, and nothing else
PLAIN_DUNDERS = {"__init__", "__repr__", "__post_init__"}
# a string a forger looks a name up by (`_b["exec"]`, getattr(f, "f_locals")): a dunder or these
LOOKED_UP = DYNAMIC - {"compile"} | {"_getframe", "f_locals", "f_back", "f_globals", "_exit"}
# Builtins that reach or change what a name does not say, taken as a value (`reach = getattr`) so
# that no call of them by name is left for a reader to see
ALIASED = {"getattr", "setattr", "delattr", "vars", "globals", "locals", "exec", "eval", "compile",
           "__import__"}  # fmt: skip


def _machinery(tree, text: str, shipped: set[str]) -> list[tuple[int, str]]:
    """Each line that imports or calls what only a forger needs (DYNAMIC, MACHINERY, INNARDS,
    os.write to a descriptor, a path under /proc), but for the `shipped` lines of the starter,
    as (its line, what it reaches)."""
    lines, found = source_lines(text), {}
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    os_names = {"os", "posix"} | {  # `import os as _os`
        a.asname for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
        if a.name in ("os", "posix") and a.asname
    }  # fmt: skip
    for node in ast.walk(tree):
        what = ""
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
            what = next((n for n in names if n.split(".")[0] in MACHINERY), "")
            if isinstance(node, ast.ImportFrom) and node.module in ("os", "posix"):
                what = what or next((f"os.{a.name}" for a in node.names if a.name in OS_LOW), "")
            if isinstance(node, ast.ImportFrom):  # `from common.watch import signal`
                what = what or next((a.name for a in node.names if a.name in MACHINERY), "")
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") in DYNAMIC:
            what = f"{node.func.id}()"
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "open" and node.args:
            first = node.args[0]  # open(3, "wb"): a descriptor, the grade's own record's
            what = "open() of a descriptor" if isinstance(first, ast.Constant) and type(
                first.value) is int else ""  # fmt: skip
        elif isinstance(node, ast.Name) and node.id in BARE:
            what = node.id
        elif isinstance(node, ast.Attribute) and node.attr in DYNAMIC - {"compile", "eval"}:
            what = f"{node.attr}, reached as an attribute"  # builtins.exec (not model.eval())
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and (
                node.value in LOOKED_UP
                or re.fullmatch(r"__\w+__", node.value)
                and node.value != "__main__"
            )
        ):
            what = f"the name {node.value!r}, as a string"
        elif isinstance(node, ast.BinOp) and (name := _pieced(node)) in LOOKED_UP | INNARDS:
            what = f"the name {name!r}, put together from pieces"
        elif isinstance(node, ast.Attribute) and node.attr in INNARDS:
            what = node.attr  # sys.modules, a class's __setattr__, a namespace's __dict__ too
        elif isinstance(node, ast.Name) and node.id in ALIASED and id(node) not in called:
            what = f"{node.id}, taken as a value"
        elif (
            isinstance(node, ast.FunctionDef)
            and re.fullmatch(r"__\w+__", node.name)
            and (node.name not in PLAIN_DUNDERS)
        ):
            what = f"a method {node.name}, which Python runs where no line calls it"
        elif isinstance(node, ast.ClassDef) and (dunder := _class_dunder(node)):
            what = f"a method {dunder}, which Python runs where no line calls it"
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store | ast.Del)
            and (node.attr in METHODS or re.fullmatch(r"__\w+__", node.attr))
        ):
            what = f"a method .{node.attr} set on an object, which its callers then run"
        elif isinstance(node, ast.ClassDef) and any(
            ast.unparse(b).split(".")[-1] in ("Tensor", "Parameter") for b in node.bases
        ):
            what = "a subclass of torch.Tensor, whose own operations may answer any comparison"
        elif isinstance(node, ast.Lambda) and id(node) in called:
            what = "a lambda called where it is made"  # `(lambda: torch)().x = ...` hides torch
        elif isinstance(node, ast.Constant) and "/proc" in str(node.value):
            what = "/proc"  # other processes' command lines, a copy's own memory
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in OS_LOW
            and ast.unparse(node.value).split(".")[-1] in os_names
        ):
            what = f"os.{node.attr}"
        line = _own_line(node, lines, shipped) if what else 0
        if line and line not in found:
            found[line] = f"reaches {what}: {lines[line - 1].strip()[:120]}"
    return sorted(found.items())


def _pieced(node: ast.AST) -> str:
    """The string a sum of string constants makes (`"ex" + "ec"`), or ''."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else ""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _pieced(node.left), _pieced(node.right)
        return left + right if left and right else ""
    return ""


def _class_dunder(node: ast.ClassDef) -> str:
    """A dunder a class body assigns (`__ne__ = lambda s, o: False`), beyond PLAIN_DUNDERS."""
    for statement in node.body:
        targets = getattr(statement, "targets", None) or [getattr(statement, "target", None)]
        for target in _flat([t for t in targets if t is not None]):
            name = getattr(target, "id", "")
            if re.fullmatch(r"__\w+__", name) and name not in PLAIN_DUNDERS | {"__slots__"}:
                return name
    return ""


# the methods a test calls on what a TODO returns or is handed (a tensor's, a module's, a
# generator's): a TODO that sets one (`attn.forward = ...`, `x.double = ...`) answers for them
METHODS = {
    "forward", "double", "float", "half", "bfloat16", "to", "type", "tolist", "item", "numpy",
    "clone", "detach", "cpu", "contiguous", "size", "dim", "numel", "eq", "ne", "equal",
    "allclose", "isclose", "all", "any", "isnan", "isfinite", "abs", "max", "min", "sum", "mean",
    "std", "norm", "sub", "add", "mul", "view", "reshape", "flatten", "parameters",
    "named_parameters", "state_dict", "load_state_dict", "train", "eval", "modules", "children",
    "manual_seed", "get_state", "set_state", "initial_seed", "seed", "apply", "zero_grad", "step",
    "backward", "__call__", "__eq__", "__ne__", "__getitem__", "__len__", "__iter__", "__bool__",
}  # fmt: skip


# what an editor may show as a line break inside a line Python reads as one (str.splitlines's)
BREAKS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def _breaks(rel: str, text: str) -> list[str]:
    """Each line holding a character some editors break the line at and Python does not: what
    follows it is read by Python on that line (in a comment, code a reader sees as its own line)."""
    return [
        f"{rel}:{number} holds {unicodedata.name(m[0], f'U+{ord(m[0]):04X}')} "
        f"(U+{ord(m[0]):04X}), a line break to some editors, none to Python: "
        f"{ascii(line.strip(' \t'))[:120]}"
        for number, line in enumerate(source_lines(text), 1)
        if (m := BREAKS.search(line))
    ]


def _encoded(rel: str, text: str) -> list[str]:
    """A coding cookie other than UTF-8's, with the first line Python reads that a reader doesn't."""
    lines = source_lines(text)
    for number, line in enumerate(lines[:2], 1):
        if not (m := COOKIE.match(line)):
            continue
        try:
            codec = codecs.lookup(m.group(1)).name
        except LookupError:
            return []  # Python refuses the file: it does not import, and the grade says so
        if codec == "utf-8":
            return []
        try:
            ran = source_lines(text.encode("utf-8").decode(codec, errors="replace"))
        except LookupError:
            ran = []
        unseen = [ln.strip() for ln in ran if ln.strip() and ln not in lines]
        unseen.sort(key=lambda ln: ln.startswith("#"))  # its code first: what a comment hid
        shows = f": Python runs {unseen[0][:120]!r}, which a reader does not see" if unseen else ""
        return [f"{rel}:{number} declares its encoding {m.group(1)} (not UTF-8){shows}"]
    return []


def _foreign_writes(tree, text: str, shipped: set[str]) -> list[tuple[int, str]]:
    """Each statement that sets or deletes an attribute of a module it imported (or of what it
    imported from one), but for the `shipped` lines of the starter: (its line, what it changes)."""
    imported = {
        (alias.asname or alias.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom)) and not getattr(node, "level", 0)
        for alias in node.names
    }
    bound = [  # (what a name is given, the names): `=`, `for ... in`, `:=`, `with ... as`
        (n.value, n.targets) if isinstance(n, ast.Assign)
        else (n.iter, [n.target]) if isinstance(n, ast.For | ast.comprehension)
        else (n.value, [n.target]) if isinstance(n, ast.NamedExpr)
        else (n.context_expr, [n.optional_vars])
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign | ast.For | ast.comprehension | ast.NamedExpr)
        or isinstance(n, ast.withitem) and n.optional_vars
    ]  # fmt: skip
    defs = {
        n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):  # its own functions'
        if (made := defs.get(getattr(call.func, "id", ""))) is not None:  # parameters: tune(torch)
            names = [a.arg for a in [*made.args.posonlyargs, *made.args.args]]
            bound += [(arg, [ast.Name(name)]) for arg, name in zip(call.args, names, strict=False)]
            bound += [(k.value, [ast.Name(k.arg)]) for k in call.keywords if k.arg]
    bound += [  # a function that returns a module: its calls are the module (`_t().x = ...`)
        (node.value, [ast.Name(name)])
        for name, made in defs.items()
        for node in ast.walk(made)
        if isinstance(node, ast.Return) and node.value is not None
    ]
    for _ in range(3):  # a name given a module or what is reached from one (`_T = torch.Tensor`)
        imported |= {
            t.id
            for value, targets in bound
            if any(_root_module(v, imported) for v in _elements(value))
            for t in _flat(targets)
            if isinstance(t, ast.Name)
        }
    lines = source_lines(text)
    return [
        (line, f"changes {what}: {lines[line - 1].strip()[:120]}")
        for node in sorted(ast.walk(tree), key=lambda n: getattr(n, "lineno", 0))
        if (what := _foreign_target(node, imported)) and (line := _own_line(node, lines, shipped))
    ]


MUTATING = {
    "append",
    "extend",
    "insert",
    "update",
    "setdefault",
    "pop",
    "popitem",
    "clear",
    "add",
    "remove",
    "discard",
    "__setitem__",
    "__delitem__",
    "__iadd__",
}  # a container's


def _kept_between_calls(tree, text: str, shipped: set[str]) -> list[tuple[int, str]]:
    """Each line where a function keeps state from one call to the next, which no TODO needs and
    code right for its first calls only does (red team 26: a counter that turns a trap on after
    the tests' few calls): `global` and `nonlocal`, a module-level name's container changed, a
    mutable default, an attribute set on a function; but for the starter's `shipped` lines."""
    module = {
        t.id
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign)
        for t in _flat(node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(t, ast.Name)
    }
    defs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    names = {d.name for d in defs}
    found = []
    for fn in defs:
        defaults = [*fn.args.defaults, *(d for d in fn.args.kw_defaults if d is not None)]
        found += [(d.lineno, "a mutable default") for d in defaults
                  if isinstance(d, ast.List | ast.Dict | ast.Set | ast.Call)]  # fmt: skip
        for node in ast.walk(fn):
            if isinstance(node, ast.Global | ast.Nonlocal):
                found.append(
                    (node.lineno, f"{type(node).__name__.lower()} {', '.join(node.names)}")
                )
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in MUTATING
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id in module
            ):
                found.append((node.lineno, f"changes the module's {node.func.value.id}"))
            elif isinstance(node, ast.Assign | ast.AugAssign | ast.Delete):
                for t in (
                    node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
                ):
                    base = t.value if isinstance(t, ast.Subscript | ast.Attribute) else None
                    if isinstance(base, ast.Name) and (
                        isinstance(t, ast.Subscript)
                        and base.id in module
                        or isinstance(t, ast.Attribute)
                        and base.id in names
                    ):
                        found.append((node.lineno, f"changes {base.id} for later calls"))
    lines = source_lines(text)
    return [
        (line, f"keeps state between calls ({why}): {lines[line - 1].strip()[:120]}")
        for line, why in sorted(set(found))
        if lines[line - 1].strip() not in shipped
    ]


def _own_line(node: ast.AST, lines: list[str], shipped: set[str]) -> int:
    """The first line of `node` that is not one of the starter's `shipped` lines (0: all are): a
    chain opened by a shipped line (`"TODO(...)"` alone, then `.__class__` below) is not."""
    first, last = getattr(node, "lineno", 0), getattr(node, "end_lineno", None)
    span = range(first, (last or first) + 1) if first else range(0)
    return next((n for n in span if lines[n - 1].strip() not in shipped), 0)


def _foreign_target(node: ast.AST, imported: set[str]) -> str:
    """What of an imported module `node` sets or deletes ('' when nothing)."""
    targets = []
    if isinstance(node, (ast.Assign, ast.Delete)):
        targets = node.targets
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    elif isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("setattr", "delattr"):
        owner = node.args[0] if node.args else None  # setattr(pytest, ...): the module itself too
        return ast.unparse(owner) if owner and _root_module(owner, imported) else ""
    elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") in FILLING:
        owner = node.func.value  # vars(torch).update(...), common.expect.__dict__.pop(...)
        namespace = getattr(owner, "attr", "") == "__dict__" or (
            getattr(getattr(owner, "func", None), "id", "") == "vars"
        )
        return ast.unparse(owner) if namespace and _root_module(owner, imported) else ""
    for part in _flat(targets):
        if isinstance(part, (ast.Attribute, ast.Subscript)) and _root_module(part.value, imported):
            return ast.unparse(part)
    return ""


def _elements(value: ast.AST) -> list[ast.AST]:
    """A value and, for a literal tuple, list, set or dict, its elements (`for m in [common.seeding]`,
    `{"t": torch}`)."""
    if isinstance(value, ast.Dict):
        return [value, *(k for k in value.keys if k is not None), *value.values]
    return (
        [value, *getattr(value, "elts", ())]
        if isinstance(value, ast.Tuple | ast.List | ast.Set)
        else [value]
    )


def _flat(targets: list[ast.AST]) -> list[ast.AST]:
    """Each target of an assignment, unpacked ones (`a, torch.x = ...`) one by one."""
    flat = []
    for target in targets:
        target = target.value if isinstance(target, ast.Starred) else target
        flat += _flat(target.elts) if isinstance(target, (ast.Tuple, ast.List)) else [target]
    return flat


def _root_module(node: ast.AST, imported: set[str]) -> bool:
    """Is `node` (an expression) a module the file imported, or reached from one by attributes
    (`torch.Tensor`, `common.expect.close`, `getattr(torch, "Tensor")`, `vars(torch)`), or a
    module found by name (`__import__("torch")`, `sys.modules["torch"]`)?"""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Subscript) and ast.unparse(node.value) == "sys.modules":
            return True
        node = node.value
    if isinstance(node, ast.Call):
        name = (
            node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        )
        reached = name in REACHING and node.args and _root_module(node.args[0], imported)
        own = isinstance(node.func, ast.Name) and node.func.id in imported  # returns a module
        return name in MODULE_CALLS or bool(reached) or own
    return isinstance(node, ast.Name) and node.id in imported


def _read_texts(
    step: str, files: dict[str, str], submitted: set[str], needs: dict[str, list[str]]
) -> dict[str, Texts]:
    """Each TODO's Texts, in this process (texts' child)."""
    todos, reference, made = course_step(step).regions(), reference_files(step), {}
    stubs, given = starter_files(step), given_functions(step)
    for todo in todos.values():
        if why := not_written(todo, files, submitted, todo.rel):
            made[todo.id] = Texts(why)
        else:
            needed = set(needs.get(todo.id, todos))
            copy = variant(files, reference, todos, todo.id, needed)
            # the TODOs its tests never run: the starter's stubs (no one's code, the same in every
            # student's copy, so a class's identical TODOs still run once)
            copy = variant(copy, stubs, todos, todo.id, set(todos) - needed)
            copy = given_from_reference(copy, reference, given)  # the course's code: not graded
            made[todo.id] = Texts(None, copy, moved_lines(files, copy))
    return made


def _texts_child() -> None:
    """`python -m grader.engine`: a Reader's requests on stdin, one JSON line each; each answer
    on stdout, one line."""
    _vocabulary()  # before the first submission comes, and before the limit: torch maps GBs
    held = 0  # the address space torch's import took (Linux), on top of which the limit counts
    with contextlib.suppress(OSError, ValueError, IndexError):
        held = int(Path("/proc/self/statm").read_text().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    with contextlib.suppress(ValueError, OSError):  # a system that sets no such limit
        resource.setrlimit(resource.RLIMIT_AS, (held + TEXT_MEMORY, held + TEXT_MEMORY))
    for line in sys.stdin:
        ask = json.loads(line)
        try:
            made = _read_texts(ask["step"], ask["files"], set(ask["submitted"]), ask["needs"])
            answer = {
                "todos": {todo: asdict(t) for todo, t in made.items()},
                "hidden": hidden(ask["step"], ask["files"], set(ask["submitted"])),
            }
        except RecursionError as exc:
            answer = {"limit": f"a file nests deeper than the grader's parser allows ({exc})"}
        except MemoryError:
            answer = {
                "limit": f"reading its files needed more than the grader's {TEXT_MEMORY >> 30} GB"
            }
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    _texts_child()
