"""The student edition (tools/release.py): no open step's reference in any file or git object of
it; a clone of it runs the student loop with the README's commands as this repository does; and a
class that committed work pulls the next release without a conflict (issue 52)."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from common import REPO_ROOT, STEPS_DIR
from common.course import course, course_step, step_names
from common.course.bugs import committed
from common.course.todos import step_regions
from common.loader import load_file
from tools import check_in_a_child, pristine, release
from tools.screens import BUGGY_FILE, SCREENS, bugs, screen_path
from tools.starters import starters

STEPS = [s.name for s in course() if not s.checkpoint]  # each in turn the open step


def edition_of(step: str, folder: Path, *also: str) -> Path:
    """The edition of the week `step` opens, written into `folder` as an instructor does."""
    done = subprocess.run(
        [sys.executable, "-m", "tools.release", step, str(folder), *[f"--also-open={a}" for a in also]],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return folder


def git(folder: Path, *args: str) -> str:
    """A student's git command in `folder`, with a student's name."""
    env = os.environ | {"GIT_AUTHOR_NAME": "A Student", "GIT_AUTHOR_EMAIL": "s@example.org"}
    env |= {"GIT_COMMITTER_NAME": "A Student", "GIT_COMMITTER_EMAIL": "s@example.org"}
    done = subprocess.run(["git", *args], cwd=folder, env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"git {' '.join(args)}: {done.stdout}{done.stderr}"
    return done.stdout


def student(clone: Path, *args: str) -> subprocess.CompletedProcess:
    """A command of the README's, typed in the clone inside a pixi task: its course, not this one
    (-S: this repository's editable install is not on the path; the packages are)."""
    path = os.pathsep.join([str(clone), sysconfig.get_paths()["purelib"]])
    env = {k: v for k, v in os.environ.items() if k != "COURSE_STEPS_DIR"}
    env |= {"PYTHONPATH": path, "PIXI_PROJECT_ROOT": str(clone), "COLUMNS": "100"}
    cmd = [sys.executable, "-S", *([] if args[0].endswith(".py") else ["-m"]), *args]
    return subprocess.run(cmd, cwd=clone, env=env, capture_output=True, text=True, timeout=300)


# --- no leak: every step as the open one, in memory (git ls-files names the files) --------------


@pytest.mark.process
@pytest.mark.parametrize("step", STEPS)
def test_no_line_of_the_open_steps_reference_is_in_its_edition(step):
    chosen = release.plan(step)
    files = release.edition(chosen)
    secret = release.secret_lines(chosen, files)
    assert secret, f"{step}: no reference line to look for: the test could not fail"
    assert release.leaks(files, secret) == []
    assert not any(f"steps/{step}/solution/" in rel for rel in files), "the open step's solution/"
    closed = [s for s in chosen.closed]
    assert all(any(f"steps/{s}/solution/" in rel for rel in files) for s in closed), closed
    later = STEPS[STEPS.index(step) + 1 :]
    assert not any(rel.startswith(tuple(f"steps/{s}/" for s in later)) for rel in files), later
    assert not any(
        rel.startswith(("tools/", "grader/", "tests/", ".ci/", ".github/")) for rel in files
    )


def _leaky(step: str, how: str) -> dict[str, bytes]:
    """An edition of the week `step` opens with one leak put in it, as a careless release would."""
    files = release.edition(release.plan(step))
    solution = course_step(step).solution
    first = sorted(solution.rglob("*.py"))[0]
    if how == "solution file":
        files[f"steps/{step}/solution/{first.name}"] = first.read_bytes()
    elif how == "bug's replacement":
        files[f"steps/{step}/bugs.py"] = (STEPS_DIR / step / "bugs.py").read_bytes()
    else:  # hint level 4: the marked solution itself as its todos/
        files[f"steps/{step}/todos/{first.name}"] = first.read_bytes()
    return files


@pytest.mark.process
@pytest.mark.parametrize("how", ["solution file", "bug's replacement", "hint level 4"])
def test_the_leak_test_fails_on_an_edition_that_leaks(how):
    chosen = release.plan("lab-02")
    files = _leaky("lab-02", how)
    assert release.leaks(files, release.secret_lines(chosen, files)), f"a {how} went unseen"


@pytest.mark.process
@pytest.mark.parametrize("step", STEPS)
def test_the_open_steps_todos_and_rows_are_the_references_without_its_code(step, tmp_path):
    """What the check reads of an open step (each TODO's file, functions, given code, contract,
    hints 1 to 3, shipped bug; each symptom row's words) is the reference's, its code aside: the
    edition's screens are this repository's (the starters and tests are the same files)."""
    files = release.edition(release.plan(step))
    for rel, data in files.items():
        if rel.startswith(f"steps/{step}/"):
            (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / rel).write_bytes(data)
    folder = tmp_path / "steps" / step
    here, there = course_step(step).regions(), step_regions(folder / "todos")
    assert list(there) == list(here)
    for todo, ours in here.items():
        theirs = there[todo]
        assert (theirs.module, theirs.functions, theirs.given) == (
            ours.module,
            ours.functions,
            ours.given,
        )
        assert [r.parts for r in theirs.regions] == [r.parts for r in ours.regions], todo
        assert theirs.shipped == ours.shipped, todo
        for r, o in zip(theirs.regions, ours.regions, strict=True):  # the raise, not the code
            assert o.starter or "raise NotImplementedError(" in "\n".join(r.code), todo
            assert not {c for c in o.code if len(c.strip()) > 3} & set(r.code), todo
    words = ("name", "breaks", "fix", "says", "passes", "fails", "module", "check", "hint")
    rows = load_file(folder / "bugs.py").BUGS
    assert [[getattr(b, w) for w in words] for b in rows] == [
        [getattr(b, w) for w in words] for b in course_step(step).bugs()
    ]
    assert not any(b.old or b.new for b in rows), "a replacement in the edition's bugs.py"
    made = {p.relative_to(STEPS_DIR / step): text for p, text in starters(STEPS_DIR / step).items()}
    theirs = {
        p.relative_to(folder): p.read_text(encoding="utf-8")
        for p in (folder / "starter").rglob("*")
        if p.is_file()
    }
    assert theirs == made, "the edition's starter is not the one the solution generates"


# --- the student loop in a fresh clone of the edition --------------------------------------------


def screen_of(done: subprocess.CompletedProcess) -> str:
    """The check's screen without pytest's last line (its seconds)."""
    return "\n".join(done.stdout.rstrip("\n").splitlines()[:-1]).strip("\n") + "\n"


def pointing(screen: str) -> list[str]:
    """A screen's lines that point at the student's code: each TODO's line, Next, the rows."""
    kinds = ("[", "Next:", "  Symptom", "  - ")
    return [line for line in screen.splitlines() if line.startswith(kinds)]


def recorded(name: str) -> str:
    """A recorded screen of tests/screens/, its last line (pytest's seconds) left out."""
    text = (SCREENS / f"{name}.txt").read_text(encoding="utf-8")
    return "\n".join(text.rstrip("\n").splitlines()[:-1]).strip("\n") + "\n"


@pytest.mark.process
@pytest.mark.slow
@pytest.mark.parametrize("step", STEPS)
def test_a_fresh_clone_of_the_edition_runs_the_student_loop(step, tmp_path):
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(edition_of(step, tmp_path / "edition")), str(clone))
    check = ("pytest", f"steps/{step}", "--impl", "starter")
    untouched = student(clone, *check)
    assert screen_of(untouched) == recorded(step), untouched.stdout + untouched.stderr
    for line in (student(clone, "common.hint", step) for _ in range(3)):
        assert line.returncode == 0 and "hint" in line.stdout, line.stdout + line.stderr
    refused = student(clone, "common.hint", step, "--solution")
    assert refused.returncode == 1 and "come when the step is closed" in refused.stdout
    open_up = student(clone, "common.catchup", step)
    assert open_up.returncode == 1 and "comes when the step is closed" in open_up.stderr
    assert len(open_up.stderr.strip().splitlines()) == 1, open_up.stderr
    run = student(clone, "common.run", step, "--quick")  # the handout's `pixi run <step>`
    assert "Traceback" not in run.stdout + run.stderr, run.stdout + run.stderr
    assert f"{step} with your starter" in run.stdout, run.stdout  # no reference here: theirs
    progress = student(clone, "pytest", "steps", "--impl", "starter", "--progress")
    assert progress.returncode == 0 and f"next: TODO({step}" in progress.stdout, progress.stdout
    report = student(clone, "common.envreport").stdout  # this venv's course is this repository:
    drift = [line for line in report.splitlines() if line.startswith("[DRIFT]")]
    assert "[OK]" in report and all("llm-internals" in line for line in drift), report
    notebook = sorted((clone / "steps" / step / "background").glob("[0-9]*.py"))[0]
    lesson = student(clone, notebook.relative_to(clone).as_posix())  # a background, as a script
    assert lesson.returncode == 0, lesson.stdout[-1000:] + lesson.stderr[-1000:]
    shutil.copytree(
        course_step(step).solution, clone / "steps" / step / "starter", dirs_exist_ok=True
    )
    green = student(clone, *check)
    assert green.returncode == 0 and "Every required TODO is done" in green.stdout, green.stdout
    run = student(clone, "common.run", step, "--quick")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    closed = release.plan(step).closed
    if closed:  # a closed step's checkpoint: restored, the student's version backed up
        mine = clone / "steps" / closed[-1] / "starter"
        first = sorted(mine.rglob("*.py"))[0]
        first.write_text(first.read_text(encoding="utf-8") + "# my own try\n", encoding="utf-8")
        caught = student(clone, "common.catchup", closed[-1])
        assert caught.returncode == 0, caught.stdout + caught.stderr
        backups = list((mine.parent / "backups").glob("starter-*"))
        assert len(backups) == 1 and "# my own try" in (
            backups[0] / first.relative_to(mine)
        ).read_text(encoding="utf-8")


