"""The course's contracts, as functions returning problems; tests/ runs them on every step and a broken fixture."""

import ast
import functools
import inspect
import re
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

from common import REPO_ROOT, shown
from common.course import Step, at, course
from common.course.todos import id_problem, module_name, split_id, todo_in
from common.loader import ImplImportError, load_from
from tools import run_pytest, untouched  # noqa: F401 (c.untouched, for the tests)

MAKE = "run pixi run make-starters (python -m tools.starters)"
# what every step holds (CONTRIBUTING.md, "Adding a step"); more modules only as step.toml lists them
FIXED = ("step.toml", "README.md", "solution", "starter", "tests", "background")
FIXED += ("run.py", "experiments.py", "plots.py", "bugs.py")
NEWSTEP = "(python -m tools.newstep writes every part of a step)"


WHOLE_RUN_FILES = ("test_docs", "test_run", "test_run_story", "test_experiments", "test_lecture")


def _marks(path: Path) -> set[str]:
    """The marks a test file's module-level `pytestmark` names (`pytest.mark.<name>`)."""
    marks = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if not isinstance(node, ast.Assign | ast.AnnAssign) or node.value is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(getattr(t, "id", None) == "pytestmark" for t in targets):
            marks |= {n.attr for n in ast.walk(node.value) if isinstance(n, ast.Attribute)}
    return marks


def layout_problems(folder: Path) -> list[str]:
    """A step has the fixed files; any other module is one its step.toml's [modules] lists with
    what it holds; its tests of a whole run are marked whole_run; its run.py declares RUN only."""
    problems = [f"{folder.name}: missing {n} {NEWSTEP}" for n in FIXED if not (folder / n).exists()]
    if (folder / "tests").is_dir() and not list((folder / "tests").glob("test_*.py")):
        problems.append(f"{folder.name}: tests/ holds no test_*.py: add one")
    toml = folder / "step.toml"
    listed = (
        tomllib.loads(toml.read_text(encoding="utf-8")).get("modules", {}) if toml.is_file() else {}
    )
    for path in sorted(folder.glob("*.py")):
        if path.name not in FIXED and path.stem not in listed:
            problems.append(
                f"{folder.name}: {path.name} is none of a step's files: list it in step.toml's "
                f'[modules] with what it holds ({path.stem} = "...") or move it into one'
            )
    for name, what in listed.items():
        if not (folder / f"{name}.py").is_file():
            problems.append(
                f"{folder.name}: step.toml's [modules] lists {name}, but {name}.py is missing"
            )
        elif not isinstance(what, str) or not what.strip():
            problems.append(
                f"{folder.name}: step.toml's [modules] says nothing of what {name} holds"
            )
    for path in sorted(folder.glob("tests/test_*.py")):
        if path.stem in WHOLE_RUN_FILES and "whole_run" not in _marks(path):
            problems.append(
                f"{folder.name}: tests/{path.name} tests a whole run or the handout: mark it "
                "(pytestmark = pytest.mark.whole_run), so the check holds it back while a TODO fails"
            )
    if (folder / "run.py").is_file():
        body = ast.parse((folder / "run.py").read_text(encoding="utf-8")).body
        defined = [n.name for n in body if isinstance(n, ast.FunctionDef | ast.ClassDef)]
        if defined:
            problems.append(
                f"{folder.name}: run.py declares RUN and nothing else; move {', '.join(defined)} "
                "to experiments.py"
            )
    return problems


def _public(module: ModuleType) -> dict[str, str]:
    """Public functions and classes defined in `module`, mapped to their signatures."""
    found = {}
    for name, obj in vars(module).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(obj):
            found[name] = str(inspect.signature(obj))
        elif inspect.isclass(obj):
            found[name] = str(inspect.signature(obj))
            for attr, member in vars(obj).items():
                if attr.startswith("_") and attr != "__init__":
                    continue
                if isinstance(member, staticmethod | classmethod):
                    member = member.__func__
                if inspect.isfunction(member):
                    found[f"{name}.{attr}"] = str(inspect.signature(member))
                elif isinstance(member, property):
                    found[f"{name}.{attr}"] = "property"
    return found


