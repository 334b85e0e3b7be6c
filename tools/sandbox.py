"""Run a command that executes student code, contained: CPU-time and memory limits, no network,
the instructor's folders read-only, and a wall-clock limit; say which of these this OS gave."""

import functools
import os
import shlex
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

try:
    import resource  # POSIX only: Windows has no setrlimit
except ImportError:  # pragma: no cover - Windows
    resource = None


@dataclass
class Limits:
    """What a graded child may use."""

    cpu: int = 300  # CPU seconds for the whole check (each test has its own, smaller, limit)
    memory: int = 6 * 2**30  # bytes of address space (torch alone maps about 1.5 GB)
    wall: int = 600  # seconds before the child and everything it started is killed


@dataclass
class Outcome:
    """A contained run: its exit, its output, and what contained it."""

    returncode: int | None  # None: killed at the wall-clock limit
    stdout: str
    stderr: str
    contained: list[str] = field(default_factory=list)  # one phrase per measure, for the output
    missing: list[str] = field(default_factory=list)  # what this OS could not give, and why
    cpu: float = 0.0  # CPU seconds the child and its children used (0 where unknown)


def _children_cpu() -> float:
    """CPU seconds of this process's finished children (unshare passes on no signal: this does)."""
    if resource is None:
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _limit(limits: Limits) -> None:
    """In the child, before exec: the CPU-time and memory limits (the kernel enforces them)."""
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu, limits.cpu + 5))  # SIGXCPU, then SIGKILL
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory, limits.memory))  # malloc fails past it


def _namespace_prefix(
    protect: list[Path], writable: list[Path], hide: list[Path] = (), empty: Path | None = None
) -> list[str]:
    """unshare's command line: new user, network, mount and PID namespaces; `protect` read-only
    in the new mount namespace, `hide` covered by the empty folder `empty`, and the `writable`
    folders inside them rw again."""
    steps = []
    for path in protect:
        p = shlex.quote(str(path))
        steps += [f"mount --rbind {p} {p}", f"mount -o remount,bind,ro {p}"]
    for path in hide:
        steps += [f"mount --bind {shlex.quote(str(empty))} {shlex.quote(str(path))}"]
    for path in writable:
        p = shlex.quote(str(path))
        steps += [f"mount --bind {p} {p}"]
    script = " && ".join([*steps, 'exec "$@"'])
    return [
        *("unshare", "--user", "--map-root-user", "--net", "--mount"),
        *("--pid", "--fork", "--kill-child"),  # what the child starts dies with it
        *("sh", "-c", script, "sh"),
    ]


@functools.cache
def _namespaces_work() -> str:
    """'' when unshare can make the namespaces here, else why not (one line)."""
    if not sys.platform.startswith("linux"):
        return f"no network namespace on {sys.platform} (Linux only)"
    if not shutil.which("unshare"):
        return "no network namespace: unshare (util-linux) is not installed"
    probe = Path(__file__).resolve().parent
    try:
        done = subprocess.run(
            [*_namespace_prefix([probe], []), "true"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"no network namespace: unshare failed ({exc})"
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return f"no network namespace: unshare could not make one here ({why})"
    return ""


def run_contained(
    cmd: list[str],
    *,
    env: dict,
    cwd: Path,
    protect: list[Path],
    writable: list[Path],
    hide: list[Path] = (),
    limits: Limits,
) -> Outcome:
    """Run `cmd` with the limits this OS offers; never raises for what the child does.

    protect: folders the child can read, not write; hide: folders it cannot even read (the step's
    reference solution, git's objects), covered by an empty folder made in `cwd`."""
    contained, missing = [], []
    prefix = []
    if not (why := _namespaces_work()):
        empty = cwd / "empty"
        empty.mkdir(exist_ok=True)
        hidden = [p for p in hide if p.is_dir()]
        prefix = _namespace_prefix([p for p in protect if p.is_dir()], writable, hidden, empty)
        contained += ["no network (a new network namespace)", "course files read-only"]
        if hidden:
            contained.append("the repository's copy of the step's reference hidden")
    else:
        missing.append(
            f"{why}: the graded code can reach the network, and read and write the course's files "
            "(the grade still scores 0 any change to the graded copy's course files)"
        )
    if resource is not None:
        contained.append(f"{limits.cpu} s of CPU time and {limits.memory / 2**30:g} GB of memory")
        preexec = functools.partial(_limit, limits)
    else:
        missing.append(
            "no CPU-time or memory limit on this OS (Python's resource module is POSIX only): "
            "the per-test time limit and the wall-clock limit still apply"
        )
        preexec = None
    contained.append(f"killed after {limits.wall} s")
    posix = os.name == "posix"
    cpu = _children_cpu()
    try:
        child = subprocess.Popen(
            [*prefix, *cmd],
            env=env,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            preexec_fn=preexec,
            start_new_session=posix,  # its own process group: a timeout kills all it started
        )
    except OSError as exc:
        return Outcome(1, "", f"could not start the check: {exc}", contained, missing)
    try:
        out, err = child.communicate(timeout=limits.wall)
        code = child.returncode
    except subprocess.TimeoutExpired:
        if posix:
            os.killpg(child.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows
            child.kill()
        out, err = child.communicate()
        code = None
    return Outcome(code, out, err, contained, missing, _children_cpu() - cpu)


def ended(outcome: Outcome, limits: Limits) -> str:
    """Why a child ended without its report, in one line a student can read."""
    if outcome.returncode is None:
        return f"the check was still running after {limits.wall} s and was stopped"
    code = outcome.returncode
    if resource is not None and outcome.cpu >= limits.cpu - 1:
        return f"the check was stopped: it used its {limits.cpu} s of CPU time (a loop in C code?)"
    signals = {
        getattr(signal, "SIGXCPU", -1): f"it used its {limits.cpu} s of CPU time",
        signal.SIGKILL: "it was killed (out of memory, or past its CPU time)",
        signal.SIGSEGV: "it crashed (segmentation fault)",
    }
    if code < 0 or code >= 128:  # killed by a signal (sh and unshare report 128 + N)
        number = -code if code < 0 else code - 128
        return f"the check ended: {signals.get(number, f'signal {number}')}"
    last = (outcome.stderr.strip().splitlines() or [""])[-1][:160]
    return f"the check ended with exit code {code} before it could report" + (
        f": {last}" if last else ""
    )
