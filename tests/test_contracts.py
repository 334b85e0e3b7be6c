"""The course's contracts, one test per architectural rule, checked on every real step and shown
to bite on a broken fixture (tests/fixtures/)."""

import importlib
import os
import shutil
from pathlib import Path

import pytest

from common import REPO_ROOT, STEPS_DIR, shown
from common.course import Step, course, pixi_tasks, step_names
from common.course.bugs import Bug
from common.loader import ImplImportError, check_syntax, load_file
from tests import contracts as c
from tools import pristine, starters, untouched

FIXTURES = Path(__file__).parent / "fixtures"
BROKEN = FIXTURES / "broken_step" / "steps" / "step-99"
TINY = FIXTURES / "tiny_step" / "steps" / "step-97"
STEPS = step_names()
TASKS = pixi_tasks()
COURSE = course()
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


def assert_generated(folder: Path, strict: bool) -> None:
    """The starter is what the solution generates; an edited one skips, unless `strict`."""
    paths = starters.stale(folder)
    stale = [shown(p) for p in paths]
    missing = [shown(p) for p in paths if not p.is_file()]
    assert not missing, f"{folder.name}: missing starter {', '.join(missing)}: {MAKE}"
    if stale and not strict:
        pytest.skip(
            f"{', '.join(stale)} differ from the generated starter: your own work "
            "(STRICT_STARTERS=1 fails here instead, as CI does)"
        )
    assert not stale, f"{folder.name}: {', '.join(stale)} differ from the generated starter: {MAKE}"


@pytest.mark.parametrize("step", STEPS)
def test_step_layout_and_todo_ids(step):
    c.assert_no_problems(c.layout_problems(STEPS_DIR / step) + c.todo_id_problems(STEPS_DIR / step))


@pytest.mark.parametrize("step", STEPS)
def test_starter_and_solution_signatures_match(step, tmp_path):
    c.assert_no_problems(c.signature_problems(shipped(step, tmp_path)))


@pytest.mark.parametrize("step", STEPS)
def test_starters_are_generated_from_the_solutions(step):
    assert_generated(STEPS_DIR / step, STRICT)


@pytest.mark.parametrize("step", [s.name for s in COURSE])
def test_step_toml_agrees_with_the_step(step):
    c.assert_no_problems(c.description_problems(next(s for s in COURSE if s.name == step)))


def test_every_path_a_task_names_exists_and_every_pixi_run_in_the_docs_is_a_task():
    docs = [REPO_ROOT / "README.md", *sorted(REPO_ROOT.glob("*/*/README.md"))]
    problems = c.task_path_problems(TASKS)
    for doc in [*docs, *sorted(REPO_ROOT.glob("*/README.md"))]:
        rel = doc.relative_to(REPO_ROOT).as_posix()
        problems += c.readme_task_problems(doc.read_text(encoding="utf-8"), TASKS, rel)
    c.assert_no_problems(problems)


def test_no_test_function_lacks_an_assertion():
    roots = [REPO_ROOT / "tests", STEPS_DIR, REPO_ROOT / "solutions"]
    files = [p for root in roots for p in root.rglob("test_*.py")]
    files = [p for p in files if "fixtures" not in p.parts and "backups" not in p.parts]
    assert len(files) >= 5
    c.assert_no_problems(c.assertion_problems(files))


def bugs_in(module) -> list[Bug]:
    """The Bug objects a module holds at its top level, alone or in a list, tuple or dict."""
    found = []
    for value in vars(module).values():
        items = value.values() if isinstance(value, dict) else value
        items = items if isinstance(value, list | tuple | dict) else [value]
        found += [item for item in items if isinstance(item, Bug)]
    return found


def test_every_curated_bug_is_in_its_steps_bugs_py_and_every_step_has_some():
    """One catalogue: a Bug in common/, tools/ or a step's own modules but bugs.py is an error."""
    steps = [s for s in COURSE if not s.checkpoint]
    catalogued = [bug for step in steps for bug in step.bugs()]
    names = [f"{d}.{p.stem}".removesuffix(".__init__") for d in ("common", "tools")
             for p in (REPO_ROOT / d).glob("*.py")]  # fmt: skip
    modules = {name: importlib.import_module(name) for name in names}
    for path in [p for s in steps for p in s.folder.glob("*.py") if p.name != "bugs.py"]:
        modules[shown(path)] = load_file(path)
    extra = [
        f"{n}: {b.name}" for n, m in modules.items() for b in bugs_in(m) if b not in catalogued
    ]
    assert not extra, f"expected every curated bug in its step's bugs.py, found others: {extra}"
    assert all(s.bugs() for s in steps), "expected curated bugs in every step's bugs.py (BUGS)"


def in_a_child_unless_shipped(step: str):
    """`step` as a parameter of a test that runs its shipped starter: in this process when it is
    untouched, in a child on a pristine copy when not (a catch-up, an edit), and then marked so."""
    return pytest.param(step, marks=() if untouched(STEPS_DIR / step) else pytest.mark.process)


@pytest.mark.slow
@pytest.mark.parametrize("step", [in_a_child_unless_shipped(s) for s in STEPS])
def test_untouched_starter_fails_only_with_not_implemented(step, tmp_path):
    folder = shipped(step, tmp_path)  # a pristine copy runs in a child: another STEPS_DIR
    steps_dir = None if folder.parent == STEPS_DIR else folder.parent
    code, problems = c.starter_run(folder, tmp_path / "junit.xml", steps_dir)
    c.assert_no_problems(problems)
    assert code == pytest.ExitCode.TESTS_FAILED


# --- each contract bites on a broken fixture -------------------------------------------------

