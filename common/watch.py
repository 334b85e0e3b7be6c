"""Watch a step: `python -m common.watch lab-02` runs the check again each time a starter file is saved."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from common import REPO_ROOT, command, pytest_command, shown
from common.course import course_step, step_names

WATCHED = (".py", ".toml")  # the student's code and predictions.toml; caches and backups are not
STEP_MS = 300  # a save waits this long for more saves: a burst (save-all, a formatter) is one run
CLEAR = "\033[H\033[2J\033[3J"  # cursor home, clear the screen and its scrollback (VT100)


def usage() -> str:
    """The one line that says how to call it."""
    return f"usage: {command('pixi run watch <step>', 'python -m common.watch <step>')} [pytest options]"


def clear() -> None:
    """Clear the terminal: `cls` on Windows (its console may not read VT codes), VT codes elsewhere;
    output sent to a file or a pipe keeps every screen, without codes."""
    if not sys.stdout.isatty():
        return
    if os.name == "nt":
        os.system("cls")
    else:
        sys.stdout.write(CLEAR)
        sys.stdout.flush()


def syntax_error(starter: Path) -> str | None:
    """One line naming the first starter file that does not compile (file:line: the error), or None."""
    for path in sorted(starter.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        try:
            compile(path.read_text(encoding="utf-8"), str(path), "exec")
        except SyntaxError as exc:
            return f"{shown(path)}:{exc.lineno}: SyntaxError: {exc.msg}. Fix it and save again."
        except (UnicodeDecodeError, ValueError) as exc:  # not UTF-8, or a NUL byte
            return f"{shown(path)}: cannot be read as Python ({exc}). Fix it and save again."
    return None


def run_check(folder: Path, extra: list[str]) -> str:
    """The check's whole output, once it has finished: a screen is drawn complete or not at all."""
    width = shutil.get_terminal_size((100, 40)).columns
    env = os.environ | {"COLUMNS": str(width), "PYTHONIOENCODING": "utf-8"}
    # its own process group: Ctrl-C in the terminal reaches the watcher alone, which stops it
    nt = os.name == "nt"
    group = (
        {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
        if nt
        else {"start_new_session": True}
    )
    child = subprocess.Popen(
        pytest_command(folder, [str(folder), "--impl", "starter", *extra]),
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        **group,
    )
    try:
        out, _ = child.communicate()
    except BaseException:  # Ctrl-C while it runs: stop it, and show nothing of it
        child.kill()
        child.wait()
        raise
    return out.decode("utf-8", errors="replace")


def draw(step: str, folder: Path, extra: list[str], why: str) -> None:
    """One screen: the check (or the one line of a syntax error), then what the watcher waits for."""
    starter = course_step(step, folder.parent).starter
    problem = syntax_error(starter)
    text = problem + "\n" if problem else run_check(folder, extra)
    clear()
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    when = time.strftime("%H:%M:%S")
    print(f"\n[{why}, checked {when}] Watching {shown(starter)}:")  # two lines: 100 columns
    print("save a file to check again; Ctrl-C stops.")
    sys.stdout.flush()


def seen(names: list[str]) -> str:
    """Say at once that a save was seen, with its time: the check takes seconds, and until it ends
    the old screen is all there is. Returns what the new screen's footer says of the save."""
    saved = f"{', '.join(names)} saved {time.strftime('%H:%M:%S')}"
    print(f"\n[{saved}] Checking again; the new screen comes when the check is done ...")
    sys.stdout.flush()
    return saved


def changed(starter: Path, changes) -> list[str]:
    """The names of the starter's own files among watchfiles' changes (caches and backups left out)."""
    paths = [Path(raw) for _, raw in changes]
    return sorted({p.name for p in paths if p.suffix in WATCHED and "__pycache__" not in p.parts})


def watch(step: str, extra: list[str], poll: bool = False) -> int:
    """Draw the check now, then again after each burst of saves, until Ctrl-C (exit 0)."""
    from watchfiles import watch as changes_of  # imported here: --help and a bad step need none

    folder, starter = course_step(step).folder, course_step(step).starter
    if not starter.is_dir():
        catch_up = command(f"pixi run catch-up {step}", f"python -m common.catchup {step}")
        print(f"{shown(starter)} is missing: restore it with git, or {catch_up}")
        return 1
    # Ctrl-C must stop the watch even when the parent ignores it (a shell's background job, an
    # xdist worker): Python raises KeyboardInterrupt only if SIGINT was not ignored at start.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        draw(step, folder, extra, f"started {time.strftime('%H:%M:%S')}")
        for batch in changes_of(starter, step=STEP_MS, force_polling=poll or None):
            if names := changed(starter, batch):
                draw(step, folder, extra, seen(names))
    except KeyboardInterrupt:
        print(f"\nStopped watching {shown(starter)}.")
    return 0


def main(argv: list[str]) -> int:
    """`python -m common.watch <step> [--poll] [pytest options]`."""
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        print("  runs the step's check again each time you save a file of its starter/")
        print("  --poll: look for changes every 0.3 s (network drives, some containers)")
        return 0 if argv else 2
    step, rest = argv[0], argv[1:]
    if step not in step_names():
        print(f"no step {step!r}: the steps are {', '.join(step_names())}")
        print(usage())
        return 2
    poll = "--poll" in rest or bool(os.environ.get("WATCHFILES_FORCE_POLLING"))
    return watch(step, [a for a in rest if a != "--poll"], poll)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