def signature_problems(folder: Path, strict: bool = True) -> list[str]:
    """Starter and solution expose the same public names with the same signatures.

    With strict=False (a starter the student has edited) only missing names count.
    """
    problems = []
    key = re.sub(r"\W", "_", str(folder))
    solution, starter = folder / "solution", folder / "starter"
    for path in sorted(solution.rglob("*.py")):
        rel = path.relative_to(solution)
        module = module_name(solution, path)
        if not (starter / rel).is_file():
            problems.append(f"{folder.name}: missing starter {rel.as_posix()}: {MAKE}")
            continue
        try:
            ref = _public(load_from(solution, module, f"_contract_{key}_solution"))
            mine = _public(load_from(starter, module, f"_contract_{key}_starter"))
        except ImplImportError as exc:
            problems.append(f"{folder.name}: {exc}")
            continue
        for name in sorted(ref.keys() | mine.keys()):
            if name not in mine:
                problems.append(f"{folder.name}: starter {rel.as_posix()} lacks {name}: {MAKE}")
            elif not strict:
                continue
            elif name not in ref:
                problems.append(f"{folder.name}: starter {rel.as_posix()} has extra {name}: {MAKE}")
            elif ref[name] != mine[name]:
                problems.append(
                    f"{folder.name}: {rel.as_posix()}:{name} signature differs: "
                    f"solution {ref[name]}, starter {mine[name]}: {MAKE}"
                )
    return problems


def description_problems(step: Step) -> list[str]:
    """step.toml names the modules that hold TODOs, and a start that comes earlier in the course."""
    problems, where = [], f"{step.name}: {shown(step.folder / 'step.toml')}"
    regions = step.regions()
    holding = sorted({entry.module for entry in regions.values()})
    if sorted(step.todo_modules) != holding:
        problems.append(f"{where}: set todo_modules = {holding!r} (the modules with TODO regions)")
    if step.starts_from:
        earlier = {s.name: s.order for s in course()}
        if earlier.get(step.starts_from, step.order) >= step.order:
            problems.append(
                f"{where}: starts_from {step.starts_from!r} is no step or checkpoint before "
                f"order {step.order}; valid: {', '.join(n for n, o in earlier.items() if o < step.order)}"
            )
    return problems


def task_path_problems(tasks: dict[str, dict], root: Path = REPO_ROOT) -> list[str]:
    """Every path or `python -m` module a task names exists."""
    problems = []
    for name, task in tasks.items():
        words = task["cmd"].split()
        for i, word in enumerate(words):
            if word == "-m" and i + 1 < len(words) and words[i + 1] not in ("pytest",):
                module = root / words[i + 1].replace(".", "/")
                if not (module.with_suffix(".py").is_file() or (module / "__main__.py").is_file()):
                    problems.append(f"pixi.toml task {name!r}: no module {words[i + 1]}")
            elif "/" in word and not (root / word).exists():
                problems.append(f"pixi.toml task {name!r}: no path {word}")
            elif words[i - 1 : i + 1] == ["common.run", word] and i >= 1:
                runs = [root / "steps" / word / "run.py", root / "solutions" / word / "run.py"]
                if not any(p.is_file() for p in runs):
                    problems.append(
                        f"pixi.toml task {name!r}: no steps/{word}/run.py or solutions/{word}/run.py"
                    )
    return problems


def readme_task_problems(text: str, tasks: dict[str, dict], where: str) -> list[str]:
    """Every `pixi run X` a document names is a task."""
    names = sorted(set(re.findall(r"pixi run ([A-Za-z0-9_][\w\-]*)", text)))
    return [
        f"{where}: names `pixi run {n}` but pixi.toml has no task {n!r}: add it or fix the text"
        for n in names
        if n not in tasks
    ]


def _own_nodes(func: ast.AST):
    """The nodes of a function body, without those of functions or classes nested in it."""
    todo = list(ast.iter_child_nodes(func))
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue  # code that may never run proves nothing
        yield node
        todo.extend(ast.iter_child_nodes(node))