@pytest.mark.process
@pytest.mark.slow
def test_each_curated_bug_of_lab_01_shows_its_recorded_screen_in_the_edition(tmp_path):
    """lab-01 open: each curated bug injected into the clone's starter draws the screen this
    repository recorded for it (tests/screens/), its TODO, its line and its symptom row."""
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(edition_of("lab-01", tmp_path / "edition")), str(clone))
    solution, starter = course_step("lab-01").solution, clone / "steps" / "lab-01" / "starter"
    for name, bug in bugs().items():  # as tools.screens records them: caught up, then the bug
        shutil.copytree(solution, starter, dirs_exist_ok=True)
        path = clone / "steps" / "lab-01" / BUGGY_FILE
        path.write_text(
            committed(path.read_text(encoding="utf-8"), bug, path.name), encoding="utf-8"
        )
        screen = student(clone, "pytest", "steps/lab-01", "--impl", "starter", "-m", "not slow")
        # recorded from a copy outside the repository, which names a test from its tests/ (and
        # so wraps its lines elsewhere): the lines that point, the TODOs, Next and the rows
        shown, expected = pointing(screen_of(screen)), pointing(recorded(screen_path(name).stem))
        assert shown == expected, f"{name}:\n{screen.stdout}"


# --- the next release reaches a class that has worked -------------------------------------------


