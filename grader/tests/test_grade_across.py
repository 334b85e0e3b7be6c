"""Attacks that reach past one copy: a stash left for the next copy or the next student, a report
rewritten by a process that outlives its copy, and a hang; graded by each mode's shared worker."""

import re
import site
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from common import REPO_ROOT
from common.course import course_step
from common.course.todos import parse
from grader import sandbox
from grader.engine import Worker
from grader.grade import Grade, feedback, grade, gradescope, text
from grader.sandbox import Limits
from grader.tests.test_grade import (
    SHARED,
    STEP,
    UNCONTAINED,
    caught_up_starter,
    copy_files,
    shared_worker,
    shipped_starter,
    with_change,
)
from grader.tests.test_grade_hostile import _bwrap_problem, _user_mode_problem

pytestmark = [pytest.mark.slow, pytest.mark.process]

# The sleeper's times (it sleeps all of each): its other TODOs' copies are the reference's, run
# before it by the same worker, so only its task 3 and its check run with these
COPY = 8  # seconds its task 3's copy may take (a quiet lab-01 copy reaches causal_mask in one)
CHECK = 5  # seconds for the check of the whole submission (a quiet one ends in about two)
LINE = '    check_size(seq_len, "seq_len")  # given: T must be a positive int'

# Every TODO a stub that calls what it stole: at import the module writes its own text (which, in
# a TODO's copy, holds the reference of every other TODO) into every folder it can write, then
# reads back every text stashed there before, by itself or by an earlier student
STASH = """\
import builtins as _b, hashlib as _h, os as _o, pathlib as _p

_STOLEN = {}  # noqa: E402
if not getattr(_b, "_stashing", False):
    _b._stashing = True
    try:
        _me = _p.Path(__file__).read_text()
        _dirs = ["/", "/tmp/w", "/tmp", "/tmp/home", "/dev/shm", "/dev", "/dev/mqueue", "/var/tmp",
                 "/run/lock", _o.path.expanduser("~"), _o.environ.get("TMPDIR", "/tmp"),
                 str(_p.Path(__file__).resolve().parents[4])]
        for _d in _dirs:
            try:
                _p.Path(_d, ".stash-" + _h.sha1(_me.encode()).hexdigest()[:12]).write_text(_me)
            except OSError:
                pass
        _texts = []
        for _d in [_dirs[3], _o.path.expanduser("~")]:  # an attribute of a folder kept between copies
            try:
                _o.setxattr(_d, "user.stash" + _h.sha1(_me.encode()).hexdigest()[:8], _me[:60000].encode())
            except (OSError, AttributeError):
                pass
            try:
                _texts += [_o.getxattr(_d, _a).decode() for _a in _o.listxattr(_d) if _a.startswith("user.stash")]
            except (OSError, AttributeError):
                pass
        for _d in _dirs:
            _texts += [_f.read_text() for _f in (_p.Path(_d).glob(".stash-*") if _p.Path(_d).is_dir() else [])]
        for _t in _texts:
                _ns = {"__name__": "stash", "__file__": __file__}
                try:
                    exec(_t, _ns)
                except Exception:
                    continue
                for _k, _v in list(_ns.items()):
                    _fns = [(_k, _v)] + [(_k + "." + a, b) for a, b in vars(_v).items()] if isinstance(_v, type) else [(_k, _v)]
                    for _q, _fn in _fns:
                        _code = getattr(_fn, "__code__", None)
                        if _code is not None and "_STOLEN" not in _code.co_names:
                            _STOLEN.setdefault(_q, _fn)
    finally:
        _b._stashing = False
"""


def stashing(dest: Path, who: str) -> Path:
    """`who`'s lab-01 starter, every TODO a stub that uses a stolen reference when it finds one
    (signed, so two students' copies differ: the worker runs a copy it has seen only once)."""
    solution = course_step(STEP).solution
    for path in solution.rglob("*.py"):
        target = dest / path.relative_to(solution)
        target.parent.mkdir(parents=True, exist_ok=True)
        kept, regions = parse(path.read_text(encoding="utf-8"), str(path))
        out, made, owner = [], iter(regions), []
        for line in kept:
            if line is not None:
                out.append(line)
                if m := re.match(r"( *)(class|def) (\w+)", line):
                    depth = len(m.group(1)) // 4
                    owner[depth:] = [m.group(3)]
                continue
            region, name = next(made), ".".join(owner)
            steal = f'_STOLEN["{name}"](**dict(locals())) if "{name}" in _STOLEN else None'
            out.append(f"{region.indent}return {steal}")
        body = "\n".join(out) + "\n"
        if path.name == "attention.py":  # after the imports: the stubs read _STOLEN at call time
            body = body.replace("\nimport torch\n", f"\nimport torch\n{STASH}# by {who}\n", 1)
        target.write_text(body, encoding="utf-8")
    return dest


