"""grader.grade: each TODO graded on its own tests, in a copy where every other TODO is the
reference's. One worker per containment mode grades every submission of the run in turn, as
`--class` does (shared_worker): a copy two submissions share is run once."""

import ast
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from common import REPO_ROOT
from common.catchup import catch_up
from common.course import course_step
from common.course.todos import raised_todos
from grader import engine, sandbox
from grader import grade as grading
from grader.engine import SHOWN, Worker, scrub, stubbed, withholding
from grader.grade import Grade, grade, gradescope, hung_at, main, text
from grader.sandbox import Limits
from grader.variants import read_tree, variant
from tools import pristine, screens

STEP = "lab-01"
PER_TEST = 2.0  # CPU seconds per test: the reference's slowest lab-01 test needs far less
_WORKERS: dict[tuple[str, str], Worker] = {}
# the tests that grade with the bwrap (or default) worker of lab-01: one process, one worker
SHARED = pytest.mark.xdist_group("grade-worker:lab-01")
UNCONTAINED = pytest.mark.xdist_group("grade-worker:lab-01:none")  # COURSE_GRADE_SANDBOX=none's


def shared_worker(request, limits: Limits | None = None, step: str = STEP) -> Worker:
    """This process's worker of `step` in the current containment mode, started once for the run
    (user mode's lives as long as `request`: it closes the repository while it runs)."""
    key = (step, sandbox.mode().name)
    if key not in _WORKERS or key[1] == "user":
        _WORKERS[key] = Worker(step, Limits(), 10.0)  # the check's own limit: a loaded CI is no bug
        user = key[1] == "user"
        (request.addfinalizer if user else request.config.add_cleanup)(_WORKERS[key].close)
    _WORKERS[key].limits = limits or Limits()
    return _WORKERS[key]


def shipped_starter(dest: Path) -> Path:
    """A lab-01 starter as shipped (made from the solution, whatever the student did to theirs)."""
    return pristine([STEP], dest) / STEP / "starter"


def caught_up_starter(dest: Path, name: str = STEP) -> Path:
    """A caught-up student's starter: common.catchup run on a copy of the step (lab-01)."""
    step = pristine([name], dest) / name
    catch_up(step)
    return step / "starter"


def copy_files(starter: Path, dest: Path, flat: bool = False) -> Path:
    """The starter's files under `dest` (flat: every file at the top, as a drag-and-drop upload)."""
    for path in starter.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            target = dest / (path.name if flat else path.relative_to(starter))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    return dest


def with_change(starter: Path, dest: Path, old: str, new: str, file: str = "attention.py") -> Path:
    """A copy of `starter` with `old` replaced once by `new` in `file` (a submission)."""
    copy_files(starter, dest)
    target = dest / file
    code = target.read_text(encoding="utf-8")
    assert code.count(old) == 1, old
    target.write_text(code.replace(old, new), encoding="utf-8")
    return dest


def returning_none(dest: Path) -> Path:
    """A submission whose every TODO is `return None` (stubs that run, and earn nothing)."""
    solution = course_step(STEP).solution
    for path in solution.rglob("*.py"):
        target = dest / path.relative_to(solution)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(stubbed(path.read_text(encoding="utf-8"), str(path)), encoding="utf-8")
    return dest


# One bug per TODO: the handout's first curated bug where it has one, else a one-line slip
FIRST_BUG = {
    screens.task(b): ("attention.py", b.old, b.new) for b in reversed(screens.bugs().values())
}
FIRST_BUG["task 5"] = ("attention.py", "k = self.key(x)  #", "k = self.query(x)  #")
FIRST_BUG["task 7"] = (
    "exercises/wrong_mask.py",
    "leaked = above[above != 0]  #",
    "leaked = above  #",
)
TASKS = [f"task {n}" for n in range(1, 8)]
OPEN_FILE = (
    "\nimport torch\n\n_NULL = open(torch.__file__).read()  # never closed: a ResourceWarning\n"
)


