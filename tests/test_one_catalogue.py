"""One bug protocol: every curated bug is a `common.bugs.Bug`, found by its type, held in its
step's bugs.py and nowhere else, and each commits into its step's reference as a replacement."""

import importlib

import pytest

from common import REPO_ROOT
from common.bugs import Bug, broken_copy, committed
from common.course import course
from common.loader import load_file
from tools.symptoms import targets

STEPS = [s for s in course() if not s.checkpoint]
CASES = [(step, bug.module or module, bug) for step, module, bugs in targets() for bug in bugs]


def bugs_in(module) -> list[Bug]:
    """The Bug objects a module holds at its top level, alone or in a list, tuple or dict."""
    found = []
    for value in vars(module).values():
        items = value.values() if isinstance(value, dict) else value
        items = items if isinstance(value, list | tuple | dict) else [value]
        found += [item for item in items if isinstance(item, Bug)]
    return found


def modules() -> dict[str, object]:
    """Every module of common/ and tools/, and every step's own top-level files but its bugs.py."""
    found = {}
    for folder in ("common", "tools"):
        for path in sorted((REPO_ROOT / folder).glob("*.py")):
            name = f"{folder}.{path.stem}".removesuffix(".__init__")
            found[name] = importlib.import_module(name)
    for step in STEPS:
        for path in sorted(step.folder.glob("*.py")):
            if path.name != "bugs.py":
                found[path.relative_to(REPO_ROOT).as_posix()] = load_file(path)
    return found


def test_every_step_has_one_catalogue_in_its_bugs_py():
    empty = [s.name for s in STEPS if not s.bugs()]
    assert not empty, f"expected curated bugs in every step's bugs.py (BUGS), none in {empty}"


def test_no_module_holds_a_bug_of_its_own():
    catalogued = [bug for step in STEPS for bug in step.bugs()]
    extra = {
        name: [bug.name for bug in found if bug not in catalogued]
        for name, module in modules().items()
        if (found := bugs_in(module))
    }
    extra = {name: bugs for name, bugs in extra.items() if bugs}
    assert not extra, f"expected every curated bug in its step's bugs.py, found others in {extra}"


@pytest.mark.parametrize("case", CASES, ids=[f"{s}-{b.name}" for s, _, b in CASES])
def test_each_bug_commits_into_its_reference(case):
    step, module, bug = case
    layout = next(s for s in STEPS if s.name == step)
    source = (layout.solution / f"{module}.py").read_text(encoding="utf-8")
    broken_copy(layout.solution, module, bug)  # runs: a ValueError unless `old` is there once
    assert committed(source, bug, f"{module}.py") != source, f"{bug.name!r} changes nothing"
    assert bug.fails, f"steps/{step}/bugs.py: {bug.name!r} names no test it fails first (fails=)"
