"""A step's curated bugs, one protocol for every step: a `Bug` in its bugs.py is a replacement in
one reference file with what the student sees, the fix and how the check recognises it, and
`broken_copy` builds a fresh copy of that module that commits it."""

import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from common.loader import load_fresh


@dataclass(frozen=True)
class Bug:
    """One curated bug: `old` in the reference becomes `new`; what a student sees and the fix."""

    name: str
    breaks: str  # what it breaks, as the student sees it: the handout's Symptom
    fix: str  # what the student's code should do instead, in words
    old: str = ""  # code of the reference, once in it outside comment lines (it may span lines) ...
    new: str = ""  # ... and what the bug puts there
    check: str = ""  # the check that must name it (Step 5's, Step 6's)
    hint: str = ""  # what a proof should assert to catch it (Step 4's scorecard)
    # How the check recognises it, beyond its test failing: words its failure says, and tests the
    # bug leaves passing (a failure of one is another bug); the table's "Recognised by" column.
    says: str = ""
    passes: tuple[str, ...] = ()
    # the test that fails first with the bug in (file::function, with its [case] if it has one):
    # the symptom table's second column; tests/test_curated_bugs.py runs the suite to hold it true
    fails: str = ""
    # the reference module it is a replacement in, when not its step's [mutation] target (a step
    # with two TODO modules, lab-02: layers and kvcache)
    module: str = ""


NO_MORE = "its test failing"  # the "Recognised by" cell of a bug its failing test alone recognises


def recognised_by(bug: Bug) -> str:
    """The symptom table's "Recognised by" cell: what the failure says, the tests still passing."""
    said = [f'the failure saying "{bug.says}"'] if bug.says else []
    return "; ".join(said + [f"{test} passing" for test in bug.passes]) or NO_MORE


def _in_code(text: str, start: int) -> bool:
    """Does the match at `start` begin outside a comment line (a hint's sketch is not the code)?"""
    line = text[text.rfind("\n", 0, start) + 1 :]
    return not line.lstrip().startswith("#")


def committed(text: str, bug: Bug, where: str) -> str:
    """`text` (a reference file) with `bug.old`, once in its code, replaced by `bug.new`."""
    found = [m.start() for m in re.finditer(re.escape(bug.old), text) if _in_code(text, m.start())]
    if len(found) != 1:
        raise ValueError(f"{bug.name}: {bug.old!r} occurs {len(found)} times in {where}, not once")
    return text[: found[0]] + bug.new + text[found[0] + len(bug.old) :]


def broken_copy(folder: Path, module: str, bug: Bug) -> ModuleType:
    """A new copy of `module` from `folder` that commits `bug`: its source run again, replaced."""
    fresh = load_fresh(folder, module)
    text = Path(fresh.__file__).read_text(encoding="utf-8")
    code = compile(committed(text, bug, Path(fresh.__file__).name), fresh.__file__, "exec")
    exec(code, vars(fresh))  # over the copy: its module stays registered (dataclasses need it)
    return fresh
