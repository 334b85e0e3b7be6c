"""Where a grade runs student code, and what that code can see.

Three ways, the best this machine allows (COURSE_GRADE_SANDBOX=bwrap|user|none picks one):
- bwrap (Linux with bubblewrap and user namespaces): the code sees the interpreter and its packages
  read-only, the course's graded base read-only, a private empty /tmp and home, no network, and
  nothing else of the machine; its processes live in a PID namespace that dies with the grade.
- user (root without namespaces: a container that forbids unshare, as Gradescope's most likely
  does): the code runs as an unprivileged user who cannot read the repository or write the results,
  and every process of that user is killed before a result is written.
- none (anywhere else): no containment; every line of the grade says so.
"""

import contextlib
import fcntl
import os
import pwd
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from common import REPO_ROOT

WORKER = Path(__file__).with_name("worker.py")
INSIDE = Path("/course")  # where the base is seen from inside bwrap
UNCONTAINED = "uncontained: the submission's code ran with your user's rights"
WOULD_RUN = "uncontained: a submission's code would run with your user's rights"  # before a grade


@dataclass
class Limits:
    """What a graded submission may use."""

    cpu: int = 300  # CPU seconds for one copy's run (each test has its own, smaller, limit)
    memory: int = 6 * 2**30  # bytes of address space per copy (torch alone maps about 1.5 GB)
    disk: int = 2**30  # bytes a copy may write, in its folder, /tmp and /dev/shm together
    wall: int = 600  # seconds for the whole grade of one submission, every copy included
    copy: int = 120  # seconds for one TODO's copy: a hang costs that TODO, not the others
    check: int = 120  # seconds for the check of the whole submission (the feedback's screen)


@dataclass(frozen=True)
class Mode:
    """How this machine contains a grade: its name and one line an instructor reads."""

    name: str  # bwrap, user or none
    said: str
    why: str = ""  # uncontained: why nothing contains the code here, and what would

    @property
    def contained(self) -> bool:
        return self.name != "none"

    @property
    def refusal(self) -> str:
        """Why a grade of someone else's code does not start here (nothing of it has run yet)."""
        return f"{WOULD_RUN} ({self.why})" if not self.contained else self.said


def _bwrap_args(base: Path, disk: int = Limits.disk) -> list[str]:
    """bubblewrap's view: system libraries, the interpreter, the base read-only; /tmp, home and
    /dev/shm private, each a memory-backed tmpfs the kernel holds to `disk` bytes and a margin
    for the copy's own files (the worker stops a copy at `disk` in all)."""
    bwrap = shutil.which("bwrap") or "bwrap"  # found on the grader's PATH, not the sandbox's
    args = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    # the private /tmp first: an interpreter or venv that lives under /tmp is bound over it below
    size = ["--size", str(disk + ROOM)]
    args += ["--proc", "/proc", "--dev", "/dev", *size, "--tmpfs", "/dev/shm"]
    args += [*size, "--tmpfs", "/tmp", "--dir", "/tmp/home"]
    args += ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for etc in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives"):
        args += ["--ro-bind-try", etc, etc]
    for prefix in _packages():
        args += ["--ro-bind", prefix, prefix]
    args += ["--ro-bind", str(base), str(INSIDE)]
    # the sandbox's own root read-only: only /tmp and /dev are left to write (a stash in / would
    # outlive the copy that made it)
    args += ["--remount-ro", "/", "--chdir", "/tmp", "--clearenv"]
    env = {"HOME": "/tmp/home", "TMPDIR": "/tmp", "PATH": SYSTEM_PATH, "LANG": "C.UTF-8"}
    env["PIXI_PROJECT_ROOT"] = str(INSIDE)  # the screen prints the student's `pixi run` commands
    env |= {"COURSE_GRADE_PIDNS": "1", "COURSE_GRADE_KILL": "all", "COURSE_GRADE_WIPE": "1"}
    for key, value in (_common_env() | env).items():
        args += ["--setenv", key, value]
    return args


SYSTEM_PATH = "/usr/bin:/bin"
ROOM = 64 * 2**20  # bytes of a tmpfs beyond a copy's cap: the copy's course files (3 MB), home
LOCALE = ("LANG", "LC_ALL")  # the only variables of the grader's environment a copy is given
SECRET = 8  # characters: a value shorter than this is too common to withhold ("1", "root")


def copy_env(**grade: str) -> dict[str, str]:
    """The whole environment of the worker, and of bubblewrap's own process (a copy reads it in
    /proc/1/environ): an allowlist of the grader's locale, what every copy needs and what the grade
    sets (`grade`). No other variable of the instructor's (a token, a secret) reaches a copy."""
    locale = {key: os.environ[key] for key in LOCALE if key in os.environ}
    return {"LANG": "C.UTF-8"} | locale | _common_env() | grade


def instructor_values() -> list[str]:
    """The values of the grader's environment that no copy is given, as long as a secret: what a
    student's feedback never shows (uncontained, a copy may read them in the grader's own
    /proc/<pid>/environ)."""
    return sorted({v for k, v in os.environ.items() if k not in LOCALE and len(v) >= SECRET})


