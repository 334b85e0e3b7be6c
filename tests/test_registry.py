"""One registry of steps (issue 34): common/course.py alone lists the step folders and builds a Step;
everything else looks a step up there, and a checkpoint is a property of the Step."""

import ast
import re

import pytest

from common import REPO_ROOT, SOLUTIONS_DIR, STEPS_DIR, course, run

REGISTRY = "common/course.py"
SKIP = {".venv", "out", "backups", "fixtures", ".git", "__pycache__"}
FILES = sorted(p for p in REPO_ROOT.rglob("*.py") if not SKIP & set(p.relative_to(REPO_ROOT).parts))
LISTING = {"iterdir", "glob", "rglob", "listdir", "scandir", "walk"}
# a steps or checkpoints root: STEPS_DIR, SOLUTIONS_DIR, steps_dir, root / "steps", ...
ROOT = re.compile(r"(STEPS_DIR|SOLUTIONS_DIR|steps_dir|solutions_dir|'steps'|'solutions')\)?$")
FINDERS = {"is_step", "step_names", "step_dir", "course_step", "course"}  # the registry's own


def _outside_the_registry() -> dict[str, ast.AST]:
    """Path -> syntax tree of every course file but the registry's and the tests'."""
    rels = {p.relative_to(REPO_ROOT).as_posix(): p for p in FILES}
    return {
        rel: ast.parse(p.read_text(encoding="utf-8"))
        for rel, p in rels.items()
        if rel != REGISTRY and not rel.startswith("tests/")
    }


def steps_built(tree: ast.AST) -> list[int]:
    """Lines that call Step(...) (or course.Step(...))."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (getattr(node.func, "id", None) or getattr(node.func, "attr", None)) == "Step"
    ]


def roots_listed(tree: ast.AST) -> list[int]:
    """Lines that list a steps or checkpoints root, ask whether a folder sits in one, or define
    another finder of steps (loader.step_names was one)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in FINDERS:
            found.append(node.lineno)
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) in LISTING:
            where = node.args[0] if node.func.attr in ("listdir", "scandir", "walk") else None
            target = where if where is not None else node.func.value
            if target is not None and ROOT.search(ast.unparse(target)):
                found.append(node.lineno)
        if isinstance(node, ast.Compare) and ".parent" in ast.unparse(node):
            if ROOT.search(ast.unparse(node.comparators[-1])) or ROOT.search(
                ast.unparse(node.left)
            ):
                found.append(node.lineno)
    return sorted(found)


def test_the_detectors_see_what_they_forbid():
    """The two scans below would catch each way of writing what they forbid."""
    built = ast.parse('a = Step("x", f)\nb = course.Step(n, f)\nc = StepStatus(1)\n')
    assert steps_built(built) == [1, 2]
    listed = ast.parse(
        "STEPS_DIR.iterdir()\n(root / 'steps').iterdir()\nos.listdir(SOLUTIONS_DIR)\n"
        "s.folder.parent == STEPS_DIR\n(STEPS_DIR / step / 'background').glob('*.py')\n"
        "def step_names(root):\n    return sorted(root.iterdir())\n"
    )
    assert roots_listed(listed) == [1, 2, 3, 4, 6]


@pytest.mark.parametrize(
    ("scan", "fix"),
    [
        (steps_built, "builds a Step: use common.course.course_step(name) or at(folder)"),
        (roots_listed, "finds steps itself: use common.course.step_names or Step.checkpoint"),
    ],
    ids=["no Step( outside the registry", "one module lists the step folders"],
)
def test_only_the_registry_finds_and_builds_steps(scan, fix):
    """Code looks a step up (course_step, at, course), never builds one from a name and a folder,
    lists steps/ or solutions/, or tells a checkpoint by its parent folder."""
    wrong = [
        f"{rel}:{line} {fix}"
        for rel, tree in _outside_the_registry().items()
        for line in scan(tree)
    ]
    assert not wrong, "\n".join(wrong)


def test_a_checkpoint_is_shown_at_its_own_folder():
    """whose() names solutions/step-03/ for the Step 3 checkpoint, not a steps/ folder."""
    checkpoint, step = course.course_step("step-03"), course.course_step("step-04")
    assert checkpoint.checkpoint and checkpoint.solution == SOLUTIONS_DIR / "step-03"
    assert not step.checkpoint and step.solution == STEPS_DIR / "step-04" / "solution"
    assert "(solutions/step-03/)" in run.whose("step-03", "solution")
    assert "(steps/step-04/solution/)" in run.whose("step-04", "solution")


def test_a_copy_of_a_step_is_a_step_where_it_lies(tmp_path):
    """at(folder) gives the Step of a copy (catch-up's tests, a pristine copy): its own layout."""
    folder = tmp_path / "step-97"
    (folder / "tests").mkdir(parents=True)
    copy = course.at(folder)
    assert (copy.name, copy.checkpoint, copy.solution) == ("step-97", False, folder / "solution")
