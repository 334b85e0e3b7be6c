"""The check's collector, a pytest plugin registered for `--impl starter`: each test's result and
the TODO functions it ran (sys.monitoring); at the end, each step's status (common.check.status) shown
as one screen (common.check.screen), or written as --check-json."""

import ast
import functools
import math
import re
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from common import STEPS_DIR, hint, shown, source_lines, write_json
from common.check.guard import Judges, TookTooLong, Watchdog, refusal
from common.check.screen import RunFacts, fit, progress_line, step_lines, symptom_tests
from common.check.status import (
    Place,
    StarterFacts,
    StepStatus,
    TestResult,
    error_line,
    record,
    step_status,
)
from common.course import course_step, predictions
from common.course.todos import Todo, first_student_line, order_key, shipped_line, student_line
from common.expect import DEF_LINE, ONCE, ORDER
from common.loader import load, source

STEPS_UNDER_TEST = pytest.StashKey[list[str]]()
BROKEN = pytest.StashKey[dict[str, str]]()  # step -> the one line that says why it cannot run
JUDGES = pytest.StashKey[Judges]()  # what the tests judge with, as it was before student code ran


def code_place(code) -> tuple[str, int]:
    """A function's code, as plain data: (file, first line)."""
    return code.co_filename, code.co_firstlineno


SHIPPED = "this code ships with a bug; run the exercise, then repair it"  # its Next line's text


def _starter_of(step: str, solution_file: Path) -> Path:
    """The starter file that stands for a solution file of the step."""
    layout = course_step(step)
    return layout.starter / solution_file.relative_to(layout.marked)


@functools.cache
def _lines(path: Path) -> tuple[str, ...]:
    """A file's lines as Python reads them (a BOM, a coding cookie); each starter file read once."""
    return tuple(source_lines(source(path)))


def starter_facts(step: str, todos: dict[str, Todo]) -> StarterFacts:
    """What the step's starter says now: its open TODOs, where each TODO function's own code starts."""
    found = {
        todo: Place(shown(path), line, region.parts.get("CONTRACT", ""))
        for todo, (path, line, region) in course_step(step).open_todos(todos).items()
    }
    starts = {}
    for todo in todos.values():
        path = _starter_of(step, todo.file)
        if todo.shipped and path.is_file() and (line := shipped_line(todo, source(path))):
            found[todo.id] = Place(shown(path), line, SHIPPED)  # open while that code is unchanged
        for function in todo.functions:
            line = first_student_line(_lines(path), todo.given, function) if path.is_file() else 1
            starts[(todo.id, function)] = Place(shown(path), line)
    shipped = frozenset(t for t in todos if todos[t].shipped)
    return StarterFacts(found, shipped, starts, predictions.unpredicted(step, list(todos)))


# a return's calls that change a value's dtype, or merge axes, but cannot put a number in a wrong
# place of a right shape (a reshape or a view, that split an axis, can: they are the bug's line)
HANDS_ON = {"to", "float", "double", "half", "bfloat16", "contiguous", "flatten"}
CASTS = {"to", "float", "double", "half", "bfloat16", "type"}  # the calls that set a dtype
PLACEHOLDERS = {"zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like"}
SNAKE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+_?(?![\w])")  # zero_grad, clip_grad_norm_
CALLED = re.compile(r"(?<![\w.])([a-z]\w*)\(")  # model(x, y): a name the message writes as called
DOTTED = re.compile(r"(?<![\w.])([a-z]\w*\.[a-z]\w*)\(")  # angle.cos(): a local's method, called
ABOUT_LAYOUT = re.compile(r"dtype|\.shape\b")  # a failure of a dtype or a shape: a cast's, a view's
# expect.close's words: the worst entry's index, and how many of all the entries differ
WORST_ENTRY = re.compile(r"\[(\d+(?:, \d+)*)\]: expected .*\((\d+) of (\d+) entries differ\)")


@functools.cache
def _function(code) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """A TODO function's own tree, found by its code's first line (a decorator's, if any)."""
    tree = ast.parse(source(Path(code.co_filename)))
    defs = (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))
    starts = lambda n: {n.lineno, *(d.lineno for d in n.decorator_list)}  # noqa: E731
    return next((n for n in defs if code.co_firstlineno in starts(n)), None)


def _falls_off(code, line: int) -> bool:
    """Is `line` in the function's last statement, after which it returns None (no return)?"""
    function = _function(code)
    last = function.body[-1] if function else None
    return last is not None and last.lineno <= line <= last.end_lineno


@functools.cache
def _statements(code) -> dict[int, ast.stmt]:
    """Each line of a function's simple statements (assignments, returns) -> its statement."""
    function = _function(code)
    found, todo = {}, list(function.body) if function else []
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Return):
            found.update(dict.fromkeys(range(node.lineno, node.end_lineno + 1), node))
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            todo += [n for n in ast.iter_child_nodes(node) if isinstance(n, ast.stmt)]
    return found


@functools.cache
def _effects(code) -> dict[int, ast.Expr]:
    """Each line of a function's calls made for their effect alone (`g.set_state(s)`) -> it."""
    function = _function(code)
    return {
        line: node
        for node in (ast.walk(function) if function else ())
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
        for line in range(node.lineno, node.end_lineno + 1)
    }


