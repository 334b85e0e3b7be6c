"""The student's room, and what every room shares: the commands a student types
(`python -m common.<name>`: hint, catchup, background, watch, envreport; the run is common/run/)
and the library a step's code and tests import (loader, docs, seeding, text, optim, expect). The
course model is common/course/, the check common/check/, the run common/run/. Here: the repository's paths and how a path or a
command is shown to a student (command, shown, typed)."""

import json
import os
import re
import shutil
import sys
import tokenize
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
# COURSE_STEPS_DIR lets the contract tests point the tooling at a deliberately broken fixture.
STEPS_DIR = Path(os.environ.get("COURSE_STEPS_DIR", REPO_ROOT / "steps")).resolve()
SOLUTIONS_DIR = REPO_ROOT / "solutions"
OUT_DIR = REPO_ROOT / "out"

# The pip path's CUDA torch imports triton at an optimiser's first step, and at exit its bindings
# print a screen of "nanobind: leaked". Nothing in the course compiles a model: None here reads as
# "triton not installed" to torch, in every course process (the check, a run, the suite)
sys.modules.setdefault("triton", None)


def command(pixi: str, python: str) -> str:
    """The command to show a student: `pixi run ...` inside a pixi task, else its `python` twin."""
    if os.environ.get("PIXI_PROJECT_ROOT"):
        return pixi
    return interpreter() + python.removeprefix("python") if python.startswith("python ") else python


def check_command(step: str) -> str:
    """The command that checks the student's `step`, as command() shows it."""
    return command(
        f"pixi run check-{step}", f"python -m pytest {typed(STEPS_DIR / step)} --impl starter"
    )


def run_command(step: str) -> str:
    """The command that runs `step` on the student's own code, as command() shows it."""
    return command(f"pixi run {step} --impl starter", f"python -m common.run {step} --impl starter")


def interpreter() -> str:
    """This Python as the student types it: `python` when PATH finds it, else its path (a venv's
    .venv/bin/python, not activated); a `python` that is another Python would mislead."""
    here, found = Path(sys.executable).absolute(), shutil.which("python")
    if found and Path(found).absolute() == here:
        return "python"
    return os.path.relpath(here) if _inside(here) else str(here)  # native separators: cmd.exe


def typed(path: Path) -> str:
    """`path` as a command typed in this folder takes it (a step's folder too); else shown(path)."""
    return Path(os.path.relpath(path)).as_posix() if _inside(path) else shown(path)


def _inside(path: Path) -> bool:
    """Are `path` and the current folder both in the repository (so a relative path joins them)?"""
    return path.is_relative_to(REPO_ROOT) and Path.cwd().resolve().is_relative_to(REPO_ROOT)


def counted(n: int, noun: str, verb: str = "") -> str:
    """'1 part waits for it', '3 parts wait for it': a count whose noun and verb agree with it."""
    first, _, rest = verb.partition(" ")
    if n == 1:
        return " ".join(w for w in ("1", noun, first and f"{first}s", rest) if w)
    return " ".join(w for w in (str(n), f"{noun}s", first, rest) if w)


def shown(path: Path) -> str:
    """`path` relative to the repo when it is inside it; under a steps folder elsewhere, steps/..."""
    if path.is_relative_to(REPO_ROOT):
        return path.relative_to(REPO_ROOT).as_posix()
    if path.is_relative_to(STEPS_DIR):  # a pristine copy the tests make: it stands for steps/
        return "steps/" + path.relative_to(STEPS_DIR).as_posix() if path != STEPS_DIR else "steps"
    return str(path)


def py_files(folder: Path) -> list[Path]:
    """The .py files under `folder`, sorted; a link to a folder is not followed (it may loop)."""
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        found += [Path(root) / f for f in files if f.endswith(".py")]
    return sorted(found)


def source(path: Path) -> str:
    """A Python file's text as Python decodes it (a BOM, a coding cookie); bad bytes replaced."""
    try:
        with tokenize.open(path) as f:
            return f.read()
    except (SyntaxError, UnicodeDecodeError):  # Python will not import it: the loader says why
        return path.read_bytes().decode("utf-8", errors="replace")


def source_lines(text: str) -> list[str]:
    """A source's lines as Python numbers them, split at \\n, \\r\\n and \\r only (str.splitlines
    also splits at \\x0c, \\x85, U+2028 and more, all of which Python reads as part of a line)."""
    lines = re.split(r"\r\n|\r|\n", text)
    return lines[:-1] if lines[-1:] == [""] else lines


def write_json(path: Path, data, **dumps) -> None:
    """`data` as JSON in `path`: written whole beside it, then moved into place (never half)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    part.write_text(json.dumps(data, **dumps) + "\n", encoding="utf-8")
    part.replace(path)


def pytest_command(folder: Path, args: list[str]) -> list[str]:
    """`python -m pytest <args>` for a child Python on the steps in `folder`; a copy outside the
    repository (tests, the grader) is not under its conftest, so it is named."""
    cmd = [sys.executable, "-m", "pytest", *args, f"--rootdir={REPO_ROOT}"]
    if not folder.resolve().is_relative_to(REPO_ROOT):
        cmd += ["-c", str(REPO_ROOT / "pyproject.toml"), "-p", "conftest"]
    return cmd