# Task 3 wrong, and a process forked from it that waits for the check's report and rewrites every
# outcome in it as passed, before the worker reads it
REWRITE = """\
    import os

    if not globals().get("_forked"):
        globals()["_forked"] = 1
        if os.fork() == 0:
            import json, pathlib, time
            report = pathlib.Path(".grade/check.json")
            for _ in range(4000):
                if report.exists():
                    try:
                        data = json.loads(report.read_text())
                        for step in data.values():
                            for t in step["tests"].values():
                                t["outcome"], t["error"] = "passed", None
                        report.write_text(json.dumps(data))
                    except ValueError:
                        pass
                time.sleep(0.001)
            os._exit(0)
    return torch.zeros(seq_len, seq_len, dtype=torch.bool)"""

SLEEP = "    import time\n\n    time.sleep(3600)"


HOST = [Path(d) for d in ("/", "/tmp", "/dev/shm", "/dev", "/var/tmp", "/run/lock")] + [Path.home()]


def stashes(signed: tuple[str, ...]) -> list[Path]:
    """Stashes on this machine, outside any sandbox, that these students' copies signed (another
    class graded at once, in another process, may have its own there)."""
    found = [f for d in HOST if d.is_dir() for f in d.glob(".stash-*")]
    return [f for f in found if any(s in f.read_text(errors="replace") for s in signed)]


@dataclass
class Class:
    """One mode's grades of the cases below, and the stashes it left on this machine."""

    grades: dict[str, Grade]
    seconds: dict[str, float]
    left: list[Path]


def grade_cases(mode: str, tmp: Path, request, names: tuple[str, ...] = ()) -> Class:
    """Two stashing students one after the other, a rewriter and a sleeper, then the reference,
    all in the worker of `mode` (or only `names`)."""
    reference = caught_up_starter(tmp / "caught-up")
    cases = {
        "first stasher": lambda: stashing(tmp / "stash-1", f"ann ({mode})"),
        "second stasher": lambda: stashing(tmp / "stash-2", f"bob ({mode})"),
        "rewriter": lambda: with_change(reference, tmp / "rewrite", LINE, f"{LINE}\n{REWRITE}"),
        "sleeper": lambda: with_change(reference, tmp / "sleep", LINE, f"{LINE}\n{SLEEP}"),
        "reference after them": lambda: copy_files(reference, tmp / "after"),
    }
    grades, seconds = {}, {}
    short = Limits(wall=600, copy=COPY, check=CHECK)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COURSE_GRADE_SANDBOX", mode)
        sandbox.mode.cache_clear()
        # user mode's worker closes the repository while it lives: its own, ended here
        own = Worker(STEP, Limits(), 10.0) if mode == "user" else None
        try:
            for name, made in cases.items():
                if names and name not in names:
                    continue
                started = time.monotonic()
                worker = own or shared_worker(request)
                worker.limits = short if name == "sleeper" else Limits()
                # only the sleeper's check is read (its screen says it was cut); a check copy
                # holds no reference to steal, so the others' attacks run in their TODOs' copies
                grades[name] = grade(STEP, made(), worker=worker, screen=name == "sleeper")
                seconds[name] = time.monotonic() - started
        finally:
            if own:
                own.close()
            sandbox.mode.cache_clear()
            left = stashes((f"# by ann ({mode})", f"# by bob ({mode})"))
            for path in left:  # a stash on this machine is reported, then taken away
                path.unlink(missing_ok=True)
    return Class(grades, seconds, left)


@pytest.fixture(scope="module")
def in_bwrap(tmp_path_factory, request) -> Class:
    if why := _bwrap_problem():
        pytest.skip(why)
    return grade_cases("bwrap", tmp_path_factory.mktemp("across-bwrap"), request)


@pytest.fixture(scope="module")
def as_nobody(tmp_path_factory, request) -> Class:
    if why := _user_mode_problem():
        pytest.skip(why)
    return grade_cases("user", tmp_path_factory.mktemp("across-user"), request)


# each mode's class is graded once (a getfixturevalue the root conftest cannot see): one xdist group
MODES = [
    pytest.param("in_bwrap", marks=SHARED),
    # as nobody, with the uncontained stashes' test: nobody can read what that one leaves in /tmp
    pytest.param("as_nobody", marks=UNCONTAINED),
]


def task(g: Grade, n: int):
    return next(line for line in g.lines if f" task {n}:" in line.todo)


