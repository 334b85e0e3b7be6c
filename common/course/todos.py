"""The TODO region format (CONTRIBUTING.md, "Starters are generated"): the one parser of it.

# BEGIN SOLUTION TODO(<step> <task>: <name>)
# CONTRACT: what it returns, the property, the section, the trap (no code)
# HINT 1: ...   # HINT 2: ...   # HINT 3: ...   (asked for one at a time)
<the reference code: level 4>
# END SOLUTION
"""

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from common import py_files, source, source_lines

TODO = re.compile(r"TODO\(([^)]*)\)")  # the id in a marker or a NotImplementedError message
BEGIN, END, STARTER = "# BEGIN SOLUTION ", "# END SOLUTION", "# STARTER:"
TAGS = ("CONTRACT", "HINT 1", "HINT 2", "HINT 3")  # an untagged header is the CONTRACT
WIDTH = 100  # ruff's line length: the raise stays on one line when it fits


@dataclass
class Region:
    """One marked region of a solution file."""

    id: str
    where: str  # the solution file, as shown in messages
    line: int  # of the BEGIN marker, 1-based
    indent: str
    parts: dict[str, str] = field(default_factory=dict)  # tag -> text, in TAGS order
    code: list[str] = field(default_factory=list)  # the reference lines, as written
    starter: list[str] = field(default_factory=list)  # `# STARTER:` code: a shipped bug

    @property
    def message(self) -> str:
        """What the starter raises: the id and the contract."""
        contract = self.parts.get("CONTRACT", "")
        return f"TODO({self.id})" + (f": {contract}" if contract else "")

    @property
    def levels(self) -> list[str]:
        """The help a student asks for, one at a time: HINT 1..3, then the reference code."""
        hints = [self.parts[t] for t in TAGS[1:] if t in self.parts]
        return [*hints, "\n".join(self.code)]


def split_id(todo: str) -> tuple[str, str, str]:
    """'step-04 optional 1: online_softmax' -> ('step-04', 'optional 1', 'online_softmax')."""
    head, _, name = todo.partition(":")
    step, _, task = head.strip().partition(" ")
    return step, task.strip(), name.strip()


def optional(todo: str) -> bool:
    """Does a TODO's id or message mark it optional (the word `optional` in its task part)?"""
    return "optional" in split_id(todo)[1].split()


def todo_in(text: str) -> str | None:
    """The TODO id a message names (the first), or None."""
    return m[1] if (m := TODO.search(text)) else None


def id_problem(todo: str, step: str) -> str | None:
    """Why `todo` is no valid id for a TODO of `step` (None when it is)."""
    got, task, _ = split_id(todo)
    if got != step or not task:
        return (
            f"TODO({todo}): an id is '<step folder> <task>[: <name>]', starting with {step!r}, "
            f"e.g. TODO({step} task 1: my_function)"
        )
    return None


def _comment(line: str) -> str | None:
    """The text of a comment line, or None for code."""
    stripped = line.strip()
    return stripped[1:].strip() if stripped.startswith("#") else None


def _parse_header(region: Region, body: list[str]) -> None:
    """Fill a region's parts, code and starter from the lines between its markers."""
    tag, header = "CONTRACT", True
    for line in body:
        if line.strip().startswith(STARTER):
            region.starter.append(region.indent + line.strip()[len(STARTER) :].removeprefix(" "))
            continue
        text = _comment(line)
        if header and text is not None:
            if opened := next((t for t in TAGS if text.startswith(t + ":")), None):
                tag, text = opened, text.removeprefix(opened + ":").strip()
            region.parts[tag] = f"{region.parts.get(tag, '')} {text}".strip()
        else:  # the first line that is not a comment ends the header
            header = False
            region.code.append(line)


def _outside_regions(text: str) -> set[int]:
    """The numbers of a marked file's lines outside its regions and their markers."""
    outside, inside = set(), False
    for number, line in enumerate(source_lines(text), start=1):
        stripped = line.strip()
        if stripped.startswith(BEGIN) or stripped == END:
            inside = stripped.startswith(BEGIN)
        elif not inside:
            outside.add(number)
    return outside


