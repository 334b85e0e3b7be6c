"""A step's curated bugs, one protocol for every step: a `Bug` says what it breaks and the fix, and
`broken_copy` builds a fresh copy of the reference module that commits it."""

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from common.loader import load_fresh


@dataclass(frozen=True)
class Bug:
    """One curated bug: what a student sees, the fix in words, and how a copy commits it."""

    name: str
    breaks: str  # what it breaks, as the student sees it: the handout's Symptom
    fix: str  # what the student's code should do instead
    check: str = ""  # the check that must name it (Step 5's, Step 6's)
    hint: str = ""  # what a proof should assert to catch it (Step 4's scorecard)
    inject: Callable[[ModuleType], None] | None = None  # patches a fresh copy of the module
    old: str = ""  # or: a line of the reference (its comment left out), exactly once in it ...
    new: str = ""  # ... and what the bug puts there
    settings: dict = field(default_factory=dict)  # what the step's own `broken` reads (lab-01's)
    # How the check recognises it, beyond its test failing: words its failure says, and tests the
    # bug leaves passing (a failure of one is another bug); the table's "Recognised by" column.
    says: str = ""
    passes: tuple[str, ...] = ()


NO_MORE = "its test failing"  # the "Recognised by" cell of a bug its failing test alone recognises


def recognised_by(bug: Bug) -> str:
    """The symptom table's "Recognised by" cell: what the failure says, the tests still passing."""
    said = [f'the failure saying "{bug.says}"'] if bug.says else []
    return "; ".join(said + [f"{test} passing" for test in bug.passes]) or NO_MORE


def recognition(cell: str) -> tuple[str, tuple[str, ...]]:
    """(what the failure says, the tests that must pass) read back from a "Recognised by" cell."""
    said = re.search(r'the failure saying "([^"]*)"', cell)
    return (said[1] if said else ""), tuple(re.findall(r"([\w:.\[\]-]+) passing", cell))


def replace_line(text: str, bug: Bug, where: str) -> str:
    """`text` with `bug.old`'s line (compared without its comment) replaced by `bug.new`."""
    lines = [line for line in text.splitlines() if line.split("  # ")[0].strip() == bug.old]
    if len(lines) != 1:
        raise ValueError(f"{bug.name}: {bug.old!r} occurs {len(lines)} times in {where}")
    indent = lines[0][: len(lines[0]) - len(lines[0].lstrip())]
    return text.replace(lines[0], indent + bug.new)


def commit(fresh: ModuleType, bug: Bug) -> ModuleType:
    """Make a fresh copy of a module commit `bug`: its line replaced, or its patch applied."""
    if bug.old:
        text = Path(fresh.__file__).read_text(encoding="utf-8")
        code = compile(replace_line(text, bug, Path(fresh.__file__).name), fresh.__file__, "exec")
        exec(code, vars(fresh))  # over the copy: its module stays registered (dataclasses need it)
    if bug.inject is not None:
        bug.inject(fresh)
    return fresh


def broken_copy(
    folder: Path,
    module: str,
    bug: Bug,
    inject: Callable[[ModuleType, Bug], ModuleType] = commit,
) -> ModuleType:
    """A new copy of `module` from `folder` that commits `bug` (`inject`: the step's `broken`)."""
    return inject(load_fresh(folder, module), bug)
