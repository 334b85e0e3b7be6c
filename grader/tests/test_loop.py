"""The student's loop (issue 26): the untouched check is red, caught up it is green, the run prints
the reference's tables, the hint gives four levels, and a bug in each TODO makes the check name it.
The README's commands run it end to end in a clean clone for one step; every other step's checks
run in the grader's warm worker (a fork per copy)."""

import ast
import functools
import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from common import OUT_DIR, hint
from common.check import TIMEOUT
from common.course import at, course, course_step, pixi_tasks
from common.course.todos import END, optional
from grader import sandbox
from grader.engine import Worker, reference_files, starter_files
from grader.sandbox import Limits
from tools import clean_clone
from tools.mutate import equivalents, mutants

STEPS = [s for s in course() if not s.checkpoint]  # in course order


def student(repo: Path, task: str, *args: str) -> subprocess.CompletedProcess:
    """`pixi run <task> <args>` as the pip path types it: the task's own command, this Python."""
    cmd = pixi_tasks()[task]["cmd"].split()
    assert cmd[0] == "python", f"pixi task {task} is not a plain python command: {cmd}"
    env = {k: v for k, v in os.environ.items() if k not in ("COURSE_STEPS_DIR", "PYTHONPATH")}
    env |= {"COLUMNS": "100", "PYTHONUTF8": "1"}
    cmd = [sys.executable, *cmd[1:], *args]
    return subprocess.run(
        cmd, cwd=repo, env=env, capture_output=True, encoding="utf-8", timeout=300
    )


def todo_lines(out: str) -> list[str]:
    """The check's table: one `[.] TODO(id): ...` line per TODO, as printed."""
    return re.findall(r"^\[.\] TODO\(([^)]+)\)", out, re.M)


TIMED = re.compile(r"\bms\b|seconds|per second|/s\b|\bwall\b|MFU|speed-up")  # the clock's columns


def tables(out: str) -> list[list[str]]:
    """The run's printed tables (rows that start with |), without the columns of measured times."""
    rows, timed, lines = [], set(), out.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if i + 1 < len(lines) and lines[i + 1].startswith("| ---"):  # a header row
            timed = {j for j, cell in enumerate(cells) if TIMED.search(cell)}
        rows.append([cell for j, cell in enumerate(cells) if j not in timed])
    return rows