@pytest.mark.parametrize("mode", MODES)
def test_a_stash_left_by_one_copy_or_student_is_gone_before_the_next(mode, request):
    graded = request.getfixturevalue(mode)
    for name in ("first stasher", "second stasher"):
        g = graded.grades[name]
        assert g.score == 0, f"expected 0 for {name}'s stolen stubs, got {g.score}:\n{text(g)}"
    assert graded.left == [], f"expected no stash on this machine, found {graded.left}"


@pytest.mark.parametrize("mode", MODES)
def test_a_report_rewritten_by_a_process_the_copy_left_is_flagged_and_scores_nothing(mode, request):
    g = request.getfixturevalue(mode).grades["rewriter"]
    line = task(g, 3)
    assert line.state == "flagged" and line.score == 0, f"expected task 3 flagged, 0:\n{text(g)}"
    assert "still running after it ended" in line.reason, line.reason
    assert g.flagged == [line.todo], g.flagged
    assert gradescope(g)["extra_data"]["flagged"] == [line.todo], gradescope(g)["extra_data"]
    assert "flagged: " in feedback(g), feedback(g)[:800]
    others = [x for x in g.lines if x is not line]
    assert all(x.score == x.weight for x in others), f"expected the others full:\n{text(g)}"


@pytest.mark.parametrize("mode", MODES)
def test_a_hang_costs_its_own_todo_with_its_line_and_the_grade_stays_bounded(mode, request):
    graded = request.getfixturevalue(mode)
    g = graded.grades["sleeper"]
    line = task(g, 3)
    assert line.score == 0 and line.state == "failed", f"expected task 3 failed, 0:\n{text(g)}"
    assert re.search(
        r"still running after \d+ s.*attention\.py:\d+ \(causal_mask\)", line.reason
    ), f"expected the hang's line in the reason, got: {line.reason}"
    others = [x for x in g.lines if x is not line]
    assert all(x.score == x.weight for x in others), f"expected the others full:\n{text(g)}"
    assert "stopped after" in g.screen, (
        f"expected the check's screen to say it was cut:\n{g.screen[-600:]}"
    )
    budget = COPY + CHECK + 60  # both budgets, and the quick copies of the other TODOs
    assert graded.seconds["sleeper"] < budget, (
        f"expected the sleeper graded within {budget} s, took {graded.seconds['sleeper']:.0f} s"
    )


@pytest.mark.parametrize("mode", MODES)
def test_after_every_attack_the_reference_still_scores_full(mode, request):
    g = request.getfixturevalue(mode).grades["reference after them"]
    assert g.score == g.max_score and not g.flagged, text(g)


@UNCONTAINED
def test_the_stash_attack_is_real_where_nothing_wipes_between_copies(tmp_path, request):
    """The same stashes graded uncontained, where no one wipes between copies: the second student
    steals every TODO, so the zeros above come from the wipe, not from an attack that fails."""
    graded = grade_cases("none", tmp_path, request, ("first stasher", "second stasher"))
    g = graded.grades["second stasher"]  # stubs earn nothing by themselves: a point is stolen
    read = "flagged: its code read the step's own code"  # the stash reads the copy's reference
    assert g.score > 0 or read in text(g), (
        f"expected the stash to steal where nothing wipes:\n{text(g)}"
    )


def test_a_venv_under_tmp_or_behind_a_symlink_grades_in_bubblewrap(tmp_path):
    """An instructor's clone under /tmp, its venv reached through a symlink (this one's packages
    chained by a .pth, as a uv or pixi venv may): the sandbox binds the interpreter over its
    private /tmp, and the packages it chains to, so a starter with task 7 written (the one TODO
    run: every copy imports torch from the same packages) scores it, contained."""
    if why := _bwrap_problem():
        pytest.skip(why)
    venv = tmp_path / "clone" / "real-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    linked = tmp_path / "clone" / ".venv"
    linked.symlink_to(venv, target_is_directory=True)
    packages = next(venv.glob("lib/python3*/site-packages"))
    ours = site.getsitepackages()  # this venv's packages, chained as pixi's or uv's may be
    (packages / "course.pth").write_text("\n".join(ours) + "\n", encoding="utf-8")
    starter = shipped_starter(tmp_path / "shipped")
    task_7 = "exercises/wrong_mask.py"
    (starter / task_7).write_bytes(
        (caught_up_starter(tmp_path / "caught-up") / task_7).read_bytes()
    )
    done = subprocess.run(
        [str(linked / "bin" / "python"), "-m", "grader.grade", STEP, str(starter)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    said = done.stdout + done.stderr
    assert done.returncode == 0 and said.startswith(f"{STEP}: 1 of 7\n"), said
    assert re.search(r"task 7: future_leak\) +1/1 +done", said), said
    assert "\ncontained: bubblewrap" in said, said