@functools.cache
def _expect_checks() -> frozenset[str]:
    """The checks common/expect.py lists in __all__, read without importing it (and torch)."""
    tree = ast.parse((REPO_ROOT / "common" / "expect.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__all__":
            return frozenset(ast.literal_eval(node.value))
    raise ValueError("common/expect.py has no __all__ listing its checks")


def _asserts(func: ast.AST) -> bool:
    """Does this test assert something (a non-constant assert, pytest.raises/warns, assert_*())?"""
    for node in _own_nodes(func):
        if isinstance(node, ast.Assert) and not isinstance(node.test, ast.Constant):
            return True
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in ("raises", "warns", "fail") or name.startswith("assert"):
                return True
            if isinstance(f, ast.Attribute) and getattr(f.value, "id", "") == "expect":
                if name in _expect_checks():  # common.expect's checks raise AssertionError
                    return True
    return False


def assert_no_problems(problems: list[str]) -> None:
    """Assert there are none, printing each on its own line (not pytest's list diff)."""
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)


def assertion_problems(paths: list[Path]) -> list[str]:
    """No `def test_*` lacks an assertion."""
    problems = []
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if node.name.startswith("test") and not _asserts(node):
                    rel = path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path
                    problems.append(f"{rel.as_posix()}:{node.lineno} {node.name} asserts nothing")
    return problems


def _cases(junit: Path):
    """(test name, failure or error element or None, skip reason) for every case of a JUnit report."""
    for case in ET.parse(junit).getroot().iter("testcase"):
        bad = case.find("failure") if case.find("failure") is not None else case.find("error")
        skipped = case.find("skipped")
        reason = "" if skipped is None else skipped.get("message", "") + (skipped.text or "")
        yield f"{case.get('classname')}::{case.get('name')}", bad, reason


def _names_a_todo(text: str, step: str) -> bool:
    """Does `text` name a TODO of `step`?"""
    todo = todo_in(text)
    return todo is not None and split_id(todo)[0] == step


def todo_id_problems(folder: Path) -> list[str]:
    """Every TODO region of the step's solution has an id that starts with the step's name."""
    problems = []
    for todo, entry in at(folder).regions().items():
        if problem := id_problem(todo, folder.name):
            region = entry.regions[0]
            problems.append(f"{folder.name}: {region.where}:{region.line}: {problem}")
    return problems


def starter_run(folder: Path, junit: Path, steps_dir: Path | None = None) -> tuple[int, list[str]]:
    """Run a step's tests against its untouched starter; return (exit code, problems).

    Every test fails with a NotImplementedError naming a TODO of the step (or skips because an
    optional TODO of the step is not written), except tests marked `given`: those call only given
    code, so they must pass. The exit code is the one of the run without the given tests.
    """
    args = [str(folder / "tests"), "--impl", "starter", "-qq", "--tb=line"]
    given = junit.with_name(junit.stem + ".given.xml")
    runs = {junit: run_pytest([*args, "-m", "not given", f"--junitxml={junit}"], steps_dir)}
    runs[given] = run_pytest([*args, "-m", "given", f"--junitxml={given}"], steps_dir)
    step, code = folder.name, runs[junit]
    missing = [r for r in runs if not r.is_file()]
    if problems := [f"{step}: no {r.name} from the starter run (exit {runs[r]})" for r in missing]:
        return code, problems
    cases = list(_cases(junit))
    for name, bad, skipped in cases:
        text = "" if bad is None else bad.get("message", "") + (bad.text or "")
        if bad is None and skipped and not _names_a_todo(skipped, step):
            problems.append(
                f"{step}: {name} skips on the untouched starter for a reason other than "
                "an optional TODO not written"
            )
        elif bad is None and not skipped:
            problems.append(
                f"{step}: {name} passes on the untouched starter "
                "(mark it given if it calls only given code)"
            )
        elif bad is not None and "NotImplementedError" not in text:
            problems.append(f"{step}: {name} fails on the starter without NotImplementedError")
        elif bad is not None and not _names_a_todo(text, step):
            problems.append(
                f"{step}: {name} hits a NotImplementedError that names no TODO of the step "
                f"(an id starts with the step's folder name: TODO({step} task 1: name))"
            )
    if not cases:
        problems.append(f"{step}: no tests ran against the starter (exit {code})")
    problems += [
        f"{step}: {name} is marked given but fails on the untouched starter (it runs TODO code)"
        for name, bad, _ in _cases(given)
        if bad is not None
    ]
    return code, problems