def _base(target) -> tuple[set[str], bool]:
    """(the names an assignment's target writes, whether it assigns a name whole)."""
    if isinstance(target, ast.Tuple | ast.List | ast.Starred):
        parts = [_base(t) for t in getattr(target, "elts", [getattr(target, "value", None)])]
        return set().union(*(p[0] for p in parts)), any(p[1] for p in parts)
    if isinstance(target, ast.Name):
        return {target.id}, True
    while isinstance(target, ast.Subscript | ast.Attribute):  # pe[:, 0::2] writes into pe
        target = target.value
    return ({target.id} if isinstance(target, ast.Name) else set()), False


def _names(statement: ast.stmt) -> tuple[set[str], set[str], bool]:
    """(the names a statement reads, the names it assigns or writes into, whether it assigns a
    whole value: a name, not only entries of one)."""
    targets = getattr(statement, "targets", None) or [getattr(statement, "target", None)]
    written = [_base(t) for t in targets if t]
    stored = set().union(*(w[0] for w in written))
    loads = ast.walk(statement)
    read = {n.id for n in loads if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    read |= stored if isinstance(statement, ast.AugAssign) else set()
    return read, stored, any(w[1] for w in written)


def _handed_on(value) -> str | None:
    """The local a return hands on through HANDS_ON's calls only (y.to(x.dtype)), if any."""
    steps = 0
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        if value.func.attr not in HANDS_ON:
            return None
        value, steps = value.func.value, steps + 1
    return value.id if steps and isinstance(value, ast.Name) else None


def _placeholder(statement: ast.stmt) -> bool:
    """torch.zeros(T, d) and its kin: a tensor that later writes fill, no value of its own."""
    value = statement.value if isinstance(statement, ast.Assign) else None
    func = value.func if isinstance(value, ast.Call) else None
    return getattr(func, "attr", getattr(func, "id", None)) in PLACEHOLDERS


@functools.cache
def _calls(code) -> dict[str, tuple[int, ...]]:
    """Each snake_case function or method a TODO function calls (`optimizer.zero_grad()`,
    `cached_attention(...)`), each argument it calls (`model(x, y)`) and each method of a name
    it calls (`angle.cos()`, `optimizer.step()`) -> its lines."""
    function, calls = _function(code), {}
    handed = {a.arg for a in function.args.args} if function else set()
    for node in ast.walk(function) if function else ():
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name):
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            if SNAKE.fullmatch(name) or (isinstance(node.func, ast.Name) and name in handed):
                calls[name] = (*calls.get(name, ()), node.lineno)
            if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
                dotted = f"{node.func.value.id}.{name}"  # angle.cos(): a local's method
                calls[dotted] = (*calls.get(dotted, ()), node.lineno)
    return calls


COUNTED = re.compile(r"expected 1, got [2-9]")  # a failure that counts a call: one came twice


def _named_calls(code, ran: dict[int, int], error: str) -> list[int]:
    """The lines that ran of the first call a failure's message names (`... (clip_grad_value_)`,
    `model(x, y)`), in the order they last ran: a step's side effect (a gradient, a weight) was
    wrong, not what it returns."""
    calls = _calls(code)
    for name in [*SNAKE.findall(error), *CALLED.findall(error), *DOTTED.findall(error)]:
        if lines := [line for line in calls.get(name, ()) if line in ran]:
            said = _said_whole(code, lines, name.rpartition(".")[2], error)
            return sorted(said or lines, key=ran.__getitem__)
    return []


def _said_whole(code, lines: list[int], name: str, error: str) -> list[int]:
    """Of `lines`, those whose call of `name` the message writes with its arguments as the code
    does (`requires_grad_(False)`, not the `requires_grad_(True)` below it)."""
    function = _function(code)
    return [
        node.lineno
        for node in (ast.walk(function) if function else ())
        if isinstance(node, ast.Call)
        and node.lineno in lines
        and getattr(node.func, "attr", getattr(node.func, "id", None)) == name
        and f"{name}({', '.join(ast.unparse(a) for a in node.args)})" in error
    ]


def _named_call(code, ran: dict[int, int], error: str) -> int | None:
    """The line run last of the first call a failure's message names, or None."""
    return lines[-1] if (lines := _named_calls(code, ran, error)) else None


def _no_op(code, ran: dict[int, int]) -> int | None:
    """The line run last that does nothing, a name alone (`loss.backward` without its call):
    never the right code, so the first suspect."""
    function = _function(code)
    idle = [
        node.lineno
        for node in (ast.walk(function) if function else ())
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Attribute | ast.Name)
        and node.lineno in ran
    ]
    return max(idle, key=ran.__getitem__) if idle else None


def _absent_call(code, error: str) -> bool:
    """Does the message name a method call of one of the function's names (`optimizer.step()`)
    that no line of it makes: where it belongs is after the line the message names."""
    function = _function(code)
    names = {n.id for n in ast.walk(function) if isinstance(n, ast.Name)} if function else set()
    return any(d.split(".")[0] in names and d not in _calls(code) for d in DOTTED.findall(error))


def _in_place(code, ran: dict[int, int]) -> int | None:
    """The line run first whose value is a local changed in place (`pe[:, 0::2] = angle.sin_()`,
    `q @ K.transpose_(-2, -1)`), a local a line run after it reads again: that later line
    computes from a changed value. (A statement of the call alone, `scores.masked_fill_(...)`,
    changes its local on purpose.)"""
    function = _function(code)
    alone = (
        {id(n.value) for n in ast.walk(function) if isinstance(n, ast.Expr)} if function else set()
    )
    changed = {}  # line -> the local its call changes in place
    for node in ast.walk(function) if function else ():
        if (
            isinstance(node, ast.Call)
            and id(node) not in alone
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.attr.endswith("_")
            and not node.func.attr.startswith("_")
            and node.func.attr != "requires_grad_"
            and node.lineno in ran
        ):
            changed[node.lineno] = node.func.value.id
    read_on = {}  # each line that ran -> the names it reads
    for n in ast.walk(function) if changed else ():
        if isinstance(n, ast.Name) and n.lineno in ran:
            read_on.setdefault(n.lineno, set()).add(n.id)
    later = [
        line
        for line, name in changed.items()
        if any(ran[r] > ran[line] and r != line and name in read for r, read in read_on.items())
    ]
    return min(later, key=ran.__getitem__) if later else None


