"""The check's room, what a student sees of the tests: a pytest plugin the root conftest.py loads: `--impl starter` prints what
is done, what to write next, and real bugs; a starter that won't import is one line.

Three parts: this plugin and collect.py collect the results (the hooks below set up the run and
shape each report); status.py turns them into a status per TODO; screen.py draws it; guard.py
bounds what a student's code may do to the run."""

import ast
import contextlib
import functools
import inspect
import io
import itertools
import keyword
import linecache
import os
import re
import sys
import tokenize
import warnings
from pathlib import Path

import pytest
from _pytest._code.source import getstatementrange_ast

from common import REPO_ROOT, STEPS_DIR, command, shown
from common.check.collect import BROKEN, JUDGES, STEPS_UNDER_TEST, Collector, code_place
from common.check.guard import Judges, TookTooLong, Watchdog, allow_exit, refuse_exit
from common.check.screen import WIDTH, cut, fit
from common.course import course, course_step, step_names
from common.course.todos import module_name, optional, todo_in
from common.loader import ImplImportError, check_syntax, load, load_from, package_name, py_files

TIMEOUT = 10.0  # CPU seconds a test of the check may use (pytest-timeout's --timeout N changes it)


def python_problem() -> str | None:
    """The course runs on Python 3.12: on another one, the command that works, in one line."""
    if sys.version_info[:2] == (3, 12):
        return None
    here = ".".join(map(str, sys.version_info[:3]))
    venv = REPO_ROOT / ".venv" / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    twin = f"{shown(venv)} -m pytest" if venv.is_file() else "python3.12 -m pytest"
    return (
        f"this is Python {here} ({sys.executable}); the course runs on Python 3.12: "
        f"use pixi run test (or pixi run check-<step>), or {twin} with the same arguments"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    """`--impl starter` without -v or --full: the student's summary replaces pytest's report."""
    if problem := python_problem():
        raise pytest.UsageError(problem)
    start = config.invocation_params.dir
    paths = [a.split("::")[0] for a in config.args if not a.startswith("-")]
    missing = [p for p in paths if not (start / p).exists()]
    if missing and start.resolve().is_relative_to(STEPS_DIR):
        up = os.path.relpath(REPO_ROOT, start)  # steps/lab-01 -> ../..
        raise pytest.UsageError(
            f"{missing[0]} is not there from {shown(start)}/: the commands run from the "
            f"repository's folder: cd {up} and run the command again"
        )
    if config.getoption("--progress") and config.getoption("--impl") != "starter":
        if any(a.startswith("--impl") for a in config.invocation_params.args):
            raise pytest.UsageError("--progress reports your starter: drop --impl solution")
        config.option.impl = "starter"  # progress is about the student's code, never the reference
    if config.getoption("--impl") == "starter" and (
        config.getoption("--progress")
        or not (config.option.verbose > 0 or config.getoption("--full"))
    ):
        if getattr(config.option, "numprocesses", None):  # tests would run in other processes
            raise pytest.UsageError(
                "the check's summary needs one process: drop -n (or add --full)"
            )
        if config.pluginmanager.has_plugin("timeout") and not (
            config.option.timeout is not None or os.environ.get("PYTEST_TIMEOUT")
        ):
            config.option.timeout = TIMEOUT  # pytest-timeout reads it in its own configure, later
        config.pluginmanager.register(Collector(config), "student-check")


def _steps_under_test(config) -> list[str]:
    """Steps whose folder is inside, or contains, a path given on the command line, in course order."""
    start = config.invocation_params.dir
    paths = [(start / a.split("::")[0]).resolve() for a in config.args] or [Path.cwd()]
    folders = {step: (STEPS_DIR / step).resolve() for step in step_names()}
    chosen = [
        step
        for step, f in folders.items()
        if any(p.exists() and (p.is_relative_to(f) or f.is_relative_to(p)) for p in paths)
    ]
    try:
        order = [s.name for s in course()]  # lab-02 comes after Step 6, not second
    except (OSError, ValueError):  # a step.toml that does not read: the alphabet's order then
        order = []
    return sorted(chosen, key=lambda step: order.index(step) if step in order else len(order))


def _step_problem(
    step: str, impl: str, controller: bool, judges: Judges | None, limit: float
) -> str | None:
    """Why a step cannot be tested (a missing file, a file that does not import), in one line."""
    layout = course_step(step)
    solution, tested = layout.marked, layout.impl(impl)
    if impl == "solution" and layout.unreleased:  # a student edition's open step
        check = command(f"pixi run check-{step}", f"python -m pytest steps/{step} --impl starter")
        return f"{step}'s reference comes when the step is closed; check your starter: {check}"
    if not py_files(solution):
        return f"{shown(solution)}/ is missing or empty: restore it (git checkout -- {shown(solution)})"
    if impl == "starter":
        catch_up = command(f"pixi run catch-up {step}", f"python -m common.catchup {step}")
        for path in py_files(solution):
            theirs = tested / path.relative_to(solution)
            if not theirs.is_file():
                gone = shown(theirs) if tested.is_dir() else f"{shown(tested)}/"
                return (
                    f"{gone} is missing: restore the untouched one (git checkout -- {gone}), "
                    f"or take the reference with {catch_up}"
                )
    for path in py_files(tested):
        try:
            if controller:
                check_syntax(path)
                continue
            with Watchdog(limit or float("inf"), only_in=tested):  # a loop: its line
                load(step, module_name(tested, path), impl)
        except ImplImportError as exc:
            return str(exc)
        if judges and (changed := judges.restore()):
            judges.replaced[step] = f"{shown(path)} replaced {changed} as it was imported"
    return None


def pytest_sessionstart(session):
    """Import every module first: a broken file is one line (the check sets only its step aside)."""
    config = session.config
    impl = config.getoption("--impl")
    config.stash[STEPS_UNDER_TEST] = steps = _steps_under_test(config)
    # pytest-xdist's controller runs no tests: it checks syntax only, and leaves torch to the workers
    controller = config.pluginmanager.has_plugin("dsession")
    checking = config.pluginmanager.has_plugin("student-check")
    judges = None
    if impl == "starter" and not controller:
        for step in steps:  # the marked files import what the starter does (torch), unpatched
            marked = course_step(step).marked
            for path in py_files(marked):
                try:
                    load_from(marked, module_name(marked, path), package_name(marked))
                except ImplImportError:
                    pass  # a broken reference is the maintainers' problem: its tests say so
        if "torch" in sys.modules:  # an optimiser built by a TODO not written yet costs nothing
            from common.optim import build_without_compiler

            build_without_compiler()
        config.stash[JUDGES] = judges = Judges()  # before any student code runs
        refuse_exit()  # os._exit() in student code would end Python before any report
    limit = getattr(config.option, "timeout", None)
    limit = TIMEOUT if limit is None else float(limit)  # imports get the tests' limit too
    broken = {s: p for s in steps if (p := _step_problem(s, impl, controller, judges, limit))}
    if broken and (not checking or len(broken) == len(steps)):
        raise pytest.UsageError("\n".join(fit(list(broken.values()), WIDTH - len("ERROR: "))))
    config.stash[BROKEN] = broken


def pytest_unconfigure(config):
    allow_exit()  # os._exit as it was: this process may run more sessions (the repo's own tests)


def pytest_collection_modifyitems(config, items):
    """A step set aside at the start runs no test; a starter's run leaves out `course` tests."""
    if wrong := misplaced_markers(items):
        raise pytest.UsageError(wrong[0])
    broken = config.stash.get(BROKEN, {})
    starter = config.getoption("--impl") == "starter"
    left = {i for i in items if _step_of(i.path) in broken}
    left |= {i for i in items if starter and i.get_closest_marker("course")}
    if left:
        config.hook.pytest_deselected(items=[i for i in items if i in left])
        items[:] = [i for i in items if i not in left]


def misplaced_markers(items) -> list[str]:
    """One line per lying marker: `course` asking for `impl`, `given` not asking for it."""
    wrong = []
    for i in items:
        uses_impl = "impl" in getattr(i, "fixturenames", ())  # directly or through a fixture
        if i.get_closest_marker("course") and uses_impl:
            wrong.append(f"{i.nodeid} is marked course but tests the code under test (impl)")
        if i.get_closest_marker("given") and not uses_impl:
            wrong.append(
                f"{i.nodeid} is marked given but runs none of the student's code: mark it course"
            )
    return wrong


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """An optional TODO not written yet skips its tests instead of failing them."""
    report = yield
    report.step = _step_of(item.path)
    report.given = item.get_closest_marker("given") is not None
    report.whole_run = item.get_closest_marker("whole_run") is not None
    exc = call.excinfo
    judges = item.config.stash.get(JUDGES, None)
    if judges and call.when == "call" and (changed := judges.restore()):
        report.outcome, exc = "failed", None  # it passed only because the judge was replaced
        report.bug = [
            f"  your code replaced {changed} during this test; the check put the original back: "
            "a TODO computes its result, it does not change how the result is checked"
        ]
        if report.longrepr is None:  # it had passed: -v prints this as the reason it fails
            report.longrepr = report.bug[0].strip()
    if exc and exc.errisinstance(TookTooLong):
        item.session.shouldfail = "a test ran out of time"  # the others would too, one by one
        report.timeout = True
    report.warning = bool(exc and exc.errisinstance(Warning))
    if exc and exc.errisinstance(NotImplementedError) and (todo := todo_in(str(exc.value))):
        report.todo = todo
        if optional(todo):
            where = exc.traceback[-1]
            report.outcome = "skipped"
            report.longrepr = (
                str(where.path),
                where.lineno + 1,
                f"optional TODO({todo}) not written",
            )
    elif exc and report.failed:
        # a time limit can land in the check's own line tracer, called from the student's line
        while (
            exc.errisinstance(TookTooLong)
            and len(exc.traceback) > 1
            and Path(exc.traceback[-1].path).is_relative_to(CHECK_DIR)
        ):
            exc.traceback = exc.traceback[:-1]
        report.bug = short_traceback(exc)
        # (file, first line) of each frame, not code objects: xdist sends reports between processes
        report.frames = [code_place(entry.frame.code.raw) for entry in exc.traceback]
        report.lines = [(str(entry.path), entry.lineno + 1) for entry in exc.traceback]
        report.refused = _course_raise(exc.traceback[-1]) or _course_assert(exc.traceback[-1])
        report.path = _path(exc.traceback)
    return report


@functools.cache
def _step_of(path: Path) -> str | None:
    """The step a test file belongs to (None outside steps/); asked three times per test."""
    path = path.resolve()
    return path.relative_to(STEPS_DIR).parts[0] if path.is_relative_to(STEPS_DIR) else None


def _library(path: Path) -> bool:
    """Is this file torch's, pytest's or Python's own, not the course's?"""
    libraries = {"site-packages", "dist-packages"} & set(path.parts)
    return bool(libraries) or path.is_relative_to(sys.base_prefix) or path.suffix != ".py"


def _course_raise(entry) -> bool:
    """Did the course's own `raise` end this traceback (a refusal in its words), not torch?"""
    return not _library(Path(entry.path)) and _statement(entry).startswith("raise")


def _course_assert(entry) -> bool:
    """Did the course's own `assert` end it: a check a step's helper makes for its tests (Step 6's
    loop_checks), never a bug of the code the starter gives nor a crash down a longer path."""
    return not _library(Path(entry.path)) and _statement(entry).startswith("assert")


def _path(traceback) -> int:
    """How many of the course's frames lie between the test's last frame and the frame that raised:
    0 for a test that checks a value (itself or through a check of the course's), or calls the line
    that raised; more through a longer path."""
    if traceback and _course_assert(traceback[-1]):
        return 0
    course = [e for e in traceback if not _library(Path(e.path)) and Path(e.path) != EXPECT]
    tests = [i for i, e in enumerate(course) if "tests" in Path(e.path).parts]
    return max(0, len(course) - tests[-1] - 2) if tests else 0


def short_traceback(exc) -> list[str]:
    """A failure's error first (the course's words above torch's, its type and message, the
    message's detail lines), then the course's last three frames it passed (file:line, function,
    statement; a test's frame that called on, its place only): one entry per line to show,
    unwrapped (the screen fits them to its width)."""
    lines = []
    for entry in exc.traceback.filter(exc):  # a frame that sets __tracebackhide__ is not shown
        path = Path(entry.path)  # torch's, pytest's and Python's own frames are left out
        if path == EXPECT:  # common/expect.py's own lines: the test's line says what it checks
            continue
        if not _library(path):
            where = f"{shown(path)}:{entry.lineno + 1}"
            lines.append((f"  {where} in {entry.name}", f"      {_one_line(_statement(entry))}"))
    # the last three frames; a test's frame that called into more code is its place alone
    frames = lines[-3:]
    lines = [
        line
        for i, (place, statement) in enumerate(frames)
        for line in (
            [place]
            if i < len(frames) - 1 and "tests" in Path(place.split()[0]).parts
            else [place, statement]
        )
    ]
    # the message's detail lines too (torch's "Greatest absolute difference", pytest's Regex/Input)
    message = [line.rstrip() for line in str(exc.value).splitlines() if line.strip()] or [""]
    detail = [line for line in message[1:] if not line.strip().startswith("+")]  # not "+ where"
    return (
        in_course_words(exc)
        + [f"  {exc.typename}: {message[0]}"]
        + [cut(f"    {line.strip()}", 120) for line in detail[:DETAIL]]
        + lines
    )


def _one_line(statement: str) -> str:
    """A statement over several lines as one: `f(\n    a,\n)` is `f(a)` (the screen wraps it)."""
    joined = " ".join(line.strip() for line in statement.splitlines())
    joined = re.sub(r'" f?"', "", joined)  # "so at most " f"{n} more": one string, as it reads
    return re.sub(r",? ([)\]}])", r"\1", re.sub(r"([(\[{]) ", r"\1", joined))


def in_course_words(exc) -> list[str]:
    """Above torch's own words (its error or warning, not the course's refusal nor a test's check):
    the course line it raised in and the values of that statement's names, read from the frame."""
    if exc.errisinstance((AssertionError, NotImplementedError, TookTooLong)):
        return []
    course = [e for e in exc.traceback if not _library(Path(e.path))]
    if not course or _course_raise(exc.traceback[-1]):
        return []
    entry = course[-1]  # the course's line torch raised under
    statement = _statement(entry)
    local = entry.frame.f_locals
    read = {n: value for n in _names(statement) if (value := _value(n, local)) is not MISSING}
    values = [f"{n} {v}" for n, value in read.items() if (v := _described(value, "." in n))]
    values += [f"{n} {v}" for n, value in _indexed(statement, local) if (v := _described(value))]
    part = _raising_part(entry)
    values += _arguments(part, entry.frame.f_globals, local)  # torch.arange(T)[:, None] (40, 1)
    where = f"{shown(Path(entry.path))}:{entry.lineno + 1}"
    whose = "Your line" if "starter" in Path(entry.path).parts else "The course's line"
    said = f"{whose} {where} ran" + (f" with {', '.join(values)}" if values else "")
    at = f" at {part}," if part and part != _whole_value(_one_line(statement)) else ""
    inside = "torch" in Path(exc.traceback[-1].path).parts  # raised in torch's own Python code
    refuser = "Python" if _pythons(exc) else "torch"  # None.length is not torch's
    lacks = HAS_NO.search(str(exc.value)) if exc.errisinstance(AttributeError) else None
    holder = part.removesuffix(f".{lacks[2]}") if lacks and lacks[1] != "NoneType" else ""
    # nn.Module's __getattr__ raises it in torch's file, but the name was the student's choice
    refuser += ", in torch's own code," if inside and refuser == "Python" and not holder else ""
    refused = "warned" if exc.errisinstance(Warning) else "refused it"  # a warning stops nothing
    meaning = [
        f"  {words.format(*m.groups())}"
        for t, words in TORCH_MEANS
        if (m := t.search(str(exc.value)))
    ]
    none = NONE_HAS.search(str(exc.value))
    held = part.removesuffix(f".{none[1]}") if none else ""  # `model(x)[1]` of `model(x)[1].item`
    axes = {n: v.dim() for n, v in read.items() if _plain(v) and hasattr(v, "dim")}  # tensors
    if "cannot broadcast" in " ".join(meaning) and len(set(axes.values())) > 1:
        few, many = min(axes, key=axes.get), max(axes, key=axes.get)
        meaning[0] += (f": {few} has {axes[few]} axes, {many} {axes[many]}, so {few}'s line up "
                       f"with {many}'s last {axes[few]}")  # fmt: skip
    if (met := SIZES_MET.search(str(exc.value))) and (sides := _operands(part)):
        meaning[0] += f": the one with {met[1]} is {sides[0]}, the one with {met[2]} {sides[1]}"
    if held.endswith(".grad"):  # a parameter's, before any backward
        meaning[:0] = [f"  {held} is None here: a parameter's .grad is None until a backward pass "
                       "fills it (and again after zero_grad(set_to_none=True))"]  # fmt: skip
    elif held and held != part and not held.isidentifier():  # a name's None is in `values` above
        meaning[:0] = [f"  {held} is None here, so it has no .{none[1]}"]
    elif holder and holder != part:  # attn.tril: which object it was, and that it lacks the name
        meaning[:0] = [f"  {holder} is a {lacks[1]} here, which has no .{lacks[2]}"]
    return [f"  {said};{at} {refuser} {refused}:", *meaning[:1]]  # the screen wraps each line


SIZES_MET = re.compile(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)")


def _operands(part: str) -> tuple[str, str] | None:
    """The two sides of the operation `part` is (torch's tensor a and b, left and right), or None."""
    try:
        node = ast.parse(part.strip(), mode="eval").body
    except SyntaxError:
        return None
    return (
        (ast.unparse(node.left), ast.unparse(node.right)) if isinstance(node, ast.BinOp) else None
    )


NONE_HAS = re.compile(r"'NoneType' object has no attribute '(\w+)'")
HAS_NO = re.compile(r"'(\w+)' object has no attribute '(\w+)'")


# torch's errors a student's shapes meet most, in the course's words (its message follows them)
TORCH_MEANS = [(re.compile(pattern), said) for pattern, said in (
    (r"a Tensor with (\d+) elements cannot be converted to Scalar",
     ".item() is the number a one-element tensor holds; this tensor holds {0} entries"),
    (r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\) at non-singleton "
     r"dimension (\d+)", "two tensors met whose axis {2} is {0} in one and {1} in the other: "
     "neither is 1, so they cannot broadcast (an elementwise op's two, or a matmul's batch axes; "
     "a tensor of fewer axes is lined up with the other's last ones)"),
    (r"expanded size of the tensor \((\d+)\) must match the existing size \((\d+)\) at "
     r"non-singleton dimension (\d+)\.\s+Target sizes: \[([-\d, ]*)\]\.\s+Tensor sizes: "
     r"\[([-\d, ]*)\]", "a value written into a slice must fit it: the slice is ({3}), the value "
     "({4})"),
    (r"Expected size for first two dimensions of batch2 tensor to be: \[(\d+), (\d+)\] but got: "
     r"\[(\d+), (\d+)\]", "a batched matmul (@) needs the right tensor's batch and first axes "
     "to be ({0}, {1}), the left's batch and last axes; they are ({2}, {3}) (torch counts the "
     "leading axes as one batch: B * h for (B, h, ...))"),
    (r"element 0 of tensors does not require grad and does not have a grad_fn",
     ".backward() found no graph to go back through: the loss was computed without gradients "
     "(under torch.no_grad(), or from a detached tensor)"),
    (r"division by zero",
     "a division by 0: what divides is 0 for this input"),
    (r"list index out of range",
     "an index past the end of a list: a list of n entries has indices 0 to n - 1"),
    (r"Expected target size \[([-\d, ]*)\], got \[([-\d, ]*)\]",
     "cross-entropy reads the classes on axis 1 of its input: logits (B, T, V) and targets (B, "
     "T) go in flattened, as (B * T, V) and (B * T,) (model(x, y) gives that loss already)"),
    (r"Expected input batch_size \((\d+)\) to match target batch_size \((\d+)\)",
     "cross-entropy needs a target for each row of logits: {0} rows of logits, {1} targets"),
    (r"expected Tensor as element (\d+) in argument \d+, but got NoneType",
     "torch.cat or torch.stack met None where a tensor goes: entry {0} of what it joins is None "
     "(a slot that was never filled?)"),
    (r"derivative for (?:aten::)?(\w+) is not implemented",
     "{0} passes no gradient back (// and rounding have none): a tensor a loss goes back "
     "through must be made without it"),
    (r"training mode is expected to be boolean",
     "model.train(mode) takes True or False: the mode it was given is something else (the mode "
     "a model is in is model.training; model.train, without its (), is a method)"),
    (r"Trying to backward through the graph a second time",
     ".backward() ran twice on one forward's graph: the first frees it; one loss, one backward"),
    (r"grad can be implicitly created only for scalar outputs",
     ".backward() starts from one number, the loss; this tensor holds more than one entry"),
    (r"mat1 and mat2 shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\)",
     "a matmul needs the left's last axis equal to the right's first: {1} against {2}"),
    (r"expected m1 and m2 to have the same dtype, but got: (\w+) != (\w+)",
     "a matmul met a {0} tensor and a {1} one: both must have one dtype"),
    (r"Tensors must have same number of dimensions: got (\d+) and (\d+)",
     "torch.cat joins tensors of as many axes each; these have {0} and {1}"),
    (r"Sizes of tensors must match except in dimension (\d+)\. Expected size (\d+) but got size "
     r"(\d+) for tensor number (\d+)", "torch.cat along axis {0} needs every other axis equal: "
     "tensor {3} has {2} where the first has {1}"),
    (r"stack expects each tensor to be equal size, but got \[([\d, ]*)\] at entry 0 and "
     r"\[([\d, ]*)\] at entry (\d+)", "torch.stack needs tensors of one shape: entry 0 is "
     "({0}), entry {2} is ({1})"),
    (r"view size is not compatible with input tensor's size and stride",
     ".view reads a tensor's memory in order, and this one's is out of order (a transpose, or a "
     "slice that skips entries, made it so): .reshape (or .contiguous() first) copies it"),
    (r"expected target dtype to be Long or Byte, but got (\w+)",
     "cross-entropy's targets are token ids, int64 (torch.long); these are {0}"),
    (r"For 1D input, 1D target must have size 1, but got target size: (\d+)",
     "cross-entropy met one row of logits (1-D) and {0} targets: the logits lost their batch and "
     "position axes (B, T, V), so a batch is not (B, T) ids"),
    (r"upper bound and lower bound inconsistent with step sign",
     "torch.arange(start, end) counts up from start to end: here end is below start (an end "
     "written as a count, T, where start + T was meant?)"),
    (r"Converting a tensor with requires_grad=True to a scalar",
     "a tensor that carries gradients was made a Python number (float(), math, an if): torch "
     "warns, and .item() gives the same number without it (or a function returned the tensor "
     "where its number was expected)"),
    (r"Using backward\(\) with create_graph=True",
     "backward(create_graph=True) builds a graph of the gradients themselves, for second "
     "derivatives: a training step's backward is loss.backward()"),
    (r"(too many|not enough) values to unpack \(expected (\d+)",
     "unpacking into {1} names takes a value's items, a tensor's rows along its first axis: "
     "{0} of them here; a pair (x, y) unpacks into x, y, a batch of pairs is looped over"),
    (r"'type' object does not support the context manager protocol",
     "a with statement takes an object, not its class: torch.no_grad() with its ()"),
    (r"cannot access local variable '(\w+)' where it is not associated with a value",
     "{0} is read before any line set it on this path: the line that sets it did not run (it "
     "raised, and a finally or an except went on; or a branch skipped it)"),
    (r"index out of range in self",
     "an nn.Embedding met an id past its rows: n rows take the ids 0 to n - 1 (tok_emb's are the "
     "vocabulary's, pos_emb's the positions up to T_max)"),
    (r"Given normalized_shape=\[(\d+)\], expected input with shape \[\*, \d+\], but got input of "
     r"size\[([-\d, ]*)\]", "a LayerNorm over {0} features met a tensor whose last axis is not "
     "{0}: ({1})"),
    (r"The \.grad attribute of a Tensor that is not a leaf Tensor is being accessed",
     "a tensor computed from the weights (a loss, an activation) holds no .grad: what reads "
     "gradients (clip_grad_norm_, an optimizer) takes the parameters, model.parameters()"),
    (r"Boolean value of Tensor with more than one value is ambiguous",
     "an if (or and, or, not) met a tensor of several entries: it asks for one True or False "
     "(test `is None`, a length, or .any()/.all())"),
    (r"random_ expects 'from' to be less than 'to', but got from=(-?\d+) >= to=(-?\d+)",
     "torch.randint(high, size) draws from 0 to high - 1, so high must be above 0: here it is "
     "{1}"),
    (r"(\w+)\(\) received an invalid combination of arguments - got \((?:[^()]*, )?"
     r"torch\._C\.Generator",
     "torch.{0} takes a generator only by its keyword: generator=..."),
    (r"to - 1 is out of bounds for ([\w ]+)",
     "torch.randint's high is more than its dtype ({0}) holds: a dtype= narrower than int64 "
     "(the default) caps the numbers it can draw"),
    (r"outer: Expected 1-D argument \w+, but got (\d+)-D",
     "torch.outer takes two 1-D tensors, (n,) and (m,), and makes their (n, m) table: one of "
     "these is {0}-D"),
    (r"'indices' to have one of the following scalar types: Long, Int; but got torch\.(\w+)",
     "an nn.Embedding takes integer ids (int64): these are a {0}"),
    (r"'tuple' object has no attribute 'grad'",
     "a (name, parameter) pair met where a parameter goes: model.named_parameters() gives "
     "pairs; what reads .grad (clip_grad_norm_, an optimizer) takes model.parameters()"),
    (r"index (-?\d+) is out of bounds for dimension (\d+) with size (\d+)",
     "an index past the end of a tensor's axis: axis {1} holds {2} entries, 0 to {2} - 1 (-1 is "
     "the last, whatever the size); {0} is not among them"),
    (r"'bool' object is not callable",
     "a True or False was called: a name that held a method holds a bool now (model.train = ... "
     "replaces the method for good; model.train(mode) calls it)"),
    (r"^index (-?\d+) is out of range$",
     "a ModuleList (the blocks, a layer's heads) of n modules takes the indices 0 to n - 1: "
     "{0} is past its end (a layer's number used for a head's?)"),
    (r"`parameters` is an empty generator",
     "clip_grad_norm_ met no parameters: what it was given yields none (model.parameters() is "
     "a generator, used up by a first loop over it; parameters(recurse=False) yields only the "
     "model's own, none of its layers')"),
    (r"randint\(\) received an invalid combination of arguments - got \(int, int, generator",
     "torch.randint(high, size) takes its size as a tuple, (B,), not a number"),
    (r"only integer tensors of a single element can be converted to an index",
     "a tensor of several entries met a place for one integer (a list's index, range(), a "
     "size), or torch.tensor() met a list of tensors, which it does not join: torch.stack "
     "joins tensors of one shape along a new first axis"),
    (r"shape '\[([-\d, ]*)\]' is invalid for input of size (\d+)",
     "a view or reshape to ({0}) must hold exactly the tensor's {1} entries"),
)]  # fmt: skip