@pytest.mark.process
def test_a_class_pulls_the_next_release_and_keeps_every_line_it_wrote(tmp_path):
    edition = edition_of("lab-01", tmp_path / "edition")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(edition), str(clone))
    mine = clone / "steps" / "lab-01" / "starter" / "attention.py"
    text = mine.read_text(encoding="utf-8").replace(
        'raise NotImplementedError("TODO(lab-01 task 3: causal_mask)',
        'return torch.tril(torch.ones(seq_len, seq_len)).bool()  # mine\n    raise NotImplementedError("TODO(lab-01 task 3: causal_mask)',
        1,
    )
    mine.write_text(text + "# my notes\n", encoding="utf-8")
    (clone / "steps" / "lab-01" / "notes.md").write_text("what I learnt\n", encoding="utf-8")
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", "my lab-01 so far")
    edition_of("step-04", edition)  # next week, over last week's edition
    git(clone, "pull", "-q", "--no-rebase", "--no-edit")
    assert mine.read_text(encoding="utf-8") == text + "# my notes\n", "the student's lines changed"
    assert (clone / "steps" / "lab-01" / "notes.md").is_file()
    assert (clone / "steps" / "step-04" / "starter" / "head.py").is_file(), "the new step"
    assert (clone / "steps" / "lab-01" / "solution" / "attention.py").is_file(), "the checkpoint"
    assert not (clone / "steps" / "step-04" / "solution").exists()
    assert "Release step-04" in git(clone, "log", "--oneline", "-3")