def _packages() -> list[str]:
    """The interpreter's prefixes (as named and as resolved: a venv behind a symlink) and every
    site-packages folder on sys.path: a venv may chain another's packages through a .pth. Other
    sys.path entries stay out (the repository is one)."""
    found = {sys.base_prefix, sys.prefix, str(Path(sys.executable).resolve().parents[1])}
    found |= {str(Path(p).resolve()) for p in (sys.base_prefix, sys.prefix)}
    found.add(str(Path(sys.executable).parent.parent))  # the venv the interpreter is called by
    for entry in sys.path:
        named = Path(os.path.abspath(entry or "."))  # as sys.path has it inside the sandbox too
        for path in (named, named.resolve()):
            if path.name in ("site-packages", "dist-packages") and path.is_dir():
                if not any(path.is_relative_to(p) for p in found):
                    found.add(str(path))
    return sorted(found)


def _common_env() -> dict[str, str]:
    """What every copy's run needs, whatever contains it."""
    return {
        "OMP_NUM_THREADS": "1",
        "COLUMNS": "100",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "MPLBACKEND": "Agg",
    }


@cache
def mode() -> Mode:
    """The best containment this machine gives (or the one COURSE_GRADE_SANDBOX asks for)."""
    forced = os.environ.get("COURSE_GRADE_SANDBOX", "")
    if forced not in ("", "bwrap", "user", "none"):
        raise ValueError(f"COURSE_GRADE_SANDBOX must be bwrap, user or none, got {forced!r}")
    why = _bwrap_problem() if forced in ("", "bwrap") else f"COURSE_GRADE_SANDBOX={forced}"
    if not why:
        return Mode(
            "bwrap",
            "contained: bubblewrap (no network; only the interpreter, the course "
            "and a private /tmp and home are visible; a PID namespace ends with the grade)",
        )
    if forced == "bwrap":
        raise RuntimeError(f"COURSE_GRADE_SANDBOX=bwrap, but {why}")
    if forced in ("", "user") and _is_root():
        if not (problem := _nobody_problem()):
            return Mode("user", f"contained: as the unprivileged user nobody ({why}): it cannot "
                        "read this repository's references (its solution/, out/ and .git are "
                        "closed to others while the grade runs) or write the results, but it can "
                        "read whatever else on this machine is readable by all, another clone "
                        "included; its processes are killed after each copy")  # fmt: skip
        if forced == "user":
            raise RuntimeError(f"COURSE_GRADE_SANDBOX=user, but {problem}")
        why = f"{why}; {problem}"
    advice = []  # only what would help on this machine
    if forced == "" and not shutil.which("bwrap") and sys.platform.startswith("linux"):
        advice.append("install bubblewrap")
    if forced == "" and not _is_root() and hasattr(os, "geteuid"):
        advice.append("run the grade as root (the user nobody then runs the code)")
    said = f"{why}; to contain it, {' or '.join(advice)}" if advice else why
    return Mode("none", f"{UNCONTAINED} ({said})", said)


# What most likely sent a signal that ended a process of the grade
CAUSES = {
    signal.SIGKILL: "out of memory, or a time limit",
    signal.SIGXCPU: "its CPU time limit",
    signal.SIGXFSZ: "a file past its size limit",
    signal.SIGSEGV: "a crash in compiled code",
    signal.SIGABRT: "a crash in compiled code",
}


def ended_by(code: int | None, bwrapped: bool = False) -> str:
    """How a process of the grade ended, from its exit code as Popen gives it (-N: signal N) or,
    `bwrapped`, as bubblewrap passes on its child's (128 + N): 'was killed by SIGKILL (out of
    memory, or a time limit)', or 'ended with code 1'."""
    if code is None:
        return "is still running"
    number = -code if code < 0 else code - 128 if bwrapped and 128 < code < 160 else 0
    if not number:
        return f"ended with code {code}"
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = f"signal {number}"
    cause = CAUSES.get(number)
    return f"was killed by {name}" + (f" ({cause})" if cause else "")


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _bwrap_problem() -> str:
    """'' when bubblewrap works here, else why not (one line)."""
    if not sys.platform.startswith("linux"):
        return f"no bubblewrap on {sys.platform}"
    if not shutil.which("bwrap"):
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    try:
        done = subprocess.run(
            [*_bwrap_args(WORKER.parent), sys.executable, "-c", "pass"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap failed ({exc})"
    said = (done.stderr.strip() or "no message")[-160:]
    if done.returncode and "execvp" in said:
        return f"the interpreter {sys.executable} cannot be started inside bubblewrap ({said})"
    if done.returncode and ("setting up uid map" in said or "No permissions" in said):
        return f"this machine does not let bubblewrap make a user namespace ({said})"
    if done.returncode:
        return f"bubblewrap cannot make a sandbox here ({said})"
    return ""


def _nobody_problem() -> str:
    """'' when the user nobody can run this Python, else why not (one line)."""
    try:
        uid, gid = _nobody()
        done = subprocess.run(
            [sys.executable, "-c", "pass"], capture_output=True, timeout=60,
            preexec_fn=lambda: _as_user(uid, gid),
        )  # fmt: skip
    except (KeyError, OSError, subprocess.SubprocessError) as exc:
        return f"the user nobody cannot run {sys.executable} ({exc})"
    if done.returncode:
        return (
            f"the user nobody cannot run {sys.executable} (a folder above it is closed to others)"
        )
    return ""


def _nobody() -> tuple[int, int]:
    entry = pwd.getpwnam("nobody")
    return entry.pw_uid, entry.pw_gid


def _as_user(uid: int, gid: int) -> None:
    """In the child before exec (user mode): drop to the unprivileged user."""
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)


def _limits(limits: Limits) -> None:
    """In the child before exec: the memory limit (the worker sets each copy's CPU limit)."""
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory, limits.memory))


