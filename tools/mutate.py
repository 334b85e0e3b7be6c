"""Generic mutation testing of the solutions: `python -m tools.mutate [--list] [--only TEXT]`.

Each mutant changes one thing in one function of a solution file and the step's own suite runs
against it in this process; every survivor must be in its step's EQUIVALENT, with the reason."""

import argparse
import ast
import contextlib
import copy
import io
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from common import shown
from common.course import course, course_step
from common.loader import load_fresh, override
from tools import run_pytest
from tools.symptoms import SUITE_ARGS

# (step, solution module): the files mutated, from each step.toml's [mutation] modules
TARGETS = [(s.name, m) for s in course() for m in s.mutation.get("modules", [])]
TIMEOUT = 60  # seconds per mutant: one that loops or crawls counts as killed

# what each operator becomes: a comparison, then an arithmetic or bitwise operator
CMP = {ast.Lt: [ast.LtE, ast.Gt], ast.LtE: [ast.Lt, ast.GtE], ast.Gt: [ast.GtE, ast.Lt]}
CMP |= {ast.GtE: [ast.Gt, ast.LtE], ast.Eq: [ast.NotEq], ast.NotEq: [ast.Eq]}
CMP |= {ast.Is: [ast.IsNot], ast.IsNot: [ast.Is], ast.In: [ast.NotIn], ast.NotIn: [ast.In]}
BIN = {ast.Add: [ast.Sub], ast.Sub: [ast.Add], ast.Mult: [ast.Div], ast.Div: [ast.Mult]}
BIN |= {ast.FloorDiv: [ast.Div], ast.Mod: [ast.FloorDiv], ast.Pow: [ast.Mult]}
BIN |= {ast.MatMult: [ast.Mult], ast.BitAnd: [ast.BitOr], ast.BitOr: [ast.BitAnd]}
INF = {"float('-inf')": "inf", "float('inf')": "-inf"}  # float("-inf") -> 0.0 or its opposite


def equivalents(step: str) -> dict[str, str]:
    """The step's survivors no test can kill (Mutant.key -> why): its bugs.py's EQUIVALENT."""
    return course_step(step).equivalents()


@dataclass
class Mutant:
    """One change to one statement of a solution file."""

    step: str
    module: str
    index: int  # its place in the enumeration of the file's mutation sites
    line: int
    function: str
    before: str  # the statement as written (a compound statement's header only)
    after: str  # the same statement mutated

    @property
    def key(self) -> str:
        return f"{self.module} {self.function}: {self.before} => {self.after}"


def _text(stmt: ast.AST) -> str:
    """One line of source for a statement; a compound statement gives its header only."""
    if isinstance(stmt, ast.If | ast.While):
        return f"{'if' if isinstance(stmt, ast.If) else 'while'} {ast.unparse(stmt.test)}:"
    if isinstance(stmt, ast.For):
        return f"for {ast.unparse(stmt.target)} in {ast.unparse(stmt.iter)}:"
    if isinstance(stmt, ast.FunctionDef):
        return f"def {stmt.name}({ast.unparse(stmt.args)}):"
    return " ".join(ast.unparse(stmt).split())


def _numbers(value: int | float, like: ast.AST) -> list:
    """Makers of a numeric constant's replacements: off by one either way, and 0, 1, -1."""
    if isinstance(value, int):
        options = [value + 1, value - 1, 0, 1, -1]
    else:
        options = [value + 1.0, 0.0, 1.0, -1.0]
    options = [o for i, o in enumerate(options) if o != value and o not in options[:i]]
    return [lambda o=o: _const(o, like) for o in options]


def _const(value, like: ast.AST) -> ast.AST:
    """A constant node, negative numbers written as -(n) like the parser does."""
    node = ast.Constant(value) if value >= 0 else ast.UnaryOp(ast.USub(), ast.Constant(-value))
    return ast.copy_location(node, like)