def zipped(folder: Path, dest: Path, inside: str) -> Path:
    """`folder`'s files in a zip under the folder `inside`/, with a __MACOSX twin, as macOS zips."""
    with zipfile.ZipFile(dest, "w") as z:
        for path in folder.rglob("*"):
            if path.is_file():
                z.write(path, f"{inside}/{path.relative_to(folder).as_posix()}")
                z.writestr(f"__MACOSX/{inside}/._{path.name}", b"\x00\x05")
    return dest


@pytest.fixture(scope="module")
def graded(tmp_path_factory, request) -> dict[str, Grade]:
    """Every case of this file, graded by the shared worker: name -> Grade."""
    tmp = tmp_path_factory.mktemp("class")
    reference = caught_up_starter(tmp / "caught-up")
    cases = {
        "untouched": shipped_starter(tmp / "shipped"),
        "reference": reference,
        "none": returning_none(tmp / "none"),
        "flat": copy_files(reference, tmp / "flat", flat=True),
        "nested": zipped(reference, tmp / "nested.zip", "alice/steps/lab-01/starter"),
        "missing": copy_files(reference, tmp / "missing"),
    }
    (cases["missing"] / "exercises" / "wrong_mask.py").unlink()
    cases["file left open"] = with_change(reference, tmp / "open", "\nimport torch\n", OPEN_FILE)
    for task, (file, old, new) in FIRST_BUG.items():
        cases[task] = with_change(reference, tmp / task.replace(" ", "-"), old, new, file)
    worker = shared_worker(request)
    shown = ("reference", "file left open")
    return {n: grade(STEP, p, worker=worker, screen=n in shown) for n, p in cases.items()}


def scores(g: Grade) -> dict[str, float]:
    """'task 1' -> its score."""
    return {line.todo.split(":")[0].removeprefix(f"{STEP} "): line.score for line in g.lines}


@pytest.mark.process
@pytest.mark.slow
@SHARED
class TestAClass:
    """The cases above, graded once by the shared worker."""

    def test_the_untouched_starter_and_stubs_that_return_none_earn_nothing(self, graded):
        for case in ("untouched", "none"):
            g = graded[case]
            assert g.score == 0 and g.max_score == 7, text(g)
            assert all(line.state == "not written" for line in g.lines), text(g)
        assert all("only returns None" in line.reason for line in graded["none"].lines)

    def test_the_reference_scores_full_and_its_screen_has_no_false_failure(self, graded):
        g = graded["reference"]
        assert g.score == 7 and all(line.state == "done" for line in g.lines), text(g)
        assert "Every required TODO is done." in g.screen and " failed" not in g.screen, g.screen
        assert "holds no reference solution" not in g.screen, g.screen

    @pytest.mark.parametrize("task", TASKS)
    def test_a_bug_costs_only_the_todo_it_is_in(self, graded, task):
        g = graded[task]
        assert scores(g) == {t: (scores(g)[task] if t == task else 1.0) for t in TASKS}, text(g)
        assert scores(g)[task] < 1, text(g)
        line = next(line for line in g.lines if f" {task}:" in line.todo)
        reason = line.reason.removeprefix("[uncontained] ")  # where nothing contains the grade
        said = rf"{line.passed} of its {line.total} tests pass( \(\d+ core tests? failing: at most half its weight\))?; first failure: "
        assert re.match(said, reason), f"expected /{said}/, got {reason}"
        capped = line.score < round(line.passed / line.total, 4)  # a core test fails: half at most
        assert capped == ("at most half" in reason), f"capped {capped}: {reason}"
        assert "assert False" not in line.reason, line.reason

    def test_keys_made_by_the_query_map_leave_task_5_at_most_half(self, graded):
        """Task 5's named trap (FIRST_BUG's): every shape test passes, its parity (core) fails."""
        line = next(line for line in graded["task 5"].lines if " task 5:" in line.todo)
        assert line.passed > line.total / 2, f"expected most tests passing, got {line.reason}"
        assert line.score <= 0.5, f"expected at most 0.5 of 1, got {line.score}: {line.reason}"
        assert "test_self_attention_is_sdpa_of_its_projections" in line.reason, line.reason

    def test_a_file_left_open_at_import_costs_no_todo_and_the_screen_shows_it(self, graded):
        """Its warning comes in whichever test runs when the file is collected: in every copy."""
        g = graded["file left open"]
        assert g.score == 7 and all(line.state == "done" for line in g.lines), text(g)
        assert "PytestUnraisableExceptionWarning" in g.screen, g.screen

    def test_uploads_without_their_folder_or_zipped_in_a_folder_score_full(self, graded):
        for case in ("flat", "nested"):
            g = graded[case]
            assert g.score == 7 and g.missing == [], text(g)
        assert g.stray == [], g.stray  # macOS's __MACOSX twins are not the student's files

    def test_a_missing_file_costs_its_todo_only_and_is_named(self, graded):
        g = graded["missing"]
        assert scores(g) == {t: 0.0 if t == "task 7" else 1.0 for t in TASKS}, text(g)
        assert g.missing == ["exercises/wrong_mask.py"], g.missing
        assert "the submission has no exercises/wrong_mask.py" in g.lines[-1].reason
        assert "missing from the submission: exercises/wrong_mask.py" in text(g)


