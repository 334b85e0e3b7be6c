"""The course's contracts, checked on every real step and shown to bite on a broken fixture."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from common import REPO_ROOT, STEPS_DIR, pytest_command, shown
from common.course import Step, course, pixi_tasks, step_names
from common.loader import ImplImportError, check_syntax
from tests import contracts as c
from tools import pristine, starters, untouched

FIXTURES = Path(__file__).parent / "fixtures"
BROKEN = FIXTURES / "broken_step" / "steps" / "step-99"
STEPS = step_names()
TASKS = pixi_tasks()
COURSE = course()


def _test_files() -> list[Path]:
    """Every test file of the repo, fixtures left out."""
    roots = [REPO_ROOT / "tests", STEPS_DIR, REPO_ROOT / "solutions"]
    files = [p for root in roots for p in root.rglob("test_*.py")]
    return [p for p in files if "fixtures" not in p.parts and "backups" not in p.parts]


# On a student's machine an edited starter is their work: the contracts that need the shipped one
# use a pristine copy. CI, or a maintainer with STRICT_STARTERS=1, fails instead: it is then a bug.
STRICT = bool(os.environ.get("CI") or os.environ.get("STRICT_STARTERS"))
MAKE = "regenerate the starters: pixi run make-starters (python -m tools.starters)"


def shipped(step: str, tmp_path: Path) -> Path:
    """The step folder as the course ships it: steps/<step> when its starter is untouched, else a
    pristine copy (your edits, a catch-up, an added file stay out of the course's contracts)."""
    if untouched(STEPS_DIR / step):
        return STEPS_DIR / step
    assert not STRICT, f"steps/{step}/starter is not what its solution generates: {MAKE}"
    return pristine(STEPS, tmp_path) / step  # all: a step may import an earlier one


def test_there_are_steps():
    assert {"lab-01", "step-04"} <= set(STEPS)


@pytest.mark.parametrize("step", STEPS)
def test_step_layout(step):
    c.assert_no_problems(c.layout_problems(STEPS_DIR / step))


@pytest.mark.parametrize("step", STEPS)
def test_starter_and_solution_signatures_match(step, tmp_path):
    c.assert_no_problems(c.signature_problems(shipped(step, tmp_path)))


@pytest.mark.parametrize("step", STEPS)
def test_starters_are_generated_from_the_solutions(step):
    paths = starters.stale(STEPS_DIR / step)
    stale = [shown(p) for p in paths]
    missing = [shown(p) for p in paths if not p.is_file()]
    assert not missing, f"{step}: missing starter {', '.join(missing)}: {MAKE}"
    if stale and not STRICT:
        pytest.skip(
            f"{', '.join(stale)} differ from the generated starter: your own work "
            "(STRICT_STARTERS=1 fails here instead, as CI does)"
        )
    assert not stale, f"{step}: {', '.join(stale)} differ from the generated starter: {MAKE}"


@pytest.mark.parametrize("step", STEPS)
def test_todo_ids_start_with_the_step(step):
    c.assert_no_problems(c.todo_id_problems(STEPS_DIR / step))


def test_a_todo_id_of_another_step_is_found(tmp_path):
    step = shutil.copytree(FIXTURES / "tiny_step" / "steps" / "step-97", tmp_path / "step-42")
    problems = c.todo_id_problems(step)
    assert problems and all("starting with 'step-42'" in p for p in problems), problems


@pytest.mark.parametrize("step", [s.name for s in COURSE])
def test_step_toml_agrees_with_the_step(step):
    c.assert_no_problems(c.description_problems(next(s for s in COURSE if s.name == step)))


def test_a_wrong_step_toml_is_found():
    step = Step("step-97", FIXTURES / "tiny_step" / "steps" / "step-97", "T", "t", 5, "lab-01", [])
    problems = c.description_problems(step)
    assert len(problems) == 1 and "set todo_modules = ['calc']" in problems[0]  # lab-01 is earlier
    late = Step("step-97", step.folder, "T", "t", 0, "lab-01", ["calc"])
    assert c.description_problems(late)[0].endswith("before order 0; valid: ")


def test_every_path_a_task_names_exists():
    c.assert_no_problems(c.task_path_problems(TASKS))


def test_every_pixi_run_in_the_docs_is_a_task():
    docs = [REPO_ROOT / "README.md", *sorted(REPO_ROOT.glob("*/*/README.md"))]
    docs += sorted(REPO_ROOT.glob("*/README.md"))
    problems = []
    for doc in docs:
        rel = doc.relative_to(REPO_ROOT).as_posix()
        problems += c.readme_task_problems(doc.read_text(encoding="utf-8"), TASKS, rel)
    c.assert_no_problems(problems)


def test_no_test_function_lacks_an_assertion():
    files = _test_files()
    assert len(files) >= 5
    c.assert_no_problems(c.assertion_problems(files))


@pytest.mark.slow
@pytest.mark.parametrize("step", STEPS)
def test_untouched_starter_fails_only_with_not_implemented(step, tmp_path):
    folder = shipped(step, tmp_path)  # a pristine copy runs in a child: another STEPS_DIR
    steps_dir = None if folder.parent == STEPS_DIR else folder.parent
    code, problems = c.starter_run(folder, tmp_path / "junit.xml", steps_dir)
    c.assert_no_problems(problems)
    assert code == pytest.ExitCode.TESTS_FAILED


# --- the same checks bite on the broken fixture --------------------------------------------------


def test_fixture_layout_problem_is_found():
    missing = ("step.toml", "README.md", "background", "experiments.py", "plots.py", "bugs.py")
    expected = [f"step-99: missing {n} {c.NEWSTEP}" for n in missing]
    expected.append("step-99: run.py declares RUN and nothing else; move main to experiments.py")
    assert c.layout_problems(BROKEN) == expected


def test_fixture_signature_problems_are_found():
    problems = c.signature_problems(BROKEN)
    assert any("thing.py lacks extra" in p for p in problems)
    assert any("scale signature differs" in p and "factor=3" in p for p in problems)
    assert any("Box.make signature differs: solution (n), starter (n, m)" in p for p in problems)


def test_an_edited_starter_may_add_but_not_lose_names():
    problems = c.signature_problems(BROKEN, strict=False)
    assert problems == [f"step-99: starter thing.py lacks extra: {c.MAKE}"]


def test_untouched_is_decided_by_content(tmp_path):
    step = shutil.copytree(BROKEN, tmp_path / "step-99")
    for path, text in starters.starters(step).items():
        path.write_text(text, encoding="utf-8")
    assert untouched(step)
    (step / "starter" / "thing.py").write_text("# mine\n", encoding="utf-8")
    assert not untouched(step)


def test_fixture_starter_written_by_hand_is_stale():
    assert [p.name for p in starters.stale(BROKEN)] == ["thing.py"]


def test_fixture_bad_task_paths_are_found():
    tasks = {"a": {"cmd": "python -m common.nothere"}, "b": {"cmd": "python -m pytest steps/nope"}}
    tasks["c"] = {"cmd": "python -m common.run step-77"}
    problems = c.task_path_problems(tasks)
    assert problems == [
        "pixi.toml task 'a': no module common.nothere",
        "pixi.toml task 'b': no path steps/nope",
        "pixi.toml task 'c': no steps/step-77/run.py or solutions/step-77/run.py",
    ]


def test_fixture_unknown_readme_task_is_found():
    problems = c.readme_task_problems("Run `pixi run lab-01` then `pixi run nonesuch`.", TASKS, "X")
    assert problems == [
        "X: names `pixi run nonesuch` but pixi.toml has no task 'nonesuch': add it or fix the text"
    ]


def test_fixture_tests_without_a_real_assertion_are_found():
    problems = c.assertion_problems([BROKEN / "tests" / "test_thing.py"])
    names = [p.split()[1] for p in problems]
    assert names == [
        "test_scale_runs",
        "test_asserts_a_constant",
        "test_asserts_only_in_a_helper_never_called",
    ]


@pytest.mark.process
@pytest.mark.slow
def test_fixture_starter_contract_violations_are_found(tmp_path):
    _, problems = c.starter_run(BROKEN, tmp_path / "junit.xml", steps_dir=BROKEN.parent)
    assert any("test_add passes on the untouched starter" in p for p in problems)
    assert any("test_wrong_expectation fails on the starter without" in p for p in problems)
    assert any("test_shift hits a NotImplementedError that names no TODO" in p for p in problems)
    assert not any("test_scale " in p or p.endswith("test_scale") for p in problems)
    # a test marked given must pass on the starter; one that is, is no problem
    assert any("test_given_but_runs_a_todo is marked given but fails" in p for p in problems)
    assert not any("test_given_add" in p for p in problems)
    # an optional TODO not written skips its tests (common/check/__init__.py); any other skip is a problem
    assert not any("test_later" in p for p in problems)
    assert any(
        "test_skips_for_another_reason skips on the untouched starter" in p for p in problems
    )


def test_a_syntax_error_is_one_line_without_running_the_file():
    # what pytest-xdist's controller checks: it imports no step (and so no torch)
    path = FIXTURES / "broken_import" / "steps" / "step-98" / "starter" / "mod.py"
    with pytest.raises(
        ImplImportError, match=r"step-98/starter/mod\.py:5 does not import: SyntaxError"
    ):
        check_syntax(path)
    check_syntax(REPO_ROOT / "conftest.py")  # a file that compiles passes silently


@pytest.mark.process
@pytest.mark.slow  # two pytest runs in children (another steps folder): ~4 s
@pytest.mark.parametrize("strict", [False, True], ids=["student", "STRICT_STARTERS=1"])
def test_a_stale_starter_skips_for_a_student_and_fails_strictly(strict, tmp_path):
    steps = shutil.copytree(FIXTURES / "tiny_step" / "steps", tmp_path / "steps")
    calc = steps / "step-97" / "starter" / "calc.py"
    calc.write_text(calc.read_text(encoding="utf-8") + "# mine\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "STRICT_STARTERS")}
    env |= {"COURSE_STEPS_DIR": str(steps)} | ({"STRICT_STARTERS": "1"} if strict else {})
    args = [
        str(Path(__file__)),
        "-q",
        "-rs",
        "-p",
        "no:cacheprovider",
        "-k",
        "starters_are_generated",
    ]
    cmd = pytest_command(REPO_ROOT, args)  # this file is under the repository's conftest
    done = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    if strict:
        assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout
        assert "differ from the generated starter: regenerate the starters" in done.stdout
    else:
        assert done.returncode == pytest.ExitCode.OK, done.stdout
        assert "STRICT_STARTERS=1 fails here instead" in done.stdout
