"""Catch up: `python -m common.catchup step-04` puts the reference in place of your starter, keeping a backup."""

import argparse
import errno
import filecmp
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from common import command, shown, typed
from common.course import at, course_step, step_names
from common.course.predictions import FILE as PREDICTIONS

LOCK = ".catch-up.lock"  # in the step folder while a catch-up runs (git-ignored)
NEW, OLD = ".starter-new", ".starter-old"  # the swap's two sides, beside starter/
INCOMPLETE = "-incomplete"  # a backup's name while it is written: a killed copy keeps it
KEPT = (Path(PREDICTIONS),)  # the student's own record: carried into the new starter, not replaced


class CatchUpError(Exception):
    """A catch-up that could not start or finish; the message is one line: the file, what to do."""


def _skipped(name: str) -> bool:
    return name == "__pycache__" or name.endswith(".pyc")


def source_files(folder: Path) -> set[Path]:
    """Relative paths of the files in `folder` (none if it is missing), caches left out, links not followed."""
    found = set()
    for root, dirs, files in os.walk(folder):  # never follows a link to a folder: no loops
        dirs[:] = [d for d in dirs if not _skipped(d)]
        entries = files + [d for d in dirs if os.path.islink(os.path.join(root, d))]
        found |= {(Path(root) / f).relative_to(folder) for f in entries if not _skipped(f)}
    return found


def caught_up(starter: Path, solution: Path) -> bool:
    """True when the starter holds exactly the solution's files (KEPT aside), and it has some."""
    files = source_files(solution) - set(KEPT)
    return (
        bool(files)
        and source_files(starter) - set(KEPT) == files
        and all(filecmp.cmp(starter / f, solution / f, shallow=False) for f in files)
    )


def _keep(starter: Path, new: Path) -> list[Path]:
    """Copy the student's KEPT files over the staged copy `new`; return those not the template."""
    kept = []
    for rel in KEPT:
        mine = starter / rel
        if mine.is_file() and not mine.is_symlink():  # a link is backed up, never followed
            if (new / rel).is_file() and filecmp.cmp(mine, new / rel, shallow=False):
                continue  # the empty template: nothing of the student's to keep
            try:
                shutil.copyfile(mine, new / rel)
            except OSError as exc:
                raise CatchUpError(explain(exc, "keep", mine)) from exc
            kept.append(mine)
    return kept


def explain(exc: OSError, doing: str, path: Path | str) -> str:
    """One line for an OSError: what failed on which file, and what the student can do about it."""
    where = shown(Path(path)) if path else "a file"
    if getattr(exc, "winerror", None) in (32, 33):  # Windows: another program has it open
        return f"could not {doing} {where}: another program has it open; close editors or terminals using it and run the command again"
    if isinstance(exc, PermissionError):
        return f"could not {doing} {where}: permission denied; give yourself read and write access to it (chmod -R u+rw on macOS and Linux, Properties > Security on Windows) and run the command again"
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return f"could not {doing} {where}: the disk is full; free some space and run the command again"
    return f"could not {doing} {where}: {exc.strerror or exc}; fix that and run the command again"


def _copy(src: Path, dst: Path, links: bool) -> None:
    """Copy the folder `src` to the new folder `dst` file by file; an OSError names the file.
    links=True copies a link as a link (a backup keeps what was), else its target's bytes."""
    dst.mkdir(parents=True, exist_ok=True)
    for rel in sorted(source_files(src)):
        source, target = src / rel, dst / rel
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            if links and source.is_symlink():
                target.symlink_to(os.readlink(source), target_is_directory=source.is_dir())
            else:
                shutil.copyfile(source, target)
        except OSError as exc:
            failed = exc.filename or source  # the side that failed
            doing = "read" if str(failed) == str(source) else "write"
            raise CatchUpError(explain(exc, doing, failed)) from exc