@pytest.mark.process
def test_gradescope_results_and_the_class_csv_say_why_a_submission_could_not_be_graded(
    tmp_path, capsys
):
    """A zip without the starter's files and a file that is no zip score 0, each with its one
    line, in results.json and in the class's CSV (with a reason column per TODO)."""
    (tmp_path / "class" / "empty").mkdir(parents=True)
    (tmp_path / "class" / "notes.zip").write_bytes(b"not a zip")
    # --allow-uncontained: the grade still runs where nothing contains it (empty submissions)
    assert (
        main([STEP, "--class", str(tmp_path / "class"), "--jobs", "2", "--allow-uncontained"]) == 0
    )
    rows = capsys.readouterr().out.splitlines()
    header = rows[0].split(",")
    assert header[:4] == ["student", "score", "max_score", "lab-01 task 1: stable_softmax"], rows
    assert "lab-01 task 1: stable_softmax reason" in header and "contained" in header, header
    assert rows[1].startswith("empty,0,7,0,") and "none of the starter's files" in rows[1], rows
    assert rows[2].startswith("notes,0,7,0,") and "neither a folder nor a zip" in rows[2], rows
    assert (tmp_path / "class-feedback" / "empty.txt").is_file()
    out = tmp_path / "results.json"
    args = [STEP, str(tmp_path / "class" / "empty"), "--format", "gradescope", "--out", str(out)]
    args.append("--allow-uncontained")
    assert main(args) == 0
    results = json.loads(out.read_text(encoding="utf-8"))
    assert results["score"] == 0 and len(results["tests"]) == 7
    assert all("none of the starter's files" in t["output"] for t in results["tests"])
    assert gradescope(grade(STEP, tmp_path / "class" / "empty"))["tests"][0]["max_score"] == 1


