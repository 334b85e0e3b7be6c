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


def parse(text: str, where: str = "solution") -> tuple[list[str], list[Region]]:
    """(the file's lines with each region replaced by a None placeholder, its regions)."""
    kept, regions, region, body = [], [], None, []
    for number, line in enumerate(text.splitlines(), start=1):
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


def _raise(region: Region) -> list[str]:
    """The starter's lines for a region: its STARTER code, else the raise, as `ruff format` lays it out."""
    if region.starter:
        return region.starter
    message, indent = region.message, region.indent
    quote = "'" if '"' in message and "'" not in message else '"'  # ruff's preference
    literal = quote + message.replace("\\", "\\\\").replace(quote, "\\" + quote) + quote
    if len(f"{indent}raise NotImplementedError({literal})") <= WIDTH:
        return [f"{indent}raise NotImplementedError({literal})"]
    return [f"{indent}raise NotImplementedError(", f"{indent}    {literal}", f"{indent})"]


def starter_text(solution: str, where: str = "solution") -> str:
    """The starter for one marked solution file's text: the hints stay out of it."""
    kept, regions = parse(solution, where)
    made = iter(regions)
    out = [line for k in kept for line in ([k] if k is not None else _raise(next(made)))]
    return "\n".join(out) + "\n"


def module_name(folder: Path, path: Path) -> str:
    """The dotted module of a file under an implementation folder: 'exercises.wrong_mask'."""
    return path.relative_to(folder).with_suffix("").as_posix().replace("/", ".")


def order_key(todo: str) -> list:
    """Sort key: 'task 10' after 'task 9', '4.2.4' after '4.2.3'."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", todo)]


def step_regions(folder: Path) -> dict[str, dict]:
    """TODO id -> module, file, the functions its regions sit in, their Regions; in course order."""
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
        for region in parse(text, str(path))[1]:
            inside = (q for q, fn in functions if fn.lineno <= region.line <= fn.end_lineno)
            name = next(inside, "")  # "" for a region outside any function
            entry = todos.setdefault(
                region.id,
                {"module": module_name(folder, path), "functions": [], "file": path, "regions": []},
            )
            entry["functions"].append(name)
            entry["regions"].append(region)
            if region.starter:  # code the starter ships, stripped as the check compares it
                entry.setdefault("shipped", []).extend(line.strip() for line in region.starter)
    return dict(sorted(todos.items(), key=lambda kv: order_key(kv[0])))