def back_up(starter: Path, now: datetime | None = None) -> Path:
    """Copy `starter` to a fresh `backups/starter-<timestamp>` beside it, named -incomplete until
    whole (a killed copy keeps that name, a failed one is removed); return it."""
    base = starter.parent / "backups" / f"starter-{now or datetime.now():%Y%m%d-%H%M%S}"
    path, n = base, 1
    while path.exists() or path.with_name(path.name + INCOMPLETE).exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    partial = path.with_name(path.name + INCOMPLETE)
    try:
        # a copy, not a move: an open editor or terminal cannot block it
        _copy(starter, partial, links=True)
        partial.rename(path)
    except (CatchUpError, OSError) as exc:
        shutil.rmtree(partial, ignore_errors=True)
        said = explain(exc, "write the backup", partial) if isinstance(exc, OSError) else str(exc)
        raise CatchUpError(f"{said} (your starter is unchanged)") from exc
    return path


def _leaving_link(starter: Path, step: Path) -> str | None:
    """A one-line refusal for a link in `starter` that leaves the step or loops back, else None."""
    inside = step.resolve()
    links = [
        p
        for p in [starter, *(starter / f for f in sorted(source_files(starter)))]
        if p.is_symlink()
    ]
    for path in links:
        target = path.resolve()
        loops = target.is_dir() and path.parent.resolve().is_relative_to(target)
        if loops or not target.is_relative_to(inside):
            why = "a folder that holds the link itself" if loops else "outside the step"
            return (
                f"{shown(path)} is a link to {target} ({why}); catch-up copies your starter "
                "and will not follow it: delete that link and run the command again (nothing changed)"
            )
    return None


def check_reference(step: Path) -> None:
    """Refuse, before anything is touched, a reference solution that is missing, partial or unreadable."""
    solution = at(step).solution
    restore = f"restore it (git checkout -- {shown(solution)}, or a fresh download of the course)"
    if not solution.is_dir() or not source_files(solution):
        raise CatchUpError(f"{shown(solution)} is missing or empty: {restore}; nothing changed")
    git = ["git", "ls-files", "--deleted", "--", "."]  # tracked files gone from the disk
    try:
        done = subprocess.run(git, cwd=solution, capture_output=True, text=True, timeout=30)
        missing = done.stdout.split() if done.returncode == 0 else []
    except (OSError, subprocess.SubprocessError):
        missing = []  # no git, or not a clone (a downloaded zip): the checks below still hold
    if missing:
        gone = shown(solution / missing[0])
        raise CatchUpError(f"{gone} is missing from the reference: {restore}; nothing changed")
    for rel in sorted(source_files(solution)):
        try:
            text = (solution / rel).read_bytes()
            if rel.suffix == ".py":
                compile(text, str(solution / rel), "exec")
        except OSError as exc:
            raise CatchUpError(explain(exc, "read", solution / rel) + " (nothing changed)") from exc
        except (SyntaxError, ValueError) as exc:
            raise CatchUpError(
                f"{shown(solution / rel)} does not compile ({exc.__class__.__name__}): {restore}; nothing changed"
            ) from exc


STALE = 600  # seconds: a catch-up takes a second or two, so an older lock is a killed run's


@contextmanager
def _locked(step: Path):
    """Only one catch-up per step at a time: a file made with O_EXCL (atomic on every OS)."""
    path = step / LOCK
    while True:  # once more after taking over a killed run's lock: another run may take it first
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            break
        except FileExistsError:
            made = path.stat().st_mtime
            if datetime.now().timestamp() - made <= STALE:
                raise CatchUpError(
                    f"another catch-up of {shown(step)} is running ({shown(path)} exists, made at "
                    f"{datetime.fromtimestamp(made):%H:%M:%S}): wait for it to finish; if none is "
                    f"running, delete that file (after {STALE // 60} minutes the next run does) "
                    "and run the command again"
                ) from None
            path.unlink(missing_ok=True)  # left by a run that was killed: take it over
        except OSError as exc:
            raise CatchUpError(explain(exc, "create", path) + " (nothing changed)") from exc
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(f"pid {os.getpid()}\n")
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