def _early_return(code, ran: dict[int, int]) -> tuple[int, int | None] | None:
    """A return that ran with code after it that never can: a statement of a loop's own body (no
    if around it: the loop never passes twice), or one with statements below it in its block
    (`return loss.item()` above `optimizer.step()`): whatever the failure says, the first
    suspect, with the last line it cut off."""
    function = _function(code)
    blocks = [
        (node, body)
        for node in (ast.walk(function) if function else ())
        for body in (getattr(node, "body", None), getattr(node, "orelse", None))
        if isinstance(body, list)
    ]
    for node, body in blocks:
        for i, statement in enumerate(body):
            if not isinstance(statement, ast.Return) or statement.lineno not in ran:
                continue
            if i + 1 < len(body):  # statements below it: never run
                return statement.lineno, body[-1].end_lineno
            if isinstance(node, ast.For | ast.While) and body is node.body:
                return statement.lineno, None
    return None


def made_lines(code, ran: dict[int, int], error: str) -> tuple[int, int | None, bool]:
    """made_line's line, or the lines that ran from the first to the return (first, return) when
    it is only the return run last (`return attn.proj(out)`): what made a wrong value is among
    them, and nothing in a failing assertion says which; or, when the function stopped on a line
    that is no return (torch refused it, the test said so in its words), the lines that fed that
    line (fed_from), and True. A value made on one line and written into place below it (`pe[:,
    0::2] = ...`) is named with those writes; a wrong dtype where the return casts nothing, by the
    cast run last above it, else by every line that ran (no cast is where one belongs)."""
    if (idle := _no_op(code, ran)) is not None:  # a name alone: never right, the first suspect
        return idle, None, False
    if DEF_LINE in error:  # a default the failure names: the def line, above the body
        return code.co_firstlineno, None, False
    if (early := _early_return(code, ran)) is not None:  # code after it that never runs
        return *early, False
    if (changed := _in_place(code, ran)) is not None:  # a later line read what it changed
        return changed, None, False
    if ORDER in error or ONCE in error and _returns_twice(code, ran):  # the right values, in
        return _last(code, ran), None, False  # another order or one twice: the return's doing
    line, flowed = made_line(code, ran, error)
    twice = _named_calls(code, ran, error) if COUNTED.search(error) else []
    if len(twice) > 1:  # a call made more often than once, on two lines: either may be the extra
        return min(twice), max(twice), False
    if _named_call(code, ran, error) is not None:  # the call, and what it was handed
        start = fed_from(code, ran, line)
        if _absent_call(code, error):  # a call the message names is in no line: from it on
            return start or line, max(ran), False
        return (start, line, False) if start is not None else (line, None, False)
    statement = _statements(code).get(line)
    last = _last(code, ran)
    if flowed and (start := fed_from(code, ran, line)) is not None:
        return start, line, False  # its inputs, made above it, may be what is wrong
    if flowed and (end := _placed(code, ran, line)) is not None:
        return line, end, False  # made here, then written into place: either may be wrong
    stopped = line == last and not isinstance(_innermost(code, last), ast.Return)
    if stopped and "got None" in error and _falls_off(code, last):  # it ended: no return
        return last, None, False
    if stopped and (start := fed_from(code, ran, last)) is not None:
        return start, last, True
    if (reseed := _reseeded(code, ran, line)) is not None:
        return reseed, line, False
    if line != last or not isinstance(statement, ast.Return) or min(ran) >= statement.lineno:
        return line, None, False
    handing = isinstance(statement.value, ast.Name | ast.Tuple)  # `return x, y`: made above
    if "dtype" in error.split(": expected")[0] and not _casts(statement):
        cast = [n for n in ran if (s := _statements(code).get(n)) and _casts(s)]
        if cast:  # the dtype was set above the return: the cast run last set it
            return max(cast, key=ran.__getitem__), None, False
        return min(ran), statement.end_lineno, False  # no cast at all: where one belongs is open
    if ABOUT_LAYOUT.search(error.split(": expected")[0]) and not handing:
        if _handed_on(statement.value) is None:  # `return y.flatten(-2)`: an axis from above?
            return line, None, False  # a dtype's or a shape's: the return's cast or view, as a rule
    return min(ran), statement.end_lineno, False


def _returns_twice(code, ran: dict[int, int]) -> bool:
    """Does the return run last hand one expression on twice (`return k, k`)? Else a member that
    came twice was made so above it (values stored as keys), where made_line looks."""
    returned = _statements(code).get(_last(code, ran))
    if not isinstance(returned, ast.Return) or not isinstance(returned.value, ast.Tuple):
        return False
    members = [ast.unparse(e) for e in returned.value.elts]
    return len(set(members)) < len(members)


def _casts(statement: ast.stmt) -> bool:
    """Does a statement call a cast (`.to(x.dtype)`, `.float()`): where a value's dtype is set."""
    calls = (n for n in ast.walk(statement) if isinstance(n, ast.Call))
    return any(isinstance(c.func, ast.Attribute) and c.func.attr in CASTS for c in calls)


