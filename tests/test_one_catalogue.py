"""Issue 34: one bug protocol. Each step's curated bugs are one list, `BUGS` in the file its
step.toml [mutation] `symptoms` names, and nothing else in the repository is called BUGS; every
handout's symptom table comes from one generator, tools/symptoms.py."""

import ast

from common import REPO_ROOT
from common.course import course

FOLDERS = ("common", "steps", "tools", "tests", "bench")
# what only the generator writes: the table's first column header and its block
GENERATOR = REPO_ROOT / "tools" / "symptoms.py"
TABLE_MARKS = ('"Symptom"', 'write_block(STEPS_DIR / step / "README.md", "symptoms"')


def sources() -> list:
    """Every Python file of the course's folders, fixtures left out (they break rules on purpose)."""
    files = [p for folder in FOLDERS for p in (REPO_ROOT / folder).rglob("*.py")]
    return [p for p in files if "fixtures" not in p.parts and ".venv" not in p.parts]


def binds_bugs(path) -> int:
    """How many assignments in the file bind the name BUGS."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    targets = [
        t
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign)
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
    ]
    names = [n for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    return sum(n.id == "BUGS" for n in names)


def test_each_step_binds_bugs_once_and_nothing_else_does():
    catalogues = {s.folder / s.mutation["symptoms"] for s in course() if "symptoms" in s.mutation}
    assert catalogues, "no step.toml names a [mutation] symptoms file"
    bound = {p: n for p in sources() if (n := binds_bugs(p))}
    twice = {p.relative_to(REPO_ROOT).as_posix(): n for p, n in bound.items() if n != 1}
    assert not twice, f"a catalogue is one list, bound once: expected 1 binding, got {twice}"
    others = sorted(p.relative_to(REPO_ROOT).as_posix() for p in set(bound) - catalogues)
    assert not others, f"BUGS is each step's one catalogue only; also bound in {others}"
    missing = sorted(p.relative_to(REPO_ROOT).as_posix() for p in catalogues - set(bound))
    assert not missing, f"expected BUGS in every step's symptoms file, not bound in {missing}"


def test_one_module_generates_the_symptom_tables():
    writers = sorted(
        p.relative_to(REPO_ROOT).as_posix()
        for p in sources()
        if p != GENERATOR and p.parent.name != "tests" and p.parent != REPO_ROOT / "tests"
        if any(mark in p.read_text(encoding="utf-8") for mark in TABLE_MARKS)
    )
    assert not writers, f"only tools/symptoms.py makes a symptom table; also {writers}"
    text = GENERATOR.read_text(encoding="utf-8")
    assert all(mark in text for mark in TABLE_MARKS), (
        "tools/symptoms.py no longer writes the tables"
    )
