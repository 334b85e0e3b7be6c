"""Each step's Python background, live: `python -m common.background step-04` serves its topics.

    python -m common.background step-04               # serve on localhost and open the browser
    python -m common.background step-04 --no-browser  # serve only; print the address
    python -m common.background --write-docs          # maintainers: copy what each topic prints
                                                      # into its step's handout

A topic is one marimo notebook, `steps/<step>/background/NN_name.py`, that also runs as a script
printing what the handout shows. The server (this interpreter, so the environment's torch) edits
copies under out/background/<step>/: a cell edited never changes the repository.
"""

import argparse
import contextlib
import io
import os
import runpy
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import webbrowser
from pathlib import Path

from common import OUT_DIR, STEPS_DIR, command, shown
from common.course import step_names
from common.docs import write_block

HOST = "127.0.0.1"  # never another interface: the cells run code as you
DEFAULT_PORT = 2718  # marimo's own default
START_TIMEOUT = 60.0  # seconds for the server to answer; it starts in 1-3 s
STOP_TIMEOUT = 15.0  # seconds for a clean shutdown before the server is killed
# Read by marimo from the pyproject.toml nearest the notebooks (the workspace's, written below).
MARIMO_CONFIG = """\
# Written by common/background.py: marimo's settings for the course's Python background.
[tool.marimo.runtime]
auto_instantiate = true  # opening a topic runs its cells, so every output is there at once
"""


def topics(step: str) -> list[Path]:
    """The topic notebooks of `step`, in the handout's order (none if it has no background)."""
    return sorted((STEPS_DIR / step / "background").glob("[0-9][0-9]_*.py"))


def steps_with_background() -> list[str]:
    """Every step that has a Python background, sorted like the steps."""
    return [step for step in step_names() if topics(step)]


def output(topic: Path) -> str:
    """What `python <topic>` prints, run in this process (the global RNG is left as it was)."""
    import torch  # only here: serving the notebooks does not need torch in this process

    buffer = io.StringIO()
    with torch.random.fork_rng(devices=[]), contextlib.redirect_stdout(buffer):
        runpy.run_path(str(topic), run_name="__main__")
    return buffer.getvalue()


def block_name(topic: Path) -> str:
    """The handout block that shows `topic`'s output."""
    return f"background-{topic.stem}"


def block(text: str) -> str:
    """A topic's output as the body of its handout block."""
    return f"```text\n{text.rstrip()}\n```\n"


def write_docs(step: str, readme: Path | None = None) -> list[str]:
    """Rewrite every topic block of the step's handout; return the names of those that changed."""
    readme = readme or STEPS_DIR / step / "README.md"
    return [b for t in topics(step) if write_block(readme, b := block_name(t), block(output(t)))]


# --- the live server ------------------------------------------------------------------------------


def prepare(step: str, root: Path) -> tuple[Path, list[Path]]:
    """Copy the step's topics into `root`/<step>/; return (that folder, the edited copies kept:
    one that differs from its topic holds the student's edits, so it is never overwritten)."""
    folder = root / step
    folder.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(MARIMO_CONFIG, encoding="utf-8")
    kept = []
    for topic in topics(step):
        copy = folder / topic.name
        if copy.exists() and copy.read_bytes() != topic.read_bytes():
            kept.append(copy)
        else:
            shutil.copyfile(topic, copy)
    return folder, kept


def choose_port(preferred: int) -> tuple[int, str | None]:
    """(`preferred`, None) if nothing listens on it, else (a free port, a line saying which)."""
    with socket.socket() as s:
        if os.name != "nt":  # as uvicorn does; on Windows the option would let two servers share
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((HOST, preferred))
            return preferred, None
        except OSError:
            s.bind((HOST, 0))  # the system picks a free port
            port = s.getsockname()[1]
    return port, f"port {preferred} is busy; using port {port} instead"