# what an argument written as an expression may be made of to be computed again for the screen:
# no method, property or function of the student's runs, only these, which draw nothing
PURE_CALLS = {"len", "int", "float", "abs", "min", "max", "arange", "zeros", "ones", "tensor"}
PURE_NODES = (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop,
              ast.Subscript, ast.Slice, ast.Tuple, ast.Load, ast.keyword, ast.Call, ast.Attribute)  # fmt: skip
READABLE = {"shape", "dtype", "T", "mT", "ndim"}  # a tensor's attributes that run no code of theirs


def _library_module(value) -> bool:
    """torch or math themselves: modules whose functions and names are no student's."""
    return inspect.ismodule(value) and value.__name__ in ("torch", "math")


def _plain(value) -> bool:
    """A value whose operators and indexing are Python's or torch's own, never a class of theirs."""
    if type(value) in (int, float, bool, tuple, list, slice) or _library_module(value):
        return True
    return type(value).__name__ in ("Tensor", "Parameter", "dtype") and type(
        value
    ).__module__.startswith("torch")


def _pure(node, scope: dict) -> bool:
    """Can `node` be computed again without running anything of the student's (see PURE_CALLS)?"""
    called = {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
    for n in ast.walk(node):
        if not isinstance(n, PURE_NODES):
            return False
        if isinstance(n, ast.Name) and id(n) not in called and not _plain(scope.get(n.id)):
            return False  # a name of some other kind: its operators may be the student's
        if isinstance(n, ast.Name) and id(n) in called and n.id in scope:
            return False  # len shadowed by a function of theirs
        if isinstance(n, ast.Call):
            name = n.func.id if isinstance(n.func, ast.Name) else getattr(n.func, "attr", "")
            base = getattr(n.func, "value", None)
            module = base is None or _library_module(scope.get(getattr(base, "id", ""), None))
            if name not in PURE_CALLS or not module:
                return False
        elif isinstance(n, ast.Attribute) and n.attr not in READABLE:  # torch.float64 is a module's
            if not _library_module(scope.get(getattr(n.value, "id", ""), None)):
                return False
    return True


def _arguments(part: str, globals_: dict, local: dict) -> list[str]:
    """The arguments of the call that raised that are expressions, not names (`len(data) - B`,
    `torch.arange(T)[:, None]`), computed again from the frame: each one's value or shape."""
    try:
        call = ast.parse(part.strip(), mode="eval").body
    except SyntaxError:
        return []
    if not isinstance(call, ast.Call):
        return []
    scope = {**globals_, **local}
    said = []
    for node in [*call.args, *(k.value for k in call.keywords)]:
        plain = lambda n: isinstance(n, ast.Name) or _literal(n)  # noqa: E731
        if plain(node) or isinstance(node, ast.Tuple | ast.List) and all(map(plain, node.elts)):
            continue  # a name is described above; a constant (-1, (B, 3)) says itself
        if not _pure(node, scope):
            continue
        with warnings.catch_warnings(), contextlib.suppress(Exception):
            warnings.simplefilter("ignore")
            value = eval(compile(ast.Expression(node), "<argument>", "eval"), globals_, local)
            if described := _described(value):
                said.append(f"{ast.unparse(node)} {described}")
    return said[:3]


def _literal(node: ast.expr) -> bool:
    """Is an argument a constant as written (`-1`, `(2, 3)`, `[0, 1]`)?"""
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return False
    return True


def _whole_value(statement: str) -> str:
    """The expression a one-line statement computes (`attn.proj(out)` of `return attn.proj(out)`)."""
    try:
        node = ast.parse(statement.strip()).body[0]
    except (SyntaxError, IndexError):
        return statement.strip()
    value = getattr(node, "value", None) or node
    return ast.get_source_segment(statement.strip(), value) or statement.strip()


def _raising_part(entry) -> str:
    """The part of its line that was running when the statement raised (`model(x, y)[0].item()`),
    from the positions Python keeps for each instruction; '' when they span lines or are unknown."""
    raw = entry._rawentry  # pytest's entry over the traceback object
    positions = itertools.islice(raw.tb_frame.f_code.co_positions(), raw.tb_lasti // 2, None)
    line, end, start, stop = next(positions, (None,) * 4)
    if None in (line, start, stop) or line != end:
        return ""
    return linecache.getline(raw.tb_frame.f_code.co_filename, line)[start:stop]


# errors Python raises itself, never torch: a name or attribute that is not there (often a None)
PYTHONS = (AttributeError, NameError, KeyError, ZeroDivisionError, RecursionError)


# torch's argument checks' words in a TypeError: "cos(): argument 'input' ... must be Tensor",
# "expected Tensor as element 0", "only integer tensors of a single element", "invalid combination"
TORCH_SAYS = re.compile(
    r"invalid combination|torch|\(\): argument|expected Tensor|must be Tensor|tensors? "
)


def _pythons(exc) -> bool:
    """Did Python refuse it, not torch: PYTHONS, or a TypeError in Python's words (a function
    used as a context manager, a tuple called), not in torch's (TORCH_SAYS)."""
    if exc.errisinstance(PYTHONS):
        return True
    if exc.errisinstance(ValueError):  # unpacking's, not a tensor's
        return re.search(r"values to unpack", str(exc.value)) is not None
    if exc.errisinstance(IndexError):  # a list's or a tuple's, not a tensor's "in self"
        return re.match(r"(list|tuple) index", str(exc.value)) is not None
    return exc.errisinstance(TypeError) and not TORCH_SAYS.search(str(exc.value))


def _names(statement: str) -> list[str]:
    """The names a statement reads, in order, once each, and the attributes it reads of them
    (`cfg.warmup`, not a method it calls), but no comment or string."""
    names, chain, after_dot = [], [], False

    def read(called: bool) -> None:
        names.extend(chain[:1] + ([".".join(chain)] if len(chain) > 1 and not called else []))
        chain.clear()

    try:
        for token in tokenize.generate_tokens(io.StringIO(statement).readline):
            if token.type == tokenize.NAME and not keyword.iskeyword(token.string):
                if not (after_dot and chain):
                    read(False)
                chain.append(token.string)
            elif token.string != ".":
                read(token.string == "(")
            after_dot = token.string == "."
    except (tokenize.TokenError, SyntaxError):
        pass  # a statement cut short: the names read so far
    read(False)
    return list(dict.fromkeys(names))


def _value(name: str, local: dict):
    """A frame's name (`cfg.warmup`) by its attributes as stored, no property run (or MISSING)."""
    root, *attributes = name.split(".")
    value = local.get(root, MISSING)  # a global, a keyword or a builtin: the frame holds none
    for attribute in attributes:
        if attribute in TURNED and type(value).__name__ in ("Tensor", "Parameter"):
            with warnings.catch_warnings():  # .T of more than 2 axes warns: it reverses them all
                warnings.simplefilter("ignore")
                value = getattr(value, attribute)  # a view: its shape is what the line met
            continue
        value = value if value is MISSING else inspect.getattr_static(value, attribute, MISSING)
    return value


TURNED = ("T", "mT")  # a tensor's transposes, read as values: `K.T` is a shape of its own


MISSING = object()  # a name a frame does not hold
DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


def _indexed(statement: str, local: dict) -> list[tuple[str, object]]:
    """Each `name[key]` a statement reads of a list, tuple or dict (`self.values[layer]`), its key
    a constant or a name the frame holds, and the entry held there: no __getitem__ of theirs runs."""
    try:
        tree = ast.parse(_one_line(statement).strip())
    except SyntaxError:
        return []  # a piece of a statement (`else:`): nothing to read
    found = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Subscript) and DOTTED_NAME.fullmatch(ast.unparse(node.value))):
            continue
        held = _value(ast.unparse(node.value), local)
        key = node.slice
        key = key.value if isinstance(key, ast.Constant) else _value(getattr(key, "id", ""), local)
        if type(held) in (list, tuple, dict) and type(key) in (int, str):
            with contextlib.suppress(IndexError, KeyError, TypeError):
                found[ast.unparse(node)] = held[key]
    return list(found.items())