def _swap(step: Path) -> None:
    """Put the staged starter (.starter-new) in place of starter/, by two renames."""
    starter, new, old = step / "starter", step / NEW, step / OLD
    try:
        if starter.exists():
            starter.rename(old)
        new.rename(starter)
    except OSError as exc:
        if old.exists() and not starter.exists():  # old/ was cleared before: this run moved it
            old.rename(starter)  # put the student's folder back as it was
        shutil.rmtree(new, ignore_errors=True)
        raise CatchUpError(
            explain(exc, "replace", starter) + " (your starter is unchanged)"
        ) from exc
    shutil.rmtree(old, ignore_errors=True)  # backed up already; a locked leftover goes next run


def catch_up(step: Path, now: datetime | None = None) -> tuple[Path | None, str]:
    """Replace the step's starter by its solution; return (backup or None, message).
    Anything wrong raises CatchUpError (one line) and leaves the starter as it was."""
    layout = at(step)
    starter, solution = layout.starter, layout.solution
    rel = shown(starter)
    with _locked(step):
        if not starter.exists() and (step / OLD).is_dir():  # a run killed between its two renames
            (step / OLD).rename(starter)
        for leftover in (step / NEW, step / OLD):  # a copy of the solution, or backed-up work
            shutil.rmtree(leftover, ignore_errors=True)
        check_reference(step)
        if starter.exists() and not starter.is_dir():
            raise CatchUpError(
                f"{rel} is a file, not a folder: move it out of the way and run the command again"
            )
        if refusal := _leaving_link(starter, step):
            raise CatchUpError(refusal)
        if caught_up(starter, solution):
            return None, f"{rel} already holds the reference solution; nothing changed."
        backup = back_up(starter, now) if starter.exists() else None
        saved = (  # backups/ is git-ignored: the student would not find it through git status
            f"Your version of {rel} is saved in {shown(backup)}/ (git does not track backups/; "
            "copy a file back from there to use your own again)\n"
            if backup
            else ""
        )
        try:
            _copy(solution, step / NEW, links=False)
            kept = _keep(starter, step / NEW)
        except CatchUpError as exc:
            shutil.rmtree(step / NEW, ignore_errors=True)
            raise CatchUpError(f"{exc} (your starter is unchanged)") from exc
        _swap(step)
    if kept:
        saved += f"Your predictions stay as you wrote them: {', '.join(shown(p) for p in kept)}\n"
    check = command(f"pixi run check-{step.name}", f"python -m pytest {typed(step)} --impl starter")
    return backup, f"{saved}{rel} now holds the reference solution. Next: {check}"


def main(argv: list[str] | None = None) -> int:
    """Command line: one step name; an unknown one lists the valid names."""
    prog = command("pixi run catch-up", "python -m common.catchup")
    steps = ", ".join(step_names())
    parser = argparse.ArgumentParser(prog=prog, description=__doc__)
    parser.add_argument("step", nargs="?", help=f"one of: {steps}")
    step = parser.parse_args(argv).step
    try:
        found = course_step(step or "")
        if found.checkpoint:
            run = command(f"pixi run {step}", f"python -m common.run {step}")
            parser.error(
                f"{step} is a checkpoint, not a step: use {shown(found.folder)}/ as it is ({run}); "
                f"steps you can catch up on: {steps}"
            )
        if found.unreleased:  # a student edition's open step: its reference is not out yet
            parser.exit(
                1,
                f"{prog}: {step}'s checkpoint comes when the step is closed; until then its starter is yours\n",
            )
        print(catch_up(found.folder)[1])
    except ValueError as exc:  # no step, or an unknown one: the message lists the valid ones
        parser.error(str(exc))
    except CatchUpError as exc:
        parser.exit(1, f"{prog}: {exc}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