@pytest.mark.process
def test_a_step_released_closed_cannot_open_again_in_the_same_edition(tmp_path):
    """Its reference is in the edition's history by then: the release refuses, naming the lines."""
    edition = edition_of("lab-02", tmp_path / "edition")  # step-06 closed
    done = subprocess.run(
        [sys.executable, "-m", "tools.release", "lab-02", str(edition), "--also-open=step-06"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1 and "refused" in done.stderr and "step-06" in done.stderr
    assert git(edition, "log", "--oneline").count("\n") == 1, "nothing was committed"


@pytest.mark.process
def test_the_editions_readme_and_tasks_are_the_students(tmp_path):
    """A README for students (the edition's note, no instructor's or maintainer's section) and the
    student's tasks only, valid pixi (when the maintainers' copy of its schema is here)."""
    chosen = release.plan("step-05")
    files = release.edition(chosen)
    readme = files["README.md"].decode("utf-8")
    assert "**step-05** open this week" in readme and "lab-01, step-04" in readme
    for section in ("## Teaching a class", "## For instructors", "## Contributing"):
        assert section not in readme, section
    assert "[step-06]" not in readme and "[step-05](steps/step-05/README.md)" in readme
    pixi = tomllib.loads(files["pixi.toml"].decode("utf-8"))
    tasks = set(pixi["tasks"])
    assert {"check-step-05", "test-step-04", "hint", "catch-up", "watch", "progress"} <= tasks
    assert not tasks & {"test-step-05", "check-step-06", "grade", "autograder", "release"}
    assert 'testpaths = ["solutions", "steps/lab-01", "steps/step-04"]' in files[
        "pyproject.toml"
    ].decode("utf-8")
    schema = REPO_ROOT.parent / "shared" / "pixi" / "schema.json"
    if schema.is_file():
        jsonschema = pytest.importorskip("jsonschema")
        jsonschema.validate(pixi, json.loads(schema.read_text(encoding="utf-8")))


def test_a_release_that_opens_a_step_a_released_one_builds_on_is_refused():
    with pytest.raises(ValueError, match="step-06 loads step-05's reference .*must be closed"):
        release.plan("step-06", ("step-05",))
    with pytest.raises(ValueError, match="unknown step 'step-99'"):
        release.plan("step-99")
    assert release.plan("lab-02", ("step-06",)).open == {"lab-02", "step-06"}


@pytest.mark.process
def test_the_reference_of_an_open_step_is_not_tested_in_the_edition_but_said_why(tmp_path):
    clone = edition_of("step-05", tmp_path / "edition")
    done = student(clone, "pytest", "steps/step-05", "--impl", "solution")
    assert done.returncode != 0 and "step-05's reference comes when the step is closed" in (
        done.stdout + done.stderr
    )
    assert "pixi run check-step-05" in done.stdout + done.stderr


@pytest.mark.process
@pytest.mark.slow
@pytest.mark.parametrize("step", [s for s in STEPS if s != "lab-01"])
def test_a_curated_bug_shows_the_same_screen_in_the_edition_as_here(step, tmp_path):
    """Each step open, its first curated bug in the caught-up starter: the edition's screen (its
    TODO, its Next line, its symptom row) is this repository's, but for the count of tests it
    leaves out (an open step's `course` files stay here)."""
    bug = course_step(step).bugs()[0]
    module = bug.module or course_step(step).mutation["target"]
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(edition_of(step, tmp_path / "edition")), str(clone))
    here = pristine(step_names(), tmp_path / "here")
    screens = []
    for steps in (clone / "steps", here):
        starter = steps / step / "starter"
        shutil.copytree(course_step(step).solution, starter, dirs_exist_ok=True)
        path = starter / f"{module.replace('.', '/')}.py"
        path.write_text(
            committed(path.read_text(encoding="utf-8"), bug, path.name), encoding="utf-8"
        )
    there = student(clone, "pytest", f"steps/{step}", "--impl", "starter")
    ours = check_in_a_child(
        here, [str(here / step), "--impl", "starter"], env={"PIXI_PROJECT_ROOT": str(REPO_ROOT)}
    )
    for done in (there, ours):  # the TODO lines, Next and the rows: the lines that point
        screens.append(pointing(screen_of(done)))
    assert any("Symptom table" in line for line in screens[1]), f"{bug.name}: no row here"
    assert screens[0] == screens[1], (
        f"{step} with {bug.name!r}:\n{there.stdout}\n---\n{ours.stdout}"
    )