def _described(value, attribute: bool = False) -> str:
    """A frame's value as the course names it: a tensor's shape and dtype, a number, None, a tuple
    of them, a method an `attribute` names but no call follows (`model.parameters`); else ''."""
    if isinstance(value, tuple) and 0 < len(value) <= 4:  # a function's values, not unpacked
        parts = [_described(v).removeprefix("= ") or type(v).__name__ for v in value]
        return f"= a tuple of {len(value)}: ({', '.join(parts)})"
    if attribute and inspect.isroutine(value):
        return "= a method, not called (no parentheses)"
    if type(value).__module__.startswith("torch") and hasattr(value, "shape"):
        grad = " requiring grad" if getattr(value, "requires_grad", False) else ""
        return f"{tuple(value.shape)} {str(value.dtype).removeprefix('torch.')}{grad}"
    if isinstance(value, int | float) and not isinstance(value, bool) or value is None:
        return f"= {value}"
    return ""


_STATEMENTS: dict[tuple[tuple[str, ...], int], str] = {}  # (a file's lines, line) -> statement
_STARTS: dict[tuple[str, ...], ast.Module] = {}  # a file's lines -> where its statements start


def _statement(entry) -> str:
    """A traceback entry's statement, as pytest finds it, found once per file's text and line: a
    curated-bug scan meets the same frames bug after bug."""
    source = entry.frame.code.fullsource
    if source is None:
        return str(entry.statement).strip()  # pytest's own error for a frame without source
    lines = tuple(source.lines)
    if (lines, entry.lineno) not in _STATEMENTS:
        if lines not in _STARTS:
            _STARTS[lines] = _starts(str(source))
        _, start, end = getstatementrange_ast(entry.lineno, source, astnode=_STARTS[lines])
        _STATEMENTS[lines, entry.lineno] = str(source[start:end]).strip()
    return _STATEMENTS[lines, entry.lineno]


def _starts(text: str) -> ast.Module:
    """The lines pytest cuts a file's statements at, as one flat tree of `pass` statements: pytest
    walks the whole tree of the file at every frame it reads (0.2 s a frame of a test file), and
    walks this one in a thousandth of that, to the same start and end."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pytest's own: no warning twice from a file's parse
        tree = ast.parse(text, "source", "exec")
    at = []  # as _pytest._code.source.get_statement_startend2 collects them (0-based)
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt | ast.ExceptHandler):
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                at += [d.lineno - 1 for d in node.decorator_list]
            at.append(node.lineno - 1)
            at += [part[0].lineno - 2 for part in (getattr(node, n, None) for n in
                   ("finalbody", "orelse")) if part]  # fmt: skip
    return ast.Module([ast.Pass(lineno=n + 1) for n in at], [])


EXPECT = Path(__file__).parent.parent / "expect.py"  # the value checks: out of tracebacks
CHECK_DIR = Path(__file__).parent  # the check itself (its line tracer): no bug of the student's
DETAIL = 3  # detail lines of an error's message shown under its first line