def _placed(code, ran: dict[int, int], made: int) -> int | None:
    """The last line run after `made` that writes entries into a tensor (`pe[:, 0::2] = ...`):
    a value made on one line and put in place on others is wrong on either."""
    statements, after = _statements(code), ran.get(made, 0)
    writes = [
        line
        for line, statement in statements.items()
        if ran.get(line, 0) > after
        and isinstance(statement, ast.Assign)
        and any(isinstance(t, ast.Subscript) for t in statement.targets)
    ]
    return max(writes, default=None)


def made_line(code, ran: dict[int, int], error: str) -> tuple[int, bool]:
    """The student line of a TODO function that made the value an assertion found wrong.

    (A name alone, `loss.backward`, made_lines names first.) A line that calls the method the
    failure names, if one ran (a side effect's call); else, when
    the line run last returns a name or a tuple (`return x, y`: values made above it), the line
    run last that spells a name the failure's subject names (`generator=`); else the line run
    last (a return, or the branch taken), unless it is a return that hands on one
    local through casts and flattens only (`return y.to(x.dtype)`) and the failure is not of
    a dtype or a shape: then the nearest line that ran through which all of that local's data
    flows and that assigns a whole value (the line whose value every later line only rearranged
    or wrote into place). `ran`: each student line -> when it last ran. When no such line is
    sure (a bare `return y` may lack a last step, the projection), the line run last. And
    whether the line is that nearest line of the data flow."""
    if (named := _named_call(code, ran, error)) is not None:
        return named, False
    if "random state" in error.split(": expected")[0] and (drew := _drew(code, ran)) is not None:
        return drew, False  # torch's generator moved: by a draw, not by the value returned
    last = _last(code, ran)
    statements = _statements(code)
    returned = statements.get(last)
    handing = isinstance(returned, ast.Return) and isinstance(returned.value, ast.Name | ast.Tuple)
    layout = ABOUT_LAYOUT.search(error.split(": expected")[0])
    effects = _effects(code)  # a call for its effect on a value (`generator.set_state(state)`)
    if handing and not layout and (named := _named_line(statements | effects, ran, error)):
        return named, False
    name = isinstance(returned, ast.Return) and _handed_on(returned.value)
    if not name or layout:
        return last, False
    if (wrote := _wrote_entry(statements, ran, name, error)) is not None:
        return wrote, False
    when = {}  # each statement that ran -> when it last ran
    for line, tick in ran.items():
        if (statement := statements.get(line)) and not _placeholder(statement):
            when[statement] = max(when.get(statement, 0), tick)
    facts = {s: _names(s) for s in when}
    flow = {}  # statement -> the statements whose values it read: the last before it of each name
    for s in sorted(when, key=when.__getitem__, reverse=True):
        reads = {name} if s is returned else facts[s][0]
        earlier = [e for e in when if when[e] < when[s]]
        flow[s] = {max((e for e in earlier if n in facts[e][1]), key=when.get, default=None)
                   for n in reads} - {None}  # fmt: skip
    through = {returned: {returned}}  # statement -> the statements on every path to it
    for s in sorted(when, key=when.__getitem__, reverse=True):
        for origin in flow.get(s, ()) if s in through else ():
            path = through[s] | {origin}
            through[origin] = through[origin] & path if origin in through else path
    ends = [through[s] for s in through if not flow[s]]
    common = set.intersection(*ends) - {returned} if ends else set()
    made = [s for s in common if facts[s][2]]
    return (max(made, key=when.__getitem__).lineno, True) if made else (last, False)


