"""The per-TODO copies a grade runs: the student's module with every other TODO's functions swapped
for the reference's, so a bug is charged once, to the TODO it is in, and the student's helpers stay.

Pure text work (ast, no import): nothing here runs the student's code."""

import ast
import contextlib
import functools
from pathlib import Path

from common import source_lines
from common.course.todos import Todo


def _defs(tree: ast.Module) -> dict[str, ast.AST]:
    """'name' or 'Class.method' -> its def node, and 'Class' -> the class node (module level only)."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef):
            found[node.name] = node
            for inner in node.body:
                if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef):
                    found[f"{node.name}.{inner.name}"] = inner
    return found


def _span(node: ast.AST) -> tuple[int, int]:
    """(first, last) line of a def, decorators included, 1-based."""
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return first, node.end_lineno


def _reindent(lines: list[str], old: int, new: int) -> list[str]:
    """Lines of a def moved from column `old` to column `new` (a class body indented otherwise)."""
    if old == new:
        return lines
    return [" " * new + line[old:] if line[:old].isspace() else line for line in lines]


def swap(student: str, reference: str, functions: list[str]) -> str:
    """The student's source with each of `functions` ('f' or 'Class.m') the reference's: one they
    deleted comes back (at the end of its class or module, its class whole if that is gone too);
    SyntaxError when either does not parse."""
    mine, theirs = ast.parse(student), ast.parse(reference)
    ref_lines, out = source_lines(reference), source_lines(student)
    have, ref = _defs(mine), _defs(theirs)
    edits: list[tuple[int, int, list[str]]] = []  # (first, last) lines of `out` -> new lines
    appended: list[str] = []
    for name in functions:
        if name not in ref:
            continue  # not a def of the reference (a region outside any function): left as is
        first, last = _span(ref[name])
        body = ref_lines[first - 1 : last]
        if name in have:
            at, end = _span(have[name])
            body = _reindent(body, ref[name].col_offset, have[name].col_offset)
            edits.append((at, end, body))
        elif "." in name and (cls := have.get(name.split(".")[0])) is not None:
            indent = cls.body[0].col_offset if cls.body else 4
            body = _reindent(body, ref[name].col_offset, indent)
            edits.append((cls.end_lineno + 1, cls.end_lineno, body))
        elif "." in name:  # the whole class is gone: the reference's class, once
            cls_first, cls_last = _span(ref[name.split(".")[0]])
            block = ref_lines[cls_first - 1 : cls_last]
            if block not in [appended[i : i + len(block)] for i in range(len(appended))]:
                appended += ["", "", *block]
        else:
            appended += ["", "", *body]
    for at, end, body in sorted(edits, key=lambda e: e[0], reverse=True):  # bottom up
        out[at - 1 : end] = body
    return "\n".join(out + appended) + "\n"


def variant(
    starter: dict[str, str], solution: dict[str, str], todos: dict[str, Todo], mine: str,
    needs: set[str] | None = None,
) -> dict[str, str]:  # fmt: skip
    """The starter files (relative path -> text) with every TODO but `mine` (of `needs`, if given:
    those its tests run) the reference's; a file that does not parse even so stays the student's
    if it holds `mine` (its fault), else becomes the reference's (the other TODOs are not charged
    for it)."""
    by_file: dict[str, list[str]] = {}
    for todo in todos.values():
        if todo.id != mine and (needs is None or todo.id in needs):
            by_file.setdefault(todo.rel, []).extend(todo.functions)
    holds_mine = {todos[mine].rel} if mine in todos else set()
    out = dict(starter)
    for rel, functions in by_file.items():
        text = starter.get(rel)
        if text is None:  # the submission lacks the file: the generated starter stands for it
            continue
        try:
            out[rel] = swap(text, solution[rel], functions)
        except SyntaxError as error:  # the slip is charged to the function it is in, only
            text = _mend(text, solution[rel], functions, error.lineno or 0)
            try:
                out[rel] = swap(text, solution[rel], functions)
            except SyntaxError:
                out[rel] = text if rel in holds_mine else solution[rel]
    return out


def given_from_reference(
    files: dict[str, str], reference: dict[str, str], given: list[str]
) -> dict[str, str]:
    """The files with each function the starter gives (`given`: no TODO's, 'f' or 'Class.m') the
    reference's: no student writes it, so an edit to it (a `generate` or `train` that passes its
    callers' tests whatever they do) is never graded; a file that does not parse stays as is."""
    out = dict(files)
    for rel, text in files.items():
        if rel not in reference:
            continue
        defs = _def_names(reference[rel])  # the reference's, read once for every TODO's copy
        names = [q for q in given if q in defs]
        with contextlib.suppress(SyntaxError):  # the TODO copy already says why, charged once
            out[rel] = swap(text, reference[rel], names) if names else text
    return out


@functools.cache
def _def_names(text: str) -> frozenset[str]:
    """The names _defs finds in a module's text."""
    return frozenset(_defs(ast.parse(text)))


def _mend(student: str, reference: str, functions: list[str], line: int) -> str:
    """A file that does not parse, with the function its error sits in taken from the reference
    when that function is one of `functions` (another TODO's): found by its `def` line and
    indentation, as no parser can read the file."""
    lines, ref = source_lines(student), _defs(ast.parse(reference))
    starts = [
        (i, len(ln) - len(ln.lstrip()), name)
        for i, ln in enumerate(lines)
        for name in functions
        if ln.lstrip().startswith(f"def {name.split('.')[-1]}(")
    ]
    before = [s for s in starts if s[0] < line]
    if not before or (name := before[-1][2]) not in ref:
        return student
    first, indent = before[-1][0], before[-1][1]
    last = first + 1
    while last < len(lines) and (
        not lines[last].strip() or len(lines[last]) - len(lines[last].lstrip()) > indent
    ):
        last += 1
    a, b = _span(ref[name])
    body = _reindent(source_lines(reference)[a - 1 : b], ref[name].col_offset, indent)
    return "\n".join([*lines[:first], *body, *lines[last:]]) + "\n"


def read_tree(folder: Path) -> dict[str, str]:
    """Every .py file under `folder`: relative posix path -> text."""
    return {
        p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8", errors="replace")
        for p in sorted(folder.rglob("*.py"))
        if "__pycache__" not in p.parts and p.is_file() and not p.is_symlink()
    }