def start(base: Path, work: Path, limits: Limits, log: Path) -> subprocess.Popen:
    """The grade's worker (grader/worker.py) in this machine's containment: `base` read-only
    to it, `work` a folder it may write (bwrap: a private /tmp instead), its stderr to `log`."""
    m = mode()
    shutil.copy2(WORKER, base / ".grader-worker.py")
    preexec = None
    if m.name == "bwrap":  # bwrap sets the worker's own (--clearenv, --setenv)
        env = copy_env(PATH=SYSTEM_PATH)
        cmd = [*_bwrap_args(base, limits.disk), sys.executable, str(INSIDE / ".grader-worker.py")]
        cmd += [str(INSIDE), "/tmp/w"]
    else:
        cmd = [sys.executable, str(base / ".grader-worker.py"), str(base), str(work)]
        path = os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", SYSTEM_PATH])
        env = copy_env(PATH=path, TMPDIR=str(work / "tmp"), HOME=str(work / "home"))
        env["PIXI_PROJECT_ROOT"] = str(base)  # the screen prints the student's `pixi run` commands
        for sub in ("tmp", "home"):
            (work / sub).mkdir(parents=True, exist_ok=True)
    if m.name == "user":
        uid, gid = _nobody()
        _one_user_worker()
        _close(REPO_ROOT)
        for path in [work, *work.rglob("*")]:
            os.chown(path, uid, gid)
        env |= {"COURSE_GRADE_KILL": "all", "COURSE_GRADE_WIPE": "1", "COURSE_GRADE_SCAN": "1"}

        def preexec():  # noqa: F811 - the child's: drop rights, then limit memory
            _limits(limits)
            _as_user(uid, gid)

    else:
        preexec = lambda: _limits(limits)  # noqa: E731
    with log.open("wb") as err:
        return subprocess.Popen(
            cmd, env=env, cwd=work, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
            preexec_fn=preexec, start_new_session=True,
        )  # fmt: skip


_closed: dict[Path, int] = {}  # what user mode closed -> its mode before
_held: list[int] = []  # user mode's lock on this machine, held while its worker lives


def _one_user_worker() -> None:
    """User mode: wait until no other grade on this machine runs as the user: each kills every
    process of that user after a copy, and opens again the repository it closed."""
    if _held:
        return
    path = Path(tempfile.gettempdir()) / "course-grade-user.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print("waiting for another grade as an unprivileged user on this machine", file=sys.stderr)
        fcntl.flock(fd, fcntl.LOCK_EX)  # released when the other one's worker stops
    _held.append(fd)


def _close(repository: Path) -> None:
    """User mode (one worker on the machine at a time: _one_user_worker): what in the repository
    holds a reference (each step's solution/, out/ with its autograder zips and caches, .git)
    readable by its owner only, until the worker ends; the rest, the interpreter perhaps among it,
    stays as it is."""
    secret = [*repository.glob("steps/*/solution"), repository / "out", repository / ".git"]
    for path in secret:
        if path.is_dir() and (st := path.stat()).st_mode & 0o077 and path not in _closed:
            _closed[path] = st.st_mode
            path.chmod(st.st_mode & 0o700)


def stop(worker: subprocess.Popen, again: bool = False) -> None:
    """End the worker and everything it started (user mode: every process of nobody, and the
    repository opened again, unless another worker starts `again` at once: the lock is kept, so
    no other grade runs between, nor waits out this one's time); never waits for good."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        worker.wait(timeout=10)
    for pipe in (worker.stdin, worker.stdout):
        with contextlib.suppress(OSError):
            if pipe:
                pipe.close()
    if mode().name == "user":
        kill_user(_nobody()[0])
        if again:
            return
        while _closed:
            path, was = _closed.popitem()
            with contextlib.suppress(OSError):
                path.chmod(was)
        while _held:  # the next grade as the user may start
            os.close(_held.pop())


def kill_user(uid: int) -> None:
    """Kill every process of `uid` (user mode, before a result is written)."""
    for _ in range(20):
        pids = []
        for proc in Path("/proc").iterdir():
            with contextlib.suppress(OSError):
                if proc.name.isdigit() and proc.stat().st_uid == uid:
                    pids.append(int(proc.name))
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