def _reads(statement: ast.stmt) -> set[str]:
    """The names a statement's own line reads: a compound one's header only (an if's test)."""
    parts = {ast.If: "test", ast.While: "test", ast.For: "iter", ast.With: "items"}
    field = next((f for kind, f in parts.items() if isinstance(statement, kind)), None)
    nodes = getattr(statement, field) if field else statement
    walked = [n for part in (nodes if isinstance(nodes, list) else [nodes]) for n in ast.walk(part)]
    return {n.id for n in walked if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


@functools.cache
def _exits(code) -> dict[int, range]:
    """The lines that run again as a block is left (a `with` line, its exit; a `finally:` block),
    each -> the lines of the block it leaves: after a return or a raise there, they run last."""
    function = _function(code)
    exits = {}
    for n in ast.walk(function) if function else ():
        if isinstance(n, ast.With):
            ends = range(n.lineno, n.body[0].lineno)
        elif isinstance(n, ast.Try) and n.finalbody:
            ends = range(n.finalbody[0].lineno, n.finalbody[-1].end_lineno + 1)
        else:
            continue
        exits.update(dict.fromkeys(ends, range(n.body[0].lineno, n.body[-1].end_lineno + 1)))
    return exits


def _last(code, ran: dict[int, int]) -> int:
    """The line run last, but for the lines a block runs as it is left (_exits) after a return in
    it: then that return (a raise leaves by the block's exit, which is where it went wrong)."""
    exits, last = _exits(code), max(ran, key=ran.__getitem__)
    left = {n: t for n, t in ran.items() if n not in exits or not any(b in ran for b in exits[n])}
    inside = max(left, key=left.__getitem__) if left else last
    return inside if isinstance(_statements(code).get(inside), ast.Return) else last


def _innermost(code, line: int) -> ast.stmt | None:
    """The innermost statement of a TODO function that holds `line`."""
    function = _function(code)
    nodes = [n for n in ast.walk(function) if isinstance(n, ast.stmt)] if function else []
    here = [n for n in nodes if n is not function and n.lineno <= line <= n.end_lineno]
    return min(here, key=lambda n: n.end_lineno - n.lineno) if here else None


RESEEDS = {"seed", "manual_seed", "set_state"}  # a generator's state set anew: its draws restart


DRAWS = {
    "rand",
    "randn",
    "randint",
    "randperm",
    "multinomial",
    "bernoulli",
    "normal",
    "dropout",
    "rand_like",
    "randn_like",
    "randint_like",
    "manual_seed",
    "seed",
}  # what moves a generator


@functools.cache
def _draws(code) -> frozenset[int]:
    """The lines of a function that draw random numbers or seed a generator."""
    function = _function(code)
    return frozenset(
        node.lineno
        for node in (ast.walk(function) if function else ())
        if isinstance(node, ast.Call)
        and getattr(node.func, "attr", getattr(node.func, "id", None)) in DRAWS
    )


def _drew(code, ran: dict[int, int]) -> int | None:
    """The line run last that draws random numbers or seeds a generator (`torch.randint(...)`)."""
    found = [line for line in _draws(code) if line in ran]
    return max(found, key=ran.__getitem__) if found else None


def _reseeded(code, ran: dict[int, int], line: int) -> int | None:
    """The line run before `line` that reseeds a generator `line` draws from (`generator.seed()`
    above `torch.randint(..., generator=generator)`): the draws are right, their source is not."""
    statement, function = _innermost(code, line), _function(code)
    if statement is None or function is None:
        return None
    read = _reads(statement)
    for node in ast.walk(function):
        func = node.func if isinstance(node, ast.Call) else None  # `g.seed()`, not `g["f"]()`
        owner = func.value if isinstance(func, ast.Attribute) else None
        if (
            isinstance(owner, ast.Name)
            and owner.id in read
            and func.attr in RESEEDS
            and 0 < ran.get(node.lineno, 0) < ran.get(line, 0)
        ):
            return node.lineno
    return None


def fed_from(code, ran: dict[int, int], line: int) -> int | None:
    """The first line of what a crash on `line` was handed (a crash in correct code has its cause
    above: a window one id short, a tensor made without gradients): each line whose value flowed
    into it (the last write of each name it read, and so on back), the `with` around such a line
    (torch.no_grad()), and an `if` whose test sent it into its body or past it; None when nothing
    above it fed it."""
    function, when = _function(code), ran.get(line)
    if function is None or when is None:
        return None
    nodes = [n for n in ast.walk(function) if isinstance(n, ast.stmt) and n is not function]

    def tick(node) -> int:  # when it last ran (0: not at all), any of its lines
        return max((ran.get(i, 0) for i in range(node.lineno, node.end_lineno + 1)), default=0)

    crash = _innermost(code, line)
    if crash is None:
        return None
    writes = [n for n in nodes if isinstance(n, ast.Assign | ast.AugAssign | ast.AnnAssign)]
    fed, todo = set(), [(crash, when)]  # each statement whose value flowed into the crash
    while todo:
        statement, before = todo.pop()
        for name in _reads(statement):  # the last write of each name it read, before it ran
            made = [n for n in writes if 0 < tick(n) < before and name in _names(n)[1]]
            if made and (origin := max(made, key=tick)) not in fed:
                fed.add(origin)
                todo.append((origin, tick(origin)))
    found = {node.lineno for node in fed}
    for node in nodes:  # the with or if around a line that fed it; the if that sent it on
        if isinstance(node, ast.With | ast.If) and any(
            node.lineno < f.lineno <= node.end_lineno for f in fed
        ):
            found.add(node.lineno)  # an if's test chose which of its lines fed the crash
        if not isinstance(node, ast.If) or ran.get(node.lineno, when) >= when:
            continue
        inside = node.lineno < line <= node.end_lineno  # its test sent the crash's line to run
        if inside or node.end_lineno < line and not any(tick(b) for b in node.body):
            found.add(node.lineno)
    start = min(found, default=line)
    return start if start < line else None


NAMED = re.compile(r"\b[A-Za-z_]\w{2,}\b")  # a name of 3 or more characters: T_max, generator


def _named_line(statements: dict, ran: dict[int, int], error: str) -> int | None:
    """The line run last, but for a return, that uses a name the failure's subject names as it
    is written in the code (`generator=`, `model.T_max`): a return that hands on a value or
    several (`return x, y`) is not where a value named in the message went wrong."""
    said = re.sub(r"\([^()]*\)", "", error.split(": expected")[0])  # "(within T_max)": an aside
    subject = set(NAMED.findall(said))
    found = {
        line: tick
        for line, tick in ran.items()
        if isinstance(statement := statements.get(line), ast.Assign | ast.AugAssign | ast.Expr)
        and subject & _spelled(statement)
    }
    return max(found, key=found.__getitem__) if found else None


def _spelled(statement: ast.stmt) -> set[str]:
    """The names a statement spells: its names, attributes and keywords' names."""
    return {
        getattr(n, "id", None) or getattr(n, "attr", None) or getattr(n, "arg", None)
        for n in ast.walk(statement)
        if isinstance(n, ast.Name | ast.Attribute | ast.keyword)
    } - {None}


def _wrote_entry(statements: dict, ran: dict[int, int], name: str, error: str) -> int | None:
    """The line run last that wrote the wrong entry the failure names into `name` by a slice
    (`pe[:, 1::2] = ...`): when a second write overwrote it (a typo's `0::2` twice), or when no
    more entries differ than that slice holds (else the error is upstream, in what every slice
    was made from)."""
    found = WORST_ENTRY.search(error)
    if not found:
        return None
    index, differ, entries = [int(i) for i in found[1].split(", ")], int(found[2]), int(found[3])
    writes = [
        (line, target.slice)
        for line, statement in statements.items()
        if line in ran
        and isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(target := statement.targets[0], ast.Subscript)
        and isinstance(target.value, ast.Name)
        and target.value.id == name
        and _covers(target.slice, index)
    ]
    if not writes:
        return None
    line, key = max(writes, key=lambda w: ran[w[0]])
    steps = [p.step.value for p in _parts(key) if isinstance(p, ast.Slice) and p.step is not None]
    confined = differ * math.prod(steps) <= entries and not isinstance(key, ast.Constant)
    return line if len(writes) > 1 or confined else None


def _parts(key: ast.expr) -> list[ast.expr]:
    return key.elts if isinstance(key, ast.Tuple) else [key]


def _covers(key: ast.expr, index: list[int]) -> bool:
    """Whether a subscript of literals (`:, 0::2`, `3`) selects the entry `index`; False if unsure."""
    parts = _parts(key)
    if len(parts) > len(index):
        return False
    for part, i in zip(parts, index, strict=False):
        if isinstance(part, ast.Slice):
            bounds = [part.lower, part.upper, part.step]
            if not all(
                b is None or (isinstance(b, ast.Constant) and type(b.value) is int) for b in bounds
            ):
                return False
            lower, upper, step = (b.value if b is not None else None for b in bounds)
            lower, step = lower or 0, step or 1
            if lower < 0 or step < 1 or (upper is not None and (upper < 0 or i >= upper)):
                return False
            if i < lower or (i - lower) % step:
                return False
        elif not (isinstance(part, ast.Constant) and part.value == i):
            return False
    return True


class Collector:
    """`--impl starter`: each test's result and the TODO functions it ran; at the end, the screen."""

    TOOL = 4  # a sys.monitoring tool id that coverage (1) and debuggers (0) leave free

    def __init__(self, config):
        self.config = config
        self.results: dict[str, TestResult] = {}  # nodeid -> its result, in the order they came
        self.codes: dict = {}  # code object of a TODO function -> (step, TODO id, function)
        self.todo_at: dict = {}  # the same functions' (file, first line) -> (TODO id, function)
        self.ran: set = set()  # the (TODO id, function) pairs the running test entered
        self.own: dict = {}  # code object of a TODO function -> the lines of it the student wrote
        self.order: dict = {}  # (TODO id, function) -> (its code, {student line: when it last ran})
        self.tick = 0  # the student lines run so far: when a line ran
        self.uncollected: list[str] = []  # test files that could not be collected, and why
        self.regions: dict[str, dict[str, Todo]] = {}  # step -> its TODOs, parsed once per run
        self.given: dict[Path, frozenset[str]] = {}  # a TODO's starter file -> the code it gives
        self.inside: dict = {}  # (TODO id, function) -> the code the starter gives in it
        self.renamed: dict[str, str] = {}  # TODO id -> a function of it the starter no longer has
        self.stopped = ""  # why the run stopped early (a test out of time, -x), if it did
        self.interrupted: tuple | None = None  # (step, TODO) that Ctrl-C stopped
        self.current = ""  # the running test's id
        self.statuses: dict[str, StepStatus] = {}  # step -> what the screen says (--check-json)
        self.facts: dict[str, StarterFacts] = {}  # step -> its starter as the status read it
        self.marked: dict[str, str] = {}  # nodeid -> the TODO its `todo` marker names
        self.core: set[str] = set()  # nodeids marked `core`

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session):
        """Quiet pytest's own report, and watch which TODO functions each test runs."""
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        self.config.option.tbstyle, self.config.option.verbose = "no", -1
        if reporter:
            reporter.reportchars = ""
        broken = self.config.stash.get(BROKEN, {})
        for step in self.config.stash.get(STEPS_UNDER_TEST, []):
            if step not in broken:
                self.regions[step] = course_step(step).regions()
                self._watch(step)
        self.todo_at = {code_place(code): (todo, fn) for code, (_, todo, fn) in self.codes.items()}
        if self.codes and sys.monitoring.get_tool(self.TOOL) is None:
            sys.monitoring.use_tool_id(self.TOOL, "course-check")
            events = sys.monitoring.events
            sys.monitoring.register_callback(self.TOOL, events.PY_START, self._on_start)
            sys.monitoring.register_callback(self.TOOL, events.LINE, self._on_line)
            for code in self.codes:
                sys.monitoring.set_local_events(self.TOOL, code, events.PY_START | events.LINE)

    def _watch(self, step: str) -> None:
        """Find the code of each TODO function in the student's starter (or note it is gone)."""
        for todo in self.regions[step].values():
            self.given[_starter_of(step, todo.file)] = todo.given
            self.inside.update({(todo.id, f): given for f, given in todo.inside.items()})
            module = load(step, todo.module, "starter")
            for name in todo.functions:
                obj = module
                for part in name.split("."):
                    obj = getattr(obj, part, None)
                if code := getattr(obj, "__code__", None):
                    self.codes[code] = (step, todo.id, name)
                    self.own[code] = self._own_lines(code)
                elif obj is None and name:
                    where = shown(_starter_of(step, todo.file))
                    self.renamed.setdefault(todo.id, f"{where} {name}")

    def _own_lines(self, code) -> frozenset[int]:
        """The lines of a TODO function's code that the student wrote (not a line the starter gives)."""
        path, fn = Path(code.co_filename), self.codes[code][1:]
        return frozenset(n for _, _, n in code.co_lines() if n and self._theirs(path, n, fn))

    def _on_start(self, code, offset):
        if code in self.codes:
            self.ran.add(self.codes[code][1:])  # (TODO id, function)
        return sys.monitoring.DISABLE  # once per test is enough; restart_events re-arms it

    def _on_line(self, code, line):
        """When each student line of a TODO function last ran: which ran, and in what order."""
        if line in self.own.get(code, ()):
            self.tick += 1
            self.order.setdefault(self.codes[code][1:], (code, {}))[1][line] = self.tick

    @pytest.hookimpl(tryfirst=True)
    def pytest_timeout_set_timer(self, item, settings):
        """pytest-timeout's limit as a watchdog (its own need SIGALRM or end the process)."""
        item.cancel_timeout = Watchdog(settings.timeout).start().cancel
        return True

    def pytest_unconfigure(self, config):
        if sys.monitoring.get_tool(self.TOOL) == "course-check":  # leave nothing armed behind
            for code in self.codes:
                sys.monitoring.set_local_events(self.TOOL, code, 0)
            sys.monitoring.register_callback(self.TOOL, sys.monitoring.events.PY_START, None)
            sys.monitoring.register_callback(self.TOOL, sys.monitoring.events.LINE, None)
            sys.monitoring.free_tool_id(self.TOOL)

    def pytest_collection_modifyitems(self, items):
        """What --check-json says of a test's markers: the TODO its `todo` names, and `core`."""
        self.marked = {i.nodeid: m.args[0] for i in items if (m := i.get_closest_marker("todo"))}
        self.core = {i.nodeid for i in items if i.get_closest_marker("core")}

    def pytest_runtest_logstart(self, nodeid, location):
        self.ran, self.order, self.current = set(), {}, nodeid
        sys.monitoring.restart_events()

    def pytest_collectreport(self, report):
        if report.failed:  # a test file that does not import: say which, and why
            why = report.longreprtext.strip().splitlines()[-1]
            self.uncollected.append(f"{report.nodeid}: {why}")

    def pytest_report_teststatus(self, report, config):
        """No progress dots: the summary says it all (setup and teardown count for nothing)."""
        return (report.outcome if report.when == "call" or not report.passed else ""), "", ""

    def _theirs(self, path: Path, line: int, fn: tuple[str, str] | None = None) -> bool:
        """Is this line of a TODO's starter file one the student wrote, not code the starter gives
        (in TODO function `fn`, if given: the code it gives there)?"""
        given = self.inside.get(fn, self.given.get(path))
        return given is not None and student_line(_lines(path), line, given)

    def _raised(self, report) -> tuple[tuple[str, str], Place] | tuple[None, None]:
        """(TODO function, line) of the innermost line of a failure that the student wrote."""
        frames = zip(getattr(report, "frames", []), getattr(report, "lines", []), strict=True)
        for frame, (path, line) in reversed(list(frames)):
            if frame in self.todo_at and self._theirs(Path(path), line, self.todo_at[frame]):
                fn = self.todo_at[frame]
                code, ran = self.order.get(fn, (None, {}))
                start = fed_from(code, ran, line) if code else None
                if start is None:
                    return fn, Place(shown(Path(path)), line)
                return fn, Place(shown(Path(path)), start, end=line, raised=True)
        return None, None

    def _given_at(self, report) -> Place | None:
        """The line of a failure's innermost course frame, when it is code the course gives (a step's
        module, a line the starter gives), not the student's line nor the test's own, nor a refusal
        the course raised in its own words (a given check of the student's input)."""
        if getattr(report, "refused", False):
            return None
        for path, line in reversed(getattr(report, "lines", [])):
            path = Path(path)
            if not path.is_relative_to(STEPS_DIR):
                continue  # torch's, Python's, common/'s frames
            if "tests" in path.relative_to(STEPS_DIR).parts or self._theirs(path, line):
                return None  # the test raised it, or the student's line did
            return Place(shown(path), line)
        return None

    def _last_lines(self, error: tuple[str, ...]) -> tuple:
        """Each TODO function the test ran, with the student line of it that made the wrong value:
        the line run last, or the line its return's value was made on (made_line)."""
        lines = []
        for fn, (code, ran) in sorted(self.order.items()):
            line, end, raised = made_lines(code, ran, error_line(error))
            statement = _statements(code).get(line) if end is None else None
            whole = bool(statement and statement.end_lineno > statement.lineno)
            if whole:  # one statement, all of it
                line, end = statement.lineno, statement.end_lineno
            place = Place(
                shown(Path(code.co_filename)), line, end=end, raised=raised, statement=whole
            )
            lines.append((fn, place))
        return tuple(lines)

    def pytest_runtest_logreport(self, report):
        if not (report.when == "call" or not report.passed):
            return
        raised_in, raised_at = self._raised(report)
        self.results[report.nodeid] = TestResult(
            nodeid=report.nodeid,
            outcome=report.outcome,
            step=getattr(report, "step", None),
            stopped_at=getattr(report, "todo", None),
            error=tuple(getattr(report, "bug", None) or ()),
            ran=frozenset(self.ran),
            raised_in=raised_in,
            raised_at=raised_at,
            given_at=self._given_at(report) if report.failed else None,
            last_lines=self._last_lines(getattr(report, "bug", None) or ())
            if report.failed
            else (),
            given=getattr(report, "given", False),
            warning=getattr(report, "warning", False),
            whole_run=getattr(report, "whole_run", False),
            marked=self.marked.get(report.nodeid),
            core=report.nodeid in self.core,
            path=getattr(report, "path", 0),
        )
        if getattr(report, "timeout", False):
            reached = max((t for t, _ in self.ran), key=order_key, default=None)
            blamed = raised_in[0] if raised_in else reached
            where = f"TODO({blamed})" if blamed else "it"
            self.stopped = (
                f"The check stopped: {report.nodeid} was still running after "
                f"{TookTooLong.limit:g} s of CPU time, "
                f"in {where} (a loop that never ends?); the tests after it did not run"
            )

    def results_of(self, step: str) -> dict[str, TestResult]:
        return {n: r for n, r in self.results.items() if r.step == step}

    def step_screen(self, step: str, progress: bool) -> list[str]:
        """One step's status (its starter read now), drawn as its screen or --progress's line."""
        todos, (step_in, todo_in) = self.regions[step], self.interrupted or (None, None)
        stopped_in = todo_in if step_in == step else None  # Ctrl-C in one of its TODOs
        self.facts[step] = facts = starter_facts(step, todos)  # read once: --check-record too
        self.statuses[step] = status = step_status(
            step, self.results_of(step), todos, facts, symptom_tests(step), stopped_in
        )
        if progress:
            used = hint.read_state(hint.state_file(step))
            return [progress_line(status, used, predictions.progress_note(step))]
        chosen = bool(self.config.option.keyword or self.config.option.markexpr)
        return step_lines(status, RunFacts(self.stopped, chosen, self.renamed))

    def pytest_terminal_summary(self, terminalreporter):
        def write(line: str) -> None:  # every line in the screen's width
            for part in fit([line]):
                terminalreporter.write_line(part)

        for line in self.uncollected:
            write(f"could not collect {line}")
        progress = self.config.getoption("--progress")
        broken = self.config.stash.get(BROKEN, {})
        judges = self.config.stash.get(JUDGES, None)
        if self.stopped:
            write(self.stopped)
        for step in self.config.stash.get(STEPS_UNDER_TEST, []):
            if step in broken:  # one line: why it cannot run; the other steps are still reported
                write(f"{step:<9} {broken[step]}" if progress else broken[step])
                continue
            if judges and step in judges.replaced:
                write(f"{judges.replaced[step]}: the check put the originals back")
            for line in self.step_screen(step, progress):
                write(line)
        for nodeid, r in self.results.items():
            if r.step is None and r.error:
                write(f"{nodeid}: {error_line(r.error)}")
        self.write_records()

    def write_records(self) -> None:
        """After the screen: each step's record for the hint, --check-record, --check-json (each
        TODO's state, each test's, the TODO named Next)."""
        records = {}
        for step, status in self.statuses.items():
            tests = {nodeid: self.test_json(r) for nodeid, r in self.results_of(step).items()}
            todos = {t: asdict(v) for t, v in status.todos.items()}
            records[step] = {"todos": todos, "tests": tests, "stopped": self.stopped}
            records[step]["next"] = status.next
            if not self.partial():  # the hint follows the last whole check's Next
                hint.keep_check(step, records[step])
        if path := self.config.getoption("--check-record"):  # the model's input (tests/screens/)
            data = {s: record(self.results_of(s), self.facts[s]) for s in self.statuses}
            write_json(Path(path), data, indent=1)
        if path := self.config.getoption("--check-json"):  # what the screen says, as data (grading)
            write_json(Path(path), records, indent=2)

    def partial(self) -> bool:
        """Did this run choose some of the tests (-k, -m, a test's id) or stop before the end?"""
        option, args = self.config.option, self.config.args
        chosen = option.keyword or option.markexpr or any("::" in a for a in args)
        return bool(chosen or self.stopped or self.interrupted)

    def test_json(self, r: TestResult) -> dict:
        """A test's outcome, the TODOs it ran, its error line and whether a guard refused it."""
        return {
            "outcome": r.outcome,
            "ran": sorted(r.todos_ran, key=order_key),
            "error": error_line(r.error),
            "refused": refusal(r.error) if r.outcome == "failed" else None,
            "marked": self.marked.get(r.nodeid),
            "given": r.given,
            "core": r.nodeid in self.core,  # the grade: half at most if it fails
        }

    def pytest_sessionfinish(self, session):
        why = session.shouldfail or session.shouldstop  # -x, --maxfail, a test out of time
        if why and not self.stopped:
            self.stopped = f"The run stopped early ({why}): the tests after it did not run"
        progress = self.config.getoption("--progress")
        if progress and session.exitstatus == pytest.ExitCode.TESTS_FAILED:
            session.exitstatus = 0  # progress is a report: failing tests are not a red check

    def pytest_keyboard_interrupt(self, excinfo):
        """Ctrl-C: say which test and which TODO were running, so Next names the right one."""
        if self.stopped:
            return
        frames = [code_place(entry.frame.code.raw) for entry in excinfo.traceback]
        inner = [self.todo_at[f][0] for f in frames if f in self.todo_at]
        todo = inner[-1] if inner else max((t for t, _ in self.ran), key=order_key, default=None)
        step = next((s for s, t, _ in self.codes.values() if t == todo), None)
        self.interrupted = (step, todo) if todo else None
        where = f" in TODO({todo})" if todo else ""
        self.stopped = (
            f"Interrupted (Ctrl-C) during {self.current}{where}: the tests after it did not run"
        )
