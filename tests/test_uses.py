"""A step loads another step's module only where its step.toml's [uses] says so: read from the
steps' code, not checked by the loader at every load (it finds files from folders alone)."""

import ast
from pathlib import Path

from common import STEPS_DIR
from common.course import course_step, step_names

FIX = "add {module!r} to {step} = [...] under [uses] in steps/{caller}/step.toml"


def references(path: Path) -> list[tuple[int, str | None, str | None]]:
    """(line, step, module) of each reference(...) call in a file; None for a name not written out."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        func = getattr(node, "func", None)
        if isinstance(node, ast.Call) and "reference" in (
            getattr(func, "id", ""),
            getattr(func, "attr", ""),
        ):
            args = [a.value if isinstance(a, ast.Constant) else None for a in node.args[:2]]
            found.append((node.lineno, *(args + [None, None])[:2]))
    return found


def undeclared(folder: Path, uses: dict[str, list[str]]) -> list[str]:
    """One line per reference(...) of a step's files that its [uses] does not declare."""
    wrong = []
    for path in sorted(folder.rglob("*.py")):
        if {"backups", "__pycache__"} & set(path.parts):
            continue
        for line, step, module in references(path):
            where = f"steps/{folder.name}/{path.relative_to(folder).as_posix()}:{line}"
            if step is None or module is None:
                wrong.append(f"{where}: write the step and the module out, so [uses] can be read")
            elif step != folder.name and module not in uses.get(step, []):  # its own: free
                fix = FIX.format(module=module, step=step, caller=folder.name)
                wrong.append(
                    f"{where}: {folder.name} loads {step}'s {module} without declaring it: {fix}"
                )
    return wrong


def test_every_step_declares_what_it_loads_of_earlier_steps():
    found = {s: undeclared(STEPS_DIR / s, course_step(s).uses) for s in step_names()}
    assert sum(map(len, found.values())) == 0, "\n".join(
        w for lines in found.values() for w in lines
    )
    assert any(references(p) for p in STEPS_DIR.rglob("*.py")), "no reference(...) read at all"


def test_an_undeclared_load_is_named_with_the_line_that_declares_it(tmp_path):
    """The contract bites: a probe in a step folder loads step-03's data, [uses] silent or not."""
    step = tmp_path / "lab-01"
    step.mkdir()
    (step / "probe.py").write_text(
        'from common.loader import reference\n\ndata = reference("step-03", "data")\n',
        encoding="utf-8",
    )
    assert undeclared(step, {"step-03": ["data"]}) == []
    assert undeclared(step, {}) == [
        "steps/lab-01/probe.py:3: lab-01 loads step-03's data without declaring it: add 'data' to "
        "step-03 = [...] under [uses] in steps/lab-01/step.toml"
    ]