class Mutator(ast.NodeTransformer):
    """Walks a module's functions; counts mutation sites and applies the one numbered `target`."""

    def __init__(self, target: int = -1):
        self.target, self.count, self.hit = target, 0, None
        self.lines: list[int] = []  # the line of each site, in order
        self.stmts: list[ast.stmt] = []
        self.functions: list[str] = []

    def _sites(self, node: ast.AST, makes: list, removal: bool = False) -> ast.AST:
        """Number each possible mutation of `node`; apply the target's if it is among them."""
        if not self.functions:
            return node  # module level: imports and definitions only
        result = node
        for make in makes:
            # a node made by the walk has no line of its own: its statement's
            self.lines.append(getattr(node, "lineno", None) or self.stmts[-1].lineno)
            if self.count == self.target:
                stmt = self.stmts[-1]
                self.hit = (node.lineno, ".".join(self.functions), _text(stmt), stmt, removal)
                result = ast.copy_location(make(), node)
            self.count += 1
        return result

    def visit(self, node):
        if not self.functions or not isinstance(node, ast.stmt):
            return super().visit(node)
        docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if docstring or isinstance(node, ast.FunctionDef | ast.ClassDef):
            return super().visit(node)
        self.stmts.append(node)
        result = self._sites(node, [ast.Pass], removal=True)  # the statement removed
        result = super().visit(node) if result is node else result
        self.stmts.pop()
        return result

    def visit_ClassDef(self, node):
        self.functions.append(node.name)
        node.body = [self.visit(stmt) for stmt in node.body]
        self.functions.pop()
        return node

    def visit_FunctionDef(self, node):
        self.functions.append(node.name)
        self.stmts.append(node)
        node.args.defaults = [self.visit(d) for d in node.args.defaults]
        node.args.kw_defaults = [d if d is None else self.visit(d) for d in node.args.kw_defaults]
        self.stmts.pop()
        node.body = [self.visit(stmt) for stmt in node.body]
        self.functions.pop()
        return node

    def visit_JoinedStr(self, node):
        return node  # an error message: its wording is not behaviour

    def visit_Raise(self, node):
        return node  # the raise itself can be removed (in visit); its message is left alone

    def visit_If(self, node):
        if not (isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not)):
            node = self._sites(node, [lambda: self._negated(node)])  # `not` dropped: visit_UnaryOp
        return self.generic_visit(node)

    visit_While = visit_If

    def _negated(self, node):
        node.test = ast.UnaryOp(ast.Not(), node.test)  # in place: the statement stays the same node
        return node

    def visit_IfExp(self, node):
        negated = lambda: ast.IfExp(ast.UnaryOp(ast.Not(), node.test), node.body, node.orelse)  # noqa: E731
        return self.generic_visit(self._sites(node, [negated]))

    def visit_Compare(self, node):
        def swap(i, new):
            return ast.Compare(
                node.left, [*node.ops[:i], new(), *node.ops[i + 1 :]], node.comparators
            )

        ops = [(i, new) for i, op in enumerate(node.ops) for new in CMP.get(type(op), [])]
        return self.generic_visit(self._sites(node, [lambda p=p: swap(*p) for p in ops]))

    def visit_BinOp(self, node):
        news = BIN.get(type(node.op), [])
        makes = [lambda new=new: ast.BinOp(node.left, new(), node.right) for new in news]
        return self.generic_visit(self._sites(node, makes))

    def visit_BoolOp(self, node):
        other = ast.Or if isinstance(node.op, ast.And) else ast.And
        return self.generic_visit(self._sites(node, [lambda: ast.BoolOp(other(), node.values)]))

    def visit_UnaryOp(self, node):
        number = node.operand
        if isinstance(node.op, ast.USub) and isinstance(number, ast.Constant):
            if type(number.value) in (int, float):  # -3 or -0.5: a negative number
                return self._sites(node, _numbers(-number.value, node))
        if isinstance(node.op, ast.Not | ast.Invert | ast.USub):
            node = self._sites(node, [lambda: node.operand])  # drop the not, ~ or minus
        return self.generic_visit(node)

    def visit_Constant(self, node):
        if isinstance(node.value, bool):
            return self._sites(node, [lambda: ast.Constant(not node.value)])
        if type(node.value) in (int, float):
            return self._sites(node, _numbers(node.value, node))
        return node

    def visit_Call(self, node):
        named = getattr(node.func, "id", "") == "float"
        if named and (flipped := INF.get(ast.unparse(node))) is not None:
            flip = ast.Call(node.func, [ast.Constant(flipped)], [])
            return self._sites(node, [lambda: ast.Constant(0.0), lambda: flip])
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "transpose":
            node = self._sites(node, [lambda: func.value])  # no transpose at all
        return self.generic_visit(node)


