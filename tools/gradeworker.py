"""The grade's worker, run inside the sandbox: imports torch and pytest once, then runs each copy it
is sent in a forked child, one at a time, so no copy ever sees another.

Standard library only until main() (it must not import the course: each copy brings its own).
The grader (tools/grade.py) writes frames to its stdin and reads one frame back per copy:
  in:  4-byte length, a JSON header {name, step, args, wall, cpu, memory, files: [[path, size]]},
       then the files' bytes (the copy's starter, written over the base's);  {"end": true} stops.
  out: 4-byte length, a JSON header {name, returncode, timed_out, sizes}, then check.json and
       the screen.
Between copies it kills every process the last one left and empties the folders it could write.
"""

import json
import os
import shutil
import signal
import struct
import sys
import time
from pathlib import Path

_exit = os._exit  # the check replaces os._exit while it runs; the child leaves through this one
OUT = ".grade"  # inside a copy: check.json and the screen


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


def _send(out, header: dict, *blobs: bytes) -> None:
    data = json.dumps(header).encode("utf-8")
    out.write(struct.pack(">I", len(data)) + data)
    for blob in blobs:
        out.write(blob)
    out.flush()


def _write_copy(raw, header: dict, base: Path, copy: Path) -> None:
    """The base's files, then the frame's starter files over its starter/; the buffer zeroed."""
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(base, copy, symlinks=False)
    starter = copy / "steps" / header["step"] / "starter"
    shutil.rmtree(starter, ignore_errors=True)
    for rel, size in header["files"]:
        target = (starter / rel).resolve()
        if not target.is_relative_to(starter.resolve()):
            raise ValueError(f"a starter path outside the starter: {rel}")
        target.parent.mkdir(parents=True, exist_ok=True)
        buf = _read_exact(raw, size)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, memoryview(buf))
        finally:
            os.close(fd)
            buf[:] = bytes(size)  # what another copy's child could find in this memory: nothing
    (copy / OUT).mkdir()


def _child(copy: Path, header: dict, private: list[int]) -> None:
    """In the forked child: limits, the copy as its world, pytest in this process; never returns."""
    code = 70
    try:
        for fd in private:
            os.close(fd)
        _dumpable(True)
        os.setsid()  # its own group: the worker kills what it starts
        fd = os.open(copy / OUT / "screen.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_CPU, (header["cpu"], header["cpu"] + 5))
            resource.setrlimit(resource.RLIMIT_AS, (header["memory"], header["memory"]))
        except ImportError:  # pragma: no cover - Windows has no fork either
            pass
        os.chdir(copy)
        sys.path.insert(0, str(copy))
        os.environ.pop("COURSE_STEPS_DIR", None)
        import pytest

        code = int(pytest.main(header["args"]))
    except BaseException as exc:  # noqa: BLE001 - whatever happens, the worker must hear of it
        print(f"the copy could not run: {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        _exit(code)


def _others() -> list[int]:
    """Every process this worker may and must kill: in a PID namespace of its own, all but itself
    and its init; elsewhere, every process of this user but itself (the grade's own user)."""
    me, uid, alone = os.getpid(), os.getuid(), os.environ.get("COURSE_GRADE_PIDNS") == "1"
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in (me, 1):
            continue
        try:
            if alone or entry.stat().st_uid == uid:
                found.append(int(entry.name))
        except OSError:
            continue  # gone already
    return found


def _kill_leftovers(child: int) -> int:
    """Kill the child's group and, where this worker owns a user or a namespace, every other
    process of it; return how many were left running."""
    left = 0
    try:
        os.killpg(child, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if os.environ.get("COURSE_GRADE_KILL") == "all":
        for _ in range(20):  # a process may fork while we kill: until none is left
            pids = _others()
            if not pids:
                break
            left = max(left, len(pids))
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.05)
    return left


def _wait(child: int, wall: float) -> tuple[int | None, bool]:
    """(exit code or -signal, timed out) of the child, killed at `wall` seconds."""
    deadline = time.monotonic() + wall
    while time.monotonic() < deadline:
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid:
            return os.waitstatus_to_exitcode(status), False
        time.sleep(0.02)
    _kill_leftovers(child)
    os.waitpid(child, 0)  # SIGKILL cannot be refused: this returns
    return None, True


def _wipe(keep: Path) -> None:
    """Empty what a copy could write besides itself: whatever this user owns in the temporary
    folders and home (in bwrap all of them are the sandbox's own)."""
    if os.environ.get("COURSE_GRADE_WIPE") != "1":
        return
    places = {Path(os.environ.get("TMPDIR", "/tmp")), Path.home(), Path("/tmp"), Path("/var/tmp")}
    for folder in places | {Path("/dev/shm")}:
        try:
            entries = list(folder.iterdir())
        except OSError:
            continue
        for entry in entries:
            try:
                if keep.is_relative_to(entry) or entry.lstat().st_uid != os.getuid():
                    continue
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink()
            except OSError:
                pass


def _read(path: Path, limit: int) -> bytes:
    """A file's last `limit` bytes ('' when the copy left none)."""
    try:
        with path.open("rb") as f:
            f.seek(max(0, path.stat().st_size - limit))
            return f.read()
    except OSError:
        return b""


def _warm() -> None:
    """Import once what every copy's run imports, so each forked child starts warm."""
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = (
        "1"  # no entry-point scan per copy: -p names them
    )
    import pytest  # noqa: F401
    import torch
    import torch._dynamo  # noqa: F401 - an optimiser's first step imports it: once, not per copy
    import torch.nn.functional  # noqa: F401

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot  # noqa: F401
    except ImportError:  # a course without figures
        pass
    torch.manual_seed(0)  # initialises torch's default generator before the fork


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
    sys.modules.setdefault("triton", None)  # as conftest.py: the CUDA build's triton stays out
    _warm()
    _dumpable(False)

    raw = open(os.dup(0), "rb", buffering=0)  # noqa: SIM115 - the grader's frames
    out = open(os.dup(1), "wb")  # noqa: SIM115 - the answers
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)  # a child never writes into the answers by accident, nor on purpose
    private = [raw.fileno(), out.fileno()]
    copy = work / "copy"
    while True:
        header = _header(raw)
        if header.get("end"):
            return 0
        _write_copy(raw, header, base, copy)
        child = os.fork()
        if child == 0:
            _child(copy, header, private)
        code, timed_out = _wait(child, header["wall"])
        left = _kill_leftovers(child)
        report = _read(copy / OUT / "check.json", 8 * 2**20)
        screen = _read(copy / OUT / "screen.txt", 200_000)
        shutil.rmtree(copy, ignore_errors=True)
        _wipe(work)
        sizes = [len(report), len(screen)]
        answer = {"name": header["name"], "returncode": code, "timed_out": timed_out}
        _send(out, answer | {"sizes": sizes, "left": left}, report, screen)


if __name__ == "__main__":
    sys.exit(main())