def run_files(repo: Path) -> str:
    """sha256 over the clone's files a run can read: all but the repository's tests and bench/."""
    digest = hashlib.sha256()
    for path in sorted(p for p in repo.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        rel = path.relative_to(repo)
        if rel.parts[0] not in ("tests", "bench"):
            digest.update(rel.as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def reference_quick(repo: Path, step: str, key: str, out: Path) -> str:
    """The reference's quick run of `step` in `repo`: run once per `key` (its files), then read from
    out/ (the same files print the same tables)."""
    import torch  # the version is part of what the run depends on

    key = hashlib.sha256(f"{key}\0{sys.version}\0{torch.__version__}".encode()).hexdigest()
    kept = OUT_DIR / "test-loop-reference" / f"{step}-{key[:16]}.txt"
    if kept.is_file():
        return kept.read_text(encoding="utf-8")
    done = student(repo, step, "--quick", "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    kept.parent.mkdir(parents=True, exist_ok=True)
    part = kept.with_name(f"{kept.name}.{os.getpid()}.part")
    part.write_text(done.stdout, encoding="utf-8")
    os.replace(part, kept)  # never half-written
    return done.stdout


def assert_red_untouched(returncode: int | None, screen: str, todos: list[str]) -> None:
    """The check on an untouched starter: red, one line per TODO in course order, Next the first."""
    assert returncode not in (0, None), screen
    assert todo_lines(screen) == todos, screen  # every TODO, in course order
    assert re.search(rf"^Next: TODO\({re.escape(todos[0])}\)", screen, re.M), screen


def assert_green_caught_up(returncode: int | None, screen: str, required: list[str]) -> None:
    """The check on a caught-up starter: green, no failure or warning, every required TODO done."""
    assert returncode == 0, screen
    assert not re.search(r"\d+ failed|warning", screen, re.I), screen
    assert f"{len(required)} of {len(required)} required TODOs done" in screen, screen


# the step whose loop runs end to end in children: the first, whose quick runs cost a cold run
# (CI) the least; grader/tests/test_predictions.py reads the reference's quick run this test keeps
END_TO_END = STEPS[0].name
# one process runs both, so a cold run makes that reference quick run once (test_loop first)
KEPT_RUN = pytest.mark.xdist_group("loop-reference")


@pytest.mark.process
@pytest.mark.slow
@KEPT_RUN
def test_untouched_red_then_caught_up_green_and_the_run_matches_the_reference(tmp_path):
    """The README's commands in a clean clone, each in a child, for one step: the other steps'
    checks are test_each_steps_check_is_red_untouched_and_green_caught_up's."""
    step = END_TO_END
    repo = clean_clone(tmp_path)
    clone = run_files(repo)  # before any run: the files the reference's run depends on
    todos = list(at(repo / "steps" / step).regions())
    required = [t for t in todos if not optional(t)]

    untouched = student(repo, f"check-{step}")
    assert_red_untouched(untouched.returncode, untouched.stdout, todos)

    caught_up = student(repo, "catch-up", step)
    assert caught_up.returncode == 0, caught_up.stdout + caught_up.stderr
    check = student(repo, f"check-{step}")
    assert_green_caught_up(check.returncode, check.stdout, required)

    quick = ["--quick", "--out"]  # two output folders: neither run may resume the other's work
    mine = student(repo, step, *quick, str(tmp_path / "mine"), "--impl", "starter")
    reference = reference_quick(repo, step, clone, tmp_path / "reference")
    assert mine.returncode == 0, mine.stdout + mine.stderr
    assert f"{step} with your starter" in mine.stdout, mine.stdout
    assert tables(mine.stdout) and tables(mine.stdout) == tables(reference)


@pytest.mark.process
@pytest.mark.slow
@pytest.mark.parametrize(
    "step",
    [  # in the xdist process of the step's bugs below: its worker started once
        pytest.param(s.name, marks=pytest.mark.xdist_group(f"loop-worker:{s.name}"))
        for s in STEPS
        if s.name != END_TO_END
    ],
)
def test_each_steps_check_is_red_untouched_and_green_caught_up(step, worker):
    """Each step's check in the step's warm worker (a fork per copy), on the starter as shipped and
    caught up (the reference's files); catch-up, the run and the README's commands in a clean clone
    are test_untouched_red_then_caught_up_green_and_the_run_matches_the_reference's."""
    todos = list(course_step(step).regions())
    required = [t for t in todos if not optional(t)]
    tests = [f"steps/{step}/tests"]
    untouched = worker(step).run("untouched", starter_files(step), tests)
    assert_red_untouched(untouched.returncode, untouched.screen, todos)
    caught_up = worker(step).run("caught up", starter_files(step) | reference_files(step), tests)
    assert_green_caught_up(caught_up.returncode, caught_up.screen, required)


@pytest.mark.parametrize("step", [s.name for s in STEPS])
def test_hint_gives_four_levels_of_the_first_todo(step, tmp_path, capsys, monkeypatch):
    """In this process (the command itself runs in a child once, below)."""
    first = next(iter(course_step(step).regions()))
    monkeypatch.setattr(hint, "first_open", lambda step, regions: first)  # the untouched starter's
    shown = []
    for _ in range(4):
        hint.main([step, "--state", str(tmp_path / "hints.json")])
        shown.append(capsys.readouterr().out)
    assert four_levels(first, shown), "\n---\n".join(shown)


@pytest.mark.process
def test_hint_is_the_readmes_command_in_a_clean_clone(tmp_path):
    repo = clean_clone(tmp_path)
    step = STEPS[0].name
    first = next(iter(at(repo / "steps" / step).regions()))
    shown = [student(repo, "hint", step).stdout for _ in range(4)]
    assert four_levels(first, shown), "\n---\n".join(shown)


def four_levels(first: str, shown: list[str]) -> bool:
    """Four runs of the hint: four screens of the first TODO, each showing one level more (the
    earlier above it); the fourth, used up, says how to see the reference lines."""
    levels = [
        f"hint {n} of 3" in out and f"hint {n + 1} of 3" not in out
        for n, out in enumerate(shown[:3], 1)
    ]
    return (
        all(f"TODO({first})" in out for out in shown)
        and len(set(shown)) == 4
        and all(levels)
        and "--solution" in shown[3]
    )


@functools.cache
def _bug(step: str, todo: str) -> tuple[str, int, str, str] | None:
    """(module, line, statement, mutant): the first mutant inside the TODO the suite kills, a
    slip (kind 0) before a number or a deleted line; mutants are made only until a slip is found."""
    regions = course_step(step).regions()[todo]
    found = []
    for region in regions.regions:
        lines = Path(regions.file).read_text(encoding="utf-8").splitlines()
        end = next(n for n in range(region.line, len(lines)) if lines[n].strip() == END) + 1
        for mutant, _ in mutants(step, regions.module, range(region.line + 1, end)):
            if mutant.before.endswith(":"):
                continue  # a compound statement's header
            if _statement(
                lines[mutant.line - 1]
            ) == mutant.before and mutant.key not in equivalents(step):
                found.append((regions.module, mutant.line, mutant.before, mutant.after))
                if _kind(mutant.before, mutant.after) == 0:
                    return found[-1]  # the first slip: the one min() below would pick
    return min(found, key=lambda bug: _kind(bug[2], bug[3]), default=None)


def _kind(before: str, after: str) -> int:
    """0: an operator, call or index changed (a slip); 1: only a number; 2: the line deleted."""
    numbers = re.compile(r"-?\d+(\.\d+)?")
    return 2 if after == "pass" else int(numbers.sub("N", before) == numbers.sub("N", after))


def _statement(line: str) -> str | None:
    """A source line as tools.mutate writes a statement (no comment); None if it is not one."""
    try:
        return ast.unparse(ast.parse(line.strip()))
    except SyntaxError:
        return None


# the required TODOs: a bug in optional work must not turn the check red (the check says so)
SLIPS = [(s.name, t) for s in STEPS for t in s.regions() if not optional(t)]


def _slipped(step: str, todo: str) -> tuple[str, dict[str, str]]:
    """(`before => after at file:line`, the caught-up starter's files with that slip written)."""
    bug = _bug(step, todo)
    assert bug, f"no one-line mutant of tools.mutate falls inside TODO({todo})"
    module, line, before, after = bug
    files = starter_files(step) | reference_files(step)
    rel = module.replace(".", "/") + ".py"
    lines = files[rel].splitlines(keepends=True)
    indent = lines[line - 1][: len(lines[line - 1]) - len(lines[line - 1].lstrip())]
    lines[line - 1] = f"{indent}{after}\n"  # the student's slip: `before` written as `after`
    return f"{before} => {after} at {rel}:{line}", files | {rel: "".join(lines)}


def _not_named(todo: str, bug: str, returncode: int | None, screen: str) -> str:
    """'' when the check is red, marks the TODO written but failing and names it Next; else why."""
    if returncode in (0, None):
        return f"{bug}: expected a red check, got exit {returncode}:\n{screen}"
    if not re.search(rf"^\[!\] TODO\({re.escape(todo)}\): written", screen, re.M):
        return f"{bug}: expected a line [!] TODO({todo}): written, got:\n{screen}"
    if not re.search(rf"^Next: TODO\({re.escape(todo)}\) at ", screen, re.M):
        return f"{bug}: expected Next: TODO({todo}) at ..., got:\n{screen}"
    return ""


@pytest.mark.process
@pytest.mark.slow
def test_a_bug_in_a_todo_makes_the_students_check_name_it_end_to_end(tmp_path):
    step, todo = SLIPS[0]  # one bug as the student meets it: their files, the check's command
    bug, files = _slipped(step, todo)
    repo = clean_clone(tmp_path)
    starter = repo / "steps" / step / "starter"
    for rel, text in files.items():
        (starter / rel).write_text(text, encoding="utf-8")
    check = student(repo, f"check-{step}")
    assert not (why := _not_named(todo, bug, check.returncode, check.stdout)), why
    # the one copy with the whole-run tests (the copies below leave them out): their failures wait
    held = r"^(1 test of a whole run|\d+ tests of whole runs) .* held back until "
    held += rf".*TODO\({re.escape(todo)}\)"
    assert re.search(held, check.stdout, re.M), (
        f"{bug}: expected whole runs held back:\n{check.stdout}"
    )


_LOOP_WORKERS: dict[str, Worker] = {}  # step -> its worker, for every module of this process


@pytest.fixture(scope="module")
def worker(request):
    """A step's grading worker (torch imported once, a fork per copy), uncontained: course code.
    One per step and process, kept to the run's end: grader/tests/test_first_screens.py shares lab-02's."""

    def get(step: str) -> Worker:
        if step not in _LOOP_WORKERS:
            # three times the check's per-test CPU limit: a whole run (step-05's quick run
            # twice) beside 3 more xdist processes on 2 cores once took more than TIMEOUT
            _LOOP_WORKERS[step] = Worker(step, Limits(), 3 * TIMEOUT)
            request.config.add_cleanup(_LOOP_WORKERS[step].close)
        _LOOP_WORKERS[step].begin()  # each copy gets a whole submission's time budget
        return _LOOP_WORKERS[step]

    with pytest.MonkeyPatch.context() as patch:  # a worker starts (again) only in this context
        patch.setattr(sandbox, "mode", lambda: sandbox.Mode("none", sandbox.UNCONTAINED))
        yield get


@pytest.mark.process
@pytest.mark.slow
@pytest.mark.parametrize(
    ("step", "todo"),
    [  # one step's bugs in one xdist process: its worker started once
        pytest.param(s, t, id=t, marks=pytest.mark.xdist_group(f"loop-worker:{s}"))
        for s, t in SLIPS[1:]
    ],
)
def test_a_bug_in_each_todo_makes_the_check_name_it(step, todo, worker):
    bug, files = _slipped(step, todo)
    # the check without its whole-run tests: a TODO's own failing tests name it (the end-to-end
    # case above runs them and sees their failures held back while the TODO's fail); a bug only a
    # whole run sees (step-04's smoothing_weights: its handout) is checked again with them
    tests = [f"steps/{step}/tests"]
    run = worker(step).run(todo, files, tests, ["-m", "not whole_run"])
    if run.returncode == 0:
        run = worker(step).run(todo, files, tests, ["-m", "not (slow and whole_run)"])
    assert not (why := _not_named(todo, bug, run.returncode, run.screen)), why