def parse(text: str, where: str = "solution") -> tuple[list[str], list[Region]]:
    """(the file's lines with each region replaced by a None placeholder, its regions)."""
    kept, regions, region, body = [], [], None, []
    for number, line in enumerate(source_lines(text), start=1):
        stripped = line.strip()
        if stripped.startswith(BEGIN):
            if region:
                raise ValueError(f"{where}:{number}: BEGIN SOLUTION inside another region")
            if not (m := TODO.fullmatch(stripped[len(BEGIN) :].strip())):
                raise ValueError(f"{where}:{number}: write the marker as {BEGIN}TODO(<id>)")
            indent = line[: len(line) - len(line.lstrip())]
            region, body = Region(m[1], where, number, indent), []
        elif stripped == END:
            if not region:
                raise ValueError(f"{where}:{number}: END SOLUTION without a BEGIN SOLUTION")
            _parse_header(region, body)
            regions.append(region)
            kept.append(None)
            region = None
        elif region:
            body.append(line)
        else:
            kept.append(line)
    if region:
        raise ValueError(
            f"{where}:{region.line}: BEGIN SOLUTION TODO({region.id}) has no END SOLUTION"
        )
    return kept, regions


def starter_lines(region: Region) -> list[str]:
    """The starter's lines for a region: its STARTER code, else the raise, as `ruff format` lays it out."""
    if region.starter:
        return region.starter
    message, indent = region.message, region.indent
    quote = "'" if '"' in message and "'" not in message else '"'  # ruff's preference
    literal = quote + message.replace("\\", "\\\\").replace(quote, "\\" + quote) + quote
    if len(f"{indent}raise NotImplementedError({literal})") <= WIDTH:
        return [f"{indent}raise NotImplementedError({literal})"]
    return [f"{indent}raise NotImplementedError(", f"{indent}    {literal}", f"{indent})"]


def without_code(text: str, where: str, body, header: bool = True) -> str:
    """A marked file with each region's reference code replaced by `body(region)`'s lines: the
    markers, its STARTER lines and (with `header`) its contract and hints stay, so this parser
    reads its regions again (an edition's open step, a graded base)."""
    kept, regions = parse(text, where)
    made, out = iter(regions), []
    for line in kept:
        if line is not None:
            out.append(line)
            continue
        region = next(made)
        i = region.indent
        out.append(f"{i}{BEGIN}TODO({region.id})")
        out += [f"{i}# {tag}: {part}" for tag, part in region.parts.items()] if header else []
        out += [f"{i}{STARTER} {s[len(i) :]}" for s in region.starter]
        out += body(region)
        out.append(f"{i}{END}")
    return "\n".join(out) + "\n"


def starter_text(solution: str, where: str = "solution") -> str:
    """The starter for one marked solution file's text: the hints stay out of it."""
    kept, regions = parse(solution, where)
    made = iter(regions)
    out = [line for k in kept for line in ([k] if k is not None else starter_lines(next(made)))]
    return "\n".join(out) + "\n"


def module_name(folder: Path, path: Path) -> str:
    """The dotted module of a file under an implementation folder: 'exercises.wrong_mask'."""
    return path.relative_to(folder).with_suffix("").as_posix().replace("/", ".")