def start(folder: Path, port: int, token: str) -> subprocess.Popen:
    """Start `marimo edit` on `folder` with this interpreter, in its own process group."""
    cmd = [sys.executable, "-m", "marimo", *"--quiet --yes --log-level error edit".split()]
    cmd += [str(folder), "--headless", "--host", HOST, "--port", str(port), "--skip-update-check"]
    cmd += ["--no-sandbox", "--token-password-file", "-"]  # the token is not on the command line
    # Its own process group: the terminal's Ctrl-C reaches only this process, which then stops
    # the server and the kernels it started, and waits for them.
    nt = os.name == "nt"
    group = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP} if nt else {"process_group": 0}
    proc = subprocess.Popen(cmd, cwd=folder, stdin=subprocess.PIPE, text=True, **group)
    proc.stdin.write(token)
    proc.stdin.close()  # stdin is then no terminal: marimo quits on SIGINT without asking
    return proc


def wait_until_up(proc: subprocess.Popen, port: int, timeout: float = START_TIMEOUT) -> None:
    """Return once the server answers on `port`; RuntimeError if it exits or takes too long."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the marimo server exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://{HOST}:{port}/health", timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"the marimo server did not answer on port {port} within {timeout:.0f} s")


def stop(proc: subprocess.Popen) -> int:
    """Stop the server, kill it if it hangs, and leave none of its processes behind."""
    if proc.poll() is None:
        # SIGTERM, not SIGINT: uvicorn shuts down the same way, without marimo's Ctrl-C handler,
        # which printed a CancelledError traceback on the way out.
        proc.send_signal(signal.CTRL_BREAK_EVENT if os.name == "nt" else signal.SIGTERM)
        try:
            proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if os.name != "nt":  # a kernel left behind by a crash still has the server's group
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode


def serve(step: str, port: int, browser: bool, root: Path) -> int:
    """Serve the step's topics until Ctrl-C; return the exit code."""
    # Ctrl-C must stop the server even when the parent ignores it (a shell's background job, an
    # xdist worker started from one): an ignored SIGINT would be inherited and never raise here.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    folder, kept = prepare(step, root)
    for copy in kept:
        print(f"kept your edited {shown(copy)} (delete it to get the course's version back)")
    port, note = choose_port(port)
    if note:
        print(note)
    token = secrets.token_urlsafe(16)  # another user of this machine cannot run your cells
    proc = start(folder, port, token)
    try:
        wait_until_up(proc, port)
        url = f"http://{HOST}:{port}/?access_token={token}"
        n = len(topics(step))
        print(f"{step}'s Python background ({n} topics) is live at {url}")
        print(
            f"Open a topic, edit a cell, run it with Ctrl-Enter; Ctrl-S saves it in {shown(folder)}/."
        )
        print("Ctrl-C here stops the server.", flush=True)
        if browser and not webbrowser.open(url):
            print("No browser could be started here: open the address above in yours.", flush=True)
        return proc.wait()
    except KeyboardInterrupt:
        print("\nstopping the server...", flush=True)
        return 0
    except RuntimeError as exc:
        print(f"background: {exc}", file=sys.stderr)
        return 1
    finally:
        stop(proc)
        print("the background server has stopped.", flush=True)


def port_number(text: str) -> int:
    """argparse type: a TCP port, 1 to 65535."""
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"a port is a number from 1 to 65535, got {text!r}")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=command("pixi run background", "python -m common.background"),
        description="Serve a step's Python background as live notebooks on localhost.",
    )
    parser.add_argument("step", nargs="?", help="the step, e.g. step-04")
    parser.add_argument("--port", type=port_number, default=DEFAULT_PORT, help="default: 2718")
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser")
    where = "where the copies live (default: out/background)"
    parser.add_argument("--workspace", type=Path, default=OUT_DIR / "background", help=where)
    parser.add_argument("--write-docs", action="store_true", help="rewrite the handouts' blocks")
    args = parser.parse_args(argv)
    steps = [args.step] if args.step else steps_with_background()
    if args.step not in steps_with_background() and not (args.write_docs and not args.step):
        what = f"no Python background for {args.step!r}" if args.step else "name a step"
        with_one = ", ".join(steps_with_background())
        parser.exit(2, f"background: {what}; steps with one: {with_one}\n")
    if args.write_docs:
        for step in steps:
            changed = ", ".join(write_docs(step))
            print(
                f"{step}/README.md: rewrote {changed}"
                if changed
                else f"{step}/README.md up to date"
            )
        return 0
    return serve(args.step, args.port, not args.no_browser, args.workspace.resolve())


if __name__ == "__main__":
    sys.exit(main())