MISSING = ("step.toml", "README.md", "background", "experiments.py", "plots.py", "bugs.py")
BAD_TASKS = {"a": "python -m common.nothere", "b": "python -m pytest steps/nope"}
BAD_TASKS["c"] = "python -m common.run step-77"
BITES = {
    "layout": (
        lambda tmp: c.layout_problems(BROKEN),
        [f"step-99: missing {n} {c.NEWSTEP}" for n in MISSING]
        + [
            "step-99: tests/test_run.py tests a whole run or the handout: mark it (pytestmark = "
            "pytest.mark.whole_run), so the check holds it back while a TODO fails",
            "step-99: run.py declares RUN and nothing else; move main to experiments.py",
        ],
    ),
    "signatures": (
        lambda tmp: c.signature_problems(BROKEN),
        [
            f"step-99: thing.py:Box.make signature differs: solution (n), starter (n, m): {c.MAKE}",
            f"step-99: starter thing.py lacks extra: {c.MAKE}",
            "step-99: thing.py:scale signature differs: solution (x, factor=3), starter "
            f"(x, factor=2): {c.MAKE}",
        ],
    ),
    "an edited starter may add names": (
        lambda tmp: c.signature_problems(BROKEN, strict=False),
        [f"step-99: starter thing.py lacks extra: {c.MAKE}"],
    ),
    "stale starter": (lambda tmp: [p.name for p in starters.stale(BROKEN)], ["thing.py"]),
    "todo ids": (
        lambda tmp: [
            "starting with 'step-42'" in p
            for p in c.todo_id_problems(shutil.copytree(TINY, tmp / "step-42"))
        ],
        [True, True],  # two TODOs whose ids name step-97
    ),
    "step.toml": (
        lambda tmp: c.description_problems(Step("step-97", TINY, "T", "t", 5, "lab-01", [])),
        [
            "step-97: tests/fixtures/tiny_step/steps/step-97/step.toml: set todo_modules = ['calc'] "
            "(the modules with TODO regions)"
        ],
    ),  # fmt: skip
    "starts_from": (
        lambda tmp: c.description_problems(Step("step-97", TINY, "T", "t", 0, "lab-01", ["calc"])),
        [
            "step-97: tests/fixtures/tiny_step/steps/step-97/step.toml: starts_from 'lab-01' is no "
            "step or checkpoint before order 0; valid: "
        ],
    ),  # fmt: skip
    "task paths": (
        lambda tmp: c.task_path_problems({n: {"cmd": cmd} for n, cmd in BAD_TASKS.items()}),
        [
            "pixi.toml task 'a': no module common.nothere",
            "pixi.toml task 'b': no path steps/nope",
            "pixi.toml task 'c': no steps/step-77/run.py or solutions/step-77/run.py",
        ],
    ),
    "pixi run in a doc": (
        lambda tmp: c.readme_task_problems("`pixi run lab-01`, `pixi run nonesuch`", TASKS, "X"),
        [
            "X: names `pixi run nonesuch` but pixi.toml has no task 'nonesuch': add it or fix the text"
        ],
    ),
    "assertions": (
        lambda tmp: [p.split()[1] for p in c.assertion_problems([BROKEN / "tests/test_thing.py"])],
        [
            "test_scale_runs",
            "test_asserts_a_constant",
            "test_asserts_only_in_a_helper_never_called",
        ],
    ),
}


@pytest.mark.parametrize(("found", "expected"), BITES.values(), ids=BITES)
def test_each_contract_bites_on_a_broken_fixture(found, expected, tmp_path):
    assert found(tmp_path) == expected


@pytest.mark.parametrize("strict", [False, True], ids=["student", "STRICT_STARTERS=1"])
def test_a_stale_starter_skips_for_a_student_and_fails_strictly(strict, tmp_path):
    step = shutil.copytree(TINY, tmp_path / "step-97")
    calc = step / "starter" / "calc.py"
    calc.write_text(calc.read_text(encoding="utf-8") + "# mine\n", encoding="utf-8")
    said = "differ from the generated starter: regenerate" if strict else "STRICT_STARTERS=1 fails"
    with pytest.raises(AssertionError if strict else pytest.skip.Exception, match=said):
        assert_generated(step, strict)


def test_untouched_is_decided_by_content(tmp_path):
    step = shutil.copytree(BROKEN, tmp_path / "step-99")
    for path, text in starters.starters(step).items():
        path.write_text(text, encoding="utf-8")
    assert untouched(step)
    (step / "starter" / "thing.py").write_text("# mine\n", encoding="utf-8")
    assert not untouched(step)


@pytest.mark.process
@pytest.mark.slow
def test_fixture_starter_contract_violations_are_found(tmp_path):
    _, problems = c.starter_run(BROKEN, tmp_path / "junit.xml", steps_dir=BROKEN.parent)
    said = " ".join(problems)
    assert "test_add passes on the untouched starter" in said
    assert "test_wrong_expectation fails on the starter without" in said
    assert "test_shift hits a NotImplementedError that names no TODO" in said
    assert "test_given_but_runs_a_todo is marked given but fails" in said  # one marked given passes
    assert "test_skips_for_another_reason skips on the untouched starter" in said
    # what is no problem: a TODO's NotImplementedError, a given test that passes, an optional skip
    assert not any(name in said for name in ("test_scale ", "test_given_add", "test_later"))


def test_a_syntax_error_is_one_line_without_running_the_file():
    # what pytest-xdist's controller checks: it imports no step (and so no torch)
    path = FIXTURES / "broken_import" / "steps" / "step-98" / "starter" / "mod.py"
    with pytest.raises(ImplImportError, match=r"step-98/starter/mod\.py:5 does not import: Syntax"):
        check_syntax(path)
    check_syntax(REPO_ROOT / "conftest.py")  # a file that compiles passes silently