def order_key(todo: str) -> list:
    """Sort key: 'task 10' after 'task 9', '4.2.4' after '4.2.3'."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", todo)]


@dataclass
class Todo:
    """One TODO of a step: the module and file its regions are in, and the functions they sit in."""

    id: str
    module: str
    file: Path  # the solution file
    functions: list[str] = field(default_factory=list)  # "" for a region outside any function
    regions: list[Region] = field(default_factory=list)
    given: frozenset[str] = frozenset()  # its file's code outside every region: the starter's
    # each of its functions -> the code the starter gives inside it (a line the student writes
    # there that is also given elsewhere in the file, `model.train()`, is still theirs)
    inside: dict[str, frozenset[str]] = field(default_factory=dict)
    optional: bool = field(init=False)  # read from its id once, here, not at every look-up

    def __post_init__(self):
        self.optional = optional(self.id)

    @property
    def rel(self) -> str:
        """Its file, relative to the solution and the starter: 'exercises/wrong_mask.py'."""
        return self.module.replace(".", "/") + ".py"

    @property
    def shipped(self) -> list[str]:
        """The code its starter ships (a bug to repair), stripped as the check compares it."""
        return [line.strip() for region in self.regions for line in region.starter]


def step_regions(folder: Path) -> dict[str, Todo]:
    """TODO id -> its Todo (module, file, functions, Regions), in course order."""
    todos = {}
    for path in sorted(folder.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        functions = [
            (f"{cls.name}.{fn.name}" if cls else fn.name, fn)
            for cls in [None, *[n for n in tree.body if isinstance(n, ast.ClassDef)]]
            for fn in (cls.body if cls else tree.body)
            if isinstance(fn, ast.FunctionDef)
        ]
        kept, regions = parse(text, str(path))  # the file's one parse: regions and given code
        code = lambda line: line.strip() and not line.strip().startswith("#")  # noqa: E731
        given = frozenset(k.strip() for k in kept if k and code(k))
        lines, outside = source_lines(text), _outside_regions(text)
        for region in regions:
            inside = (q for q, fn in functions if fn.lineno <= region.line <= fn.end_lineno)
            module = module_name(folder, path)
            todo = todos.setdefault(region.id, Todo(region.id, module, path, given=given))
            todo.functions.append(name := next(inside, ""))
            todo.regions.append(region)
            fn = next((fn for q, fn in functions if q == name), None)
            span = range(fn.lineno, fn.end_lineno + 1) if fn else range(0)
            todo.inside[name] = frozenset(
                lines[n - 1].strip() for n in span if n in outside and code(lines[n - 1])
            )
    return dict(sorted(todos.items(), key=lambda kv: order_key(kv[0])))


# --- the starter a student edits: which TODOs are still open, which lines are theirs -------------


def raised_todos(text: str) -> list[tuple[str, int, str]]:
    """(TODO id, line, message) of each `raise NotImplementedError("TODO(...)...")` in Python source."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []  # the loader says why in one line
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
            arg = node.exc.args[0]
            message = arg.value if isinstance(arg, ast.Constant) else ""
            if isinstance(message, str) and (m := TODO.match(message)):
                found.append((m[1], node.lineno, message))
    return found


def raised_in(starter: Path, todos: dict[str, Todo]) -> dict[str, tuple[Path, int, Region]]:
    """TODO id -> (starter file, line, its Region) of each TODO the starter still raises."""
    found = {}
    for path in py_files(starter):  # read as Python reads them: a BOM, a coding cookie
        for todo, line, message in raised_todos(source(path)):
            if todo in todos and todo not in found:
                regions = todos[todo].regions  # the region this raise stands for
                region = next((r for r in regions if r.message == message), regions[0])
                found[todo] = (path, line, region)
    return found


def shipped_line(todo: Todo, text: str) -> int | None:
    """The line of a TODO's shipped (buggy) code in its starter file's text; None once changed."""
    lines = [line.strip() for line in source_lines(text)]
    return lines.index(todo.shipped[0]) + 1 if todo.shipped and todo.shipped[0] in lines else None


def student_line(lines: tuple[str, ...], line: int, given: frozenset[str]) -> bool:
    """Is line `line` of a starter file (its `lines`) the student's code, not a line it gives?"""
    return line <= len(lines) and lines[line - 1].strip() not in given


def first_student_line(lines: tuple[str, ...], given: frozenset[str], function: str) -> int:
    """The first line the student wrote in `function` ('Class.method') of a starter file."""
    try:
        node = ast.parse("\n".join(lines))
    except (SyntaxError, ValueError):
        return 1  # the loader has said why in one line
    for part in function.split("."):  # "MultiHeadSelfAttention.forward": the class, then the method
        body = getattr(node, "body", [])
        node = next((n for n in body if getattr(n, "name", None) == part), None)
    if node is None:
        return 1
    for line in range(node.body[0].lineno, node.end_lineno + 1):
        text = lines[line - 1].strip()
        if text and not text.startswith("#") and student_line(lines, line, given):
            return line
    return node.lineno