def mutants(
    step: str, module: str, within: range | None = None
) -> Iterator[tuple[Mutant, ast.Module]]:
    """Every distinct mutant of the file (of its lines `within`), with its tree, in the file's
    order, made as they are asked for; duplicates and no-ops are dropped."""
    path = course_step(step).solution / (module.replace(".", "/") + ".py")
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    counter = Mutator()
    counter.visit(copy.deepcopy(tree))
    seen = {ast.unparse(tree)}
    for index in range(counter.count):
        if within is not None and counter.lines[index] not in within:
            continue  # each mutant copies the whole tree: only the lines asked for
        mutator = Mutator(index)
        mutated = ast.fix_missing_locations(mutator.visit(copy.deepcopy(tree)))
        if (source := ast.unparse(mutated)) in seen:
            continue
        seen.add(source)
        line, function, before, stmt, removal = mutator.hit
        after = "pass" if removal else _text(stmt)
        yield Mutant(step, module, index, line, function, before, after), mutated


def _alarm(signum, frame):
    raise TimeoutError(f"mutant ran longer than {TIMEOUT} s")


def run_suite(step: str, module: str, tree: ast.Module | None, files: list[Path]) -> int:
    """pytest's exit code on the step's test `files`, `module` replaced by `tree` (None: as it is);
    1 for a mutant that does not import or runs too long."""
    fresh = load_fresh(course_step(step).solution, module)
    if tree is not None:
        try:
            exec(compile(tree, fresh.__file__, "exec"), fresh.__dict__)
        except Exception:
            return 1  # a module that does not import fails every test
    timed = hasattr(signal, "SIGALRM")  # a mutant that loops forever is stopped, except on Windows
    previous = signal.signal(signal.SIGALRM, _alarm) if timed else None
    if timed:
        signal.alarm(TIMEOUT)
    try:
        with override(step, module, fresh), contextlib.redirect_stdout(io.StringIO()):
            return run_pytest([*map(str, files), *SUITE_ARGS])
    except TimeoutError:
        return 1
    finally:
        if timed:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)


def fastest_first(step: str, module: str) -> list[Path] | None:
    """The step's test files that run a test, quickest first (so -x stops early), or None if one
    fails unmutated."""
    timed = []
    for path in sorted(course_step(step).tests.glob("test_*.py")):
        start, code = time.monotonic(), run_suite(step, module, None, [path])
        if code == pytest.ExitCode.NO_TESTS_COLLECTED:
            continue  # every test of it sits out (SUITE_ARGS): slow, course or whole_run
        if code != 0:
            print(f"{shown(path)} fails on the unmutated solution: fix that first")
            return None
        timed.append((time.monotonic() - start, path))
    return [path for _, path in sorted(timed)]


def score(step: str, module: str, todo: list, where: str) -> tuple[int, str]:
    """Run the file's mutants; print each survivor; (the unexplained ones, the file's line)."""
    files = fastest_first(step, module)
    if files is None:
        return -1, ""
    start, killed, equivalent, survived, known = time.monotonic(), 0, 0, 0, equivalents(step)
    for n, (m, tree) in enumerate(todo, start=1):
        if run_suite(step, module, tree, files) != 0:
            killed += 1
        elif m.key in known:
            equivalent += 1
            print(f"  equivalent {where}:{m.line} {m.key}\n    ({known[m.key]})")
        else:
            survived += 1
            print(f"  SURVIVED {where}:{m.line} {m.key}", flush=True)
        if n % 25 == 0:
            print(f"  {where}: {n}/{len(todo)} run", file=sys.stderr, flush=True)
    live = len(todo) - equivalent
    return survived, (
        f"{where}: {len(todo)} mutants, {killed} killed, {equivalent} equivalent, "
        f"{survived} survived: {100 * killed / live if live else 100.0:.1f}% of non-equivalent "
        f"mutants killed ({time.monotonic() - start:.0f} s)"
    )


def main(argv: list[str] | None = None) -> int:
    """Run every mutant of every target; print survivors; exit 1 if one is not equivalent."""
    parser = argparse.ArgumentParser(prog="python -m tools.mutate", description=__doc__)
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    parser.add_argument("--only", default="", help="only mutants whose key contains this text")
    parser.add_argument("--module", action="append", help="only these modules (e.g. attention)")
    args = parser.parse_args(argv)
    unexplained, totals = 0, []
    for step, module in [t for t in TARGETS if not args.module or t[1] in args.module]:
        todo = [(m, tree) for m, tree in mutants(step, module) if args.only in m.key]
        where = shown(course_step(step).solution / f"{module.replace('.', '/')}.py")
        if args.list:
            print("".join(f"{where}:{m.line} {m.key}\n" for m, _ in todo), end="")
            continue
        survived, total = score(step, module, todo, where)
        if survived < 0:
            return 2
        unexplained, totals = unexplained + survived, [*totals, total]
    if totals:
        print("\n".join(totals))
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