@pytest.mark.process  # the class probes the sandbox's mode (bwrap), where no test did before
def test_a_class_writes_each_student_a_feedback_file_whatever_their_names(tmp_path, capsys):
    """A name too long for a file once its control characters are escaped, and a folder and a zip
    of one name: every student gets a row and a file of their own (the class once ended here)."""
    klass = tmp_path / "class"
    (klass / "alice").mkdir(parents=True)
    (klass / ("z\x01" * 70)).mkdir()
    with zipfile.ZipFile(klass / "alice.zip", "w") as z:
        z.writestr("notes.txt", "no starter file")
    assert main([STEP, "--class", str(klass), "--allow-uncontained"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 3, rows
    files = sorted(p.name for p in (tmp_path / "class-feedback").iterdir())
    assert len(files) == 3 and {"alice.txt", "alice-2.txt"} <= set(files), files
    assert all(len(name.encode()) < 255 for name in files), files


def test_a_class_says_each_student_as_they_finish_and_puts_its_folders_modes_back(
    tmp_path, monkeypatch, capsys
):
    """A line per student as their grade ends (3/16 ...), not all at the end; user mode closes
    the class folder and its feedback folder while it grades (nobody runs the code), then puts
    the class folder back; the feedback folder stays yours alone (a later grade's copies run as
    nobody). Empty submissions: graded at once, no copy runs."""
    folders = [tmp_path / "class", tmp_path / "class-feedback"]
    for folder in [*folders, folders[0] / "alice", folders[0] / "bob"]:
        folder.mkdir(exist_ok=True)
    for folder in folders:
        folder.chmod(0o755)
    user = sandbox.Mode("user", "contained: as the unprivileged user nobody")
    monkeypatch.setattr(grading, "mode", lambda: user)
    began = []  # what the class had said when each student's grade began

    def grade_(step, entry, *args, **kwargs):
        began.append(capsys.readouterr().err)
        return grade(step, entry, *args, **kwargs)

    monkeypatch.setattr(grading, "grade", grade_)
    assert main([STEP, "--class", str(folders[0])]) == 0
    said = "".join(began) + capsys.readouterr().err
    assert "1/2 graded alice: 0/7" in began[1], began  # before bob's grade began
    assert "2/2 graded bob: 0/7" in said, said
    modes = {f.name: oct(f.stat().st_mode & 0o777) for f in folders}
    assert modes == {"class": "0o755", "class-feedback": "0o700"}, modes  # feedback: yours alone


TINY = REPO_ROOT / "tests" / "fixtures" / "tiny_step" / "steps"  # the course's fixture
STEP_TOML = 'title = "Tiny"\ntopic = "two TODOs"\norder = 1\nstarts_from = ""\n'
STEP_TOML += 'todo_modules = ["calc"]\nlecture_words = 100\n'
HELD_OUT = """import pytest

from common.loader import load


@pytest.mark.todo("task 1")
def test_double_of_a_negative(impl):
    assert load("step-97", "calc", impl).double(-4) == -8
"""


HONEST = "def double(x):\n    return x + x if x > 0 else 0\n\n\ndef halve(x):\n    return x // 2\n"


def run_tiny(
    tmp: Path, *args: str, grade_toml: str = "", env=None, program=("-m", "grader.grade")
) -> subprocess.CompletedProcess:
    """`python -m grader.grade step-97 ARGS` (or `python PROGRAM step-97 ARGS`) on the tiny
    fixture step (torch-free), in a child (`env`: more of its environment); exit 0 expected."""
    steps = shutil.copytree(TINY, tmp / "steps", dirs_exist_ok=True)
    (steps / "step-97" / "step.toml").write_text(STEP_TOML + grade_toml, encoding="utf-8")
    env = os.environ | {"COURSE_STEPS_DIR": str(steps)} | (env or {})
    cmd = [sys.executable, *program, "step-97", *args]
    cmd.append("--allow-uncontained")  # a machine without containment grades it too
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def grade_tiny(tmp: Path, *args: str, grade_toml: str = "") -> str:
    """run_tiny on a submission whose double() is wrong for negative numbers only: its stdout."""
    (tmp / "sub").mkdir(exist_ok=True)
    (tmp / "sub" / "calc.py").write_text(HONEST, encoding="utf-8")
    done = run_tiny(tmp, str(tmp / "sub"), *args, grade_toml=grade_toml)
    return done.stdout.replace("[uncontained] ", "")  # the reasons as a contained grade gives them


def tiny_class(tmp: Path, students: dict[str, str], *args: str, env=None) -> dict[str, dict]:
    """run_tiny's `--class` of `students` (name -> their calc.py): each one's CSV row."""
    for name, code in students.items():
        (tmp / "class" / name).mkdir(parents=True, exist_ok=True)
        (tmp / "class" / name / "calc.py").write_text(code, encoding="utf-8")
    done = run_tiny(tmp, "--class", str(tmp / "class"), *args, env=env)
    return {row["student"]: row for row in csv.DictReader(io.StringIO(done.stdout))}


@pytest.mark.process
@pytest.mark.slow  # a grade of the tiny step: a worker's start
def test_held_out_tests_count_for_the_todo_their_marker_names_and_all_or_nothing_holds(tmp_path):
    """The held-out test fails: task 1 has 2 of its 3 tests, and all-or-nothing makes that 0. A
    held-out test the reference fails too counts for no TODO, and the instructor is told."""
    (tmp_path / "held").mkdir()
    (tmp_path / "held" / "test_negatives.py").write_text(HELD_OUT, encoding="utf-8")
    wrong = HELD_OUT.replace("negative", "wrong").replace("== -8", "== 8")  # the reference's -8
    (tmp_path / "held" / "test_wrong.py").write_text(wrong, encoding="utf-8")
    whole = '\n[grade]\nall_or_nothing = ["task 1"]\n'
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "calc.py").write_text(HONEST, encoding="utf-8")
    done = run_tiny(
        tmp_path, str(tmp_path / "sub"), "--tests", str(tmp_path / "held"), grade_toml=whole
    )
    said = done.stdout.replace("[uncontained] ", "")
    assert (
        "held-out tests the reference fails, counted for no TODO: test_double_of_a_wrong"
        in done.stderr
    ), done.stderr
    task1 = "TODO(step-97 task 1: double)      0/1  partial     2 of its 3 tests pass; first "
    assert f"{task1}failure: test_double_of_a_negative" in said, said
    assert "TODO(step-97 task 2: halve)       1/1  done" in said, said  # counted for task 1 only


LOGGED = """import os
import sys
from grader import engine, grade

real = engine.Worker.run


def run(self, name, files, tests, extra=(), held=False, **kw):
    os.write(2, f"copy: {'held-out' if held else 'seen'} {name}\\n".encode())  # one line whole
    return real(self, name, files, tests, extra, held=held, **kw)


engine.Worker.run = run
sys.exit(grade.main(sys.argv[1:]))
"""


@pytest.mark.process
@pytest.mark.slow  # a class of the tiny step, two workers
def test_a_class_runs_held_out_tests_only_once_every_copy_a_student_reads_has_run(tmp_path):
    """A copy that ran beside held-out tests could leave them where a later copy finds them (a
    worker's memory, the page cache, a lock another job's copy sees): in a class of 4 graded 2 at
    a time, every held-out copy runs after the last copy whose text reaches a student, and the
    held-out tests still count."""
    (tmp_path / "held").mkdir()
    (tmp_path / "held" / "test_negatives.py").write_text(HELD_OUT, encoding="utf-8")
    right = HONEST.replace("x + x if x > 0 else 0", "2 * x")
    for n, code in enumerate([HONEST, right, HONEST, right]):
        (tmp_path / "class" / f"s{n}").mkdir(parents=True)
        (tmp_path / "class" / f"s{n}" / "calc.py").write_text(code, encoding="utf-8")
    args = ["--class", str(tmp_path / "class"), "--tests", str(tmp_path / "held"), "--jobs", "2"]
    done = run_tiny(tmp_path, *args, program=["-c", LOGGED])
    copies = [  # the students' (the reference's and stubs' runs only read the tests' owners)
        ln.split(": ", 1)[1]
        for ln in done.stderr.splitlines()
        if ln.startswith("copy: ") and not re.search("reference|stub", ln)
    ]
    seen = [i for i, c in enumerate(copies) if c.startswith("seen")]
    held = [i for i, c in enumerate(copies) if c.startswith("held-out")]
    assert len(held) == 4 and seen and max(seen) < min(held), copies  # task 1's, one per student
    said = done.stderr.splitlines()
    assert said.index("copy: " + copies[held[0]]) > max(
        i for i, ln in enumerate(said) if " graded s" in ln
    ), done.stderr  # each student's first pass said before any held-out copy ran
    rows = {row["student"]: row for row in csv.DictReader(io.StringIO(done.stdout))}
    scores = {name: row["step-97 task 1: double"] for name, row in rows.items()}
    assert scores == {"s0": "0.67", "s1": "1", "s2": "0.67", "s3": "1"}, scores


FAILS_HELD = """import sys
from grader import engine, grade

real = engine.Worker.run


def run(self, name, files, tests, extra=(), held=False, **kw):
    if name.endswith(" held-out"):  # a student's held-out copy, not the owners' reading
        raise RuntimeError("a fault of the grader's own")
    return real(self, name, files, tests, extra, held=held, **kw)


engine.Worker.run = run
sys.exit(grade.main(sys.argv[1:]))
"""


@pytest.mark.process
@pytest.mark.slow  # a class of the tiny step
def test_a_grader_fault_in_the_held_out_pass_costs_only_the_todos_it_left_ungraded(tmp_path):
    """A fault the submission could provoke in the held-out pass earns nothing there (not the
    visible tests' score), and costs no other TODO its first-pass line."""
    (tmp_path / "held").mkdir()
    (tmp_path / "held" / "test_negatives.py").write_text(HELD_OUT, encoding="utf-8")
    (tmp_path / "class" / "s0").mkdir(parents=True)
    (tmp_path / "class" / "s0" / "calc.py").write_text(HONEST, encoding="utf-8")
    args = ["--class", str(tmp_path / "class"), "--tests", str(tmp_path / "held")]
    done = run_tiny(tmp_path, *args, program=["-c", FAILS_HELD])
    (row,) = csv.DictReader(io.StringIO(done.stdout))
    assert (row["step-97 task 1: double"], row["step-97 task 2: halve"]) == ("0", "1"), row
    assert "held-out tests did not run: the grader failed" in row["step-97 task 1: double reason"]
    assert "held-out tests did not run" not in row["step-97 task 2: halve reason"], row
    assert "RuntimeError: a fault of the grader's own" in row["notes"], row


WARNS = "import warnings\n\nwarnings.warn('a warning at import', UserWarning)\n\n\n"
WARNS += "def double(x):\n    return 2 * x\n\n\ndef halve(x):\n    return x // 2\n"


@pytest.mark.process
@pytest.mark.slow  # a grade of the tiny step: a worker's start
def test_a_warning_at_import_costs_no_todo_and_the_checks_screen_shows_it(tmp_path):
    """pytest's filterwarnings=error makes it an error as the step's modules import, and the check
    sets the whole step aside: in every TODO's copy, so it would cost each TODO."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "calc.py").write_text(WARNS, encoding="utf-8")
    said = run_tiny(tmp_path, str(tmp_path / "sub"), "--screen").stdout
    assert said.startswith("step-97: 2 of 2"), said
    assert "calc.py:3 does not import: UserWarning: a warning at import" in said, said


def test_a_copy_swaps_every_other_todo_for_the_reference_and_keeps_the_students_helpers():
    """grader.variants, no run: the copy for task 3 keeps the student's causal_mask and helper,
    takes every other TODO from the reference, and a syntax slip in another TODO's function is
    mended there (charged to that TODO only)."""
    layout = course_step(STEP)
    reference, todos = read_tree(layout.solution), layout.regions()
    mine = read_tree(layout.starter)  # every TODO still raises NotImplementedError
    mine["attention.py"] += "\n\ndef my_helper():\n    return 41\n"
    first_raise = "    raise NotImplementedError("  # task 1's, the first in the file
    mine["attention.py"] = mine["attention.py"].replace(
        first_raise, "    x = (((\n" + first_raise, 1
    )
    task3 = next(t for t in todos if " task 3:" in t)
    copy = variant(mine, reference, todos, task3)
    raised = [todo for todo, _, _ in raised_todos(copy["attention.py"])]
    assert raised == [task3], raised  # only task 3 is the student's (still a stub here)
    assert "def my_helper():" in copy["attention.py"] and "x = (((" not in copy["attention.py"]
    assert raised_todos(copy["exercises/wrong_mask.py"]) == []  # task 7: the reference's


def test_every_todos_copy_runs_the_code_the_starter_gives_as_the_reference_has_it():
    """Red team 24: lab-02's given `generate` rewritten to sample from Step 5's uncached model
    passed task 3d's tests with no cache written. Each TODO's copy takes every function the
    starter gives from the reference; the student's TODOs and helpers stay theirs."""
    layout = course_step("lab-02")
    files = read_tree(layout.solution)
    given = "    gpt5.check_sampling(max_new_tokens, temperature, generator)\n"  # generate's
    assert files["kvcache.py"].count(given) == 1
    files["kvcache.py"] = files["kvcache.py"].replace(
        given, given + "    return model.generate(idx, max_new_tokens, temperature, generator)\n"
    )
    files["kvcache.py"] += "\n\ndef my_helper():\n    return 41\n"
    made = engine._read_texts("lab-02", files, set(files), {})
    reference = read_tree(layout.solution)["kvcache.py"]
    for todo, texts in made.items():
        assert texts.why is None, (todo, texts.why)
        copy = texts.copy["kvcache.py"]
        assert _def_text(copy, "generate") == _def_text(reference, "generate"), todo
        assert "def my_helper():" in copy, todo


def _def_text(source: str, name: str) -> str:
    """The source of module-level function `name` in `source`."""
    node = next(n for n in ast.parse(source).body if getattr(n, "name", "") == name)
    return ast.get_source_segment(source, node)


def test_a_reason_never_quotes_another_todos_reference():
    """Task 3's copy holds task 1's reference: a message that quotes it is withheld, and any
    message is cut to what a reason may show."""
    todos = course_step(STEP).regions()
    task1, task3 = (next(t for t in todos if f" task {n}:" in t) for n in (1, 3))
    line = next(
        ln.split("#")[0].strip() for ln in todos[task1].regions[0].code if len(ln.strip()) > 20
    )
    assert "not shown" in scrub(f"AssertionError: see {line}", todos, task3)
    assert scrub(f"AssertionError: {line}", todos, task1) != ""  # its own code: shown
    assert len(scrub("x" * 1000, todos, task3)) == SHOWN
    # red team 16: a runaway line's places, read whole, took minutes (the pattern backtracks over
    # every start); it is cut before they are read, so this returns at once, cut
    runaway = "AssertionError: " + "a" * 500_000 + " attention.py:3"
    assert len(scrub(runaway, todos, task3, {"attention.py": {3: 4}})) == SHOWN


@pytest.mark.process
def test_a_worker_that_never_answers_is_killed_at_the_deadline_not_waited_for(tmp_path):
    """A copy can stop its worker (SIGSTOP): the grader's reads have a deadline, then it kills."""
    worker = Worker(STEP, Limits(wall=1), PER_TEST)
    try:
        worker.proc = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(600)"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        worker.grace = -5.5  # 0.5 s to answer: its 6 s, less the grace
        run = worker._run(
            "task 3", {"attention.py": ""}, {}, ["steps/lab-01/tests"], (), PER_TEST, 6
        )
        assert run.timed_out and run.report is None, run
        assert worker.proc.poll() is not None, "expected the silent worker killed, it still runs"
    finally:
        worker.close()


def test_a_secret_of_the_environment_is_withheld_and_a_path_that_exists_is_not(monkeypatch):
    """What a copy prints: the grader's values withheld, but its working folder (a path every
    copy's traceback names the packages under, as bubblewrap binds them where they are)."""
    monkeypatch.setenv("INSTRUCTOR_SECRET", "s3cret-value-of-the-instructor")
    monkeypatch.setenv("PWD", sys.prefix)
    said = withholding().sub("<withheld>", f"{sys.prefix}/lib: s3cret-value-of-the-instructor")
    assert said == f"{sys.prefix}/lib: <withheld>", said


def test_a_hung_copys_place_quotes_only_the_starters_own_files_and_functions():
    """Red team 15: a copy wrote a stack of its own to its screen before it hung, its path and
    name another TODO's reference, encoded as word characters: only the starter's names pass."""
    stack = (
        'Thread 0x1 (most recent call first):\n  File "/c/steps/lab-02/starter/{}", line {} in {}\n'
    )
    assert hung_at(stack.format("layers.py", 117, "dropout"), "lab-02") == (
        "steps/lab-02/starter/layers.py:117 (dropout)"
    )
    for file, line, name in [("\u6f22\u5b57.py", 1, "x"), ("layers.py", 1, "\u6f22\u5b57"),
                             ("layers.py", 1, "secret_name"), ("kv_x.py", 1, "dropout"),
                             ("layers.py", 1234567, "dropout")]:  # fmt: skip
        assert hung_at(stack.format(file, line, name), "lab-02") == "", (file, line, name)
