"""A `python -m common.background` server in a child process, for the tests, and what they check."""

import contextlib
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from common import REPO_ROOT

TEXT = dict(capture_output=True, text=True, check=True)


def repo_state() -> tuple[str, str]:
    """git's view of the working tree: changed and untracked files, and ignored ones outside out/."""

    def git(*args: str) -> list[str]:
        done = subprocess.run(["git", "status", "--porcelain", *args], cwd=REPO_ROOT, **TEXT)
        return done.stdout.splitlines()

    made = [line for line in git("--ignored=matching", "--untracked-files=all") if line[:2] == "!!"]
    outside = r"(^!! out/|__pycache__|\.pyc$|_cache/)"  # what every run makes, out/ included
    return "\n".join(git()), "\n".join(sorted(x for x in made if not re.search(outside, x)))


class Server:
    """`python -m common.background step-04 --no-browser` in a child process, read line by line."""

    def __init__(self, *args: str, workspace: Path, browser: str | None = None):
        """`browser`: a command for Python's webbrowser module ($BROWSER); none: --no-browser."""
        cmd = [sys.executable, "-m", "common.background", "step-04", *args]
        cmd += ["--workspace", str(workspace)] + ([] if browser else ["--no-browser"])
        env = {**os.environ, "BROWSER": browser} if browser else None
        self.proc = subprocess.Popen(
            cmd, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
            start_new_session=True,  # its own session: the test signals it alone, as a terminal would
        )  # fmt: skip
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put("")

    def wait_for(self, text: str, timeout: float = 90) -> str:
        """The first line containing `text`; fails after `timeout` seconds or at the end of output."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                break
            self.seen.append(line)
            if text in line:
                return line
            if line == "":
                break
        raise AssertionError(f"no line with {text!r}; output so far:\n{''.join(self.seen)}")

    def url(self) -> str:
        return re.search(r"(http://\S+)", self.wait_for("is live at"))[1]

    def interrupt(self, timeout: float = 60) -> int:  # a busy CI machine once took over 30 s
        """Ctrl-C, as the terminal sends it; the exit code."""
        self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(timeout)

    def close(self) -> None:
        """Whatever happened, leave no process behind: the wrapper, the server, its kernels."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(20)
        for pid in session_processes(self.proc.pid) if Path("/proc").is_dir() else []:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(10)  # the pipe's end: every process that held it is gone
        self.proc.stdout.close()


def session_processes(sid: int) -> list[int]:
    """Live processes in session `sid` (Linux's /proc; the server keeps the wrapper's session)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":  # after the name: state, ppid, pgrp, sid
            found.append(int(stat.parent.name))  # (a zombie is dead, waiting for init to reap it)
    return found


def refused(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=2)
    except OSError:
        return True
    return False
