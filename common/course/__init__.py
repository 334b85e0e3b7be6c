"""The course model: the one registry of steps, which folders are steps and checkpoints
(`step_names`, `course_step`, `at`), what each says about itself (`step.toml`) and where its files
are (`Step`: its solution, starter, tests, regions, open TODOs); its TODOs (todos), curated bugs
(bugs) and prediction prompts (predictions). What is written from it is the maintainer's
(tools/course_map.py)."""

import functools
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from common import REPO_ROOT, SOLUTIONS_DIR, STEPS_DIR, shown
from common.course.todos import Region, Todo, raised_in, step_regions
from common.loader import load_file

PIXI_TOML = REPO_ROOT / "pixi.toml"
# step.toml's keys and their types: CONTRIBUTING.md ("A step describes itself") says what each means
NEEDED = {"title": str, "topic": str, "order": int, "starts_from": str, "todo_modules": list}
TABLES = ("mutation", "run", "grade", "predictions", "uses", "modules")
KEYS = NEEDED | {"lecture_words": int} | dict.fromkeys(TABLES, dict)


@dataclass(frozen=True)
class Step:
    """One step (or checkpoint): its step.toml, and the one owner of its folder's layout (a step
    still being made, a fixture with tests/ and no step.toml, has the layout alone)."""

    name: str
    folder: Path
    title: str = ""
    topic: str = ""
    order: int = 0
    starts_from: str = ""
    todo_modules: list[str] = field(default_factory=list)
    lecture_words: int | None = None
    mutation: dict = field(default_factory=dict)
    run: dict = field(default_factory=dict)  # [run.options.<name>]: type, default, min, help
    grade: dict = field(default_factory=dict)  # [grade]: weights per task, reference_kept modules
    predictions: dict = field(default_factory=dict)  # [predictions]: task -> slots to fill first
    uses: dict = field(default_factory=dict)  # [uses]: earlier step -> the modules of it loaded
    modules: dict = field(default_factory=dict)  # [modules]: its own files beyond the fixed ones

    @property
    def checkpoint(self) -> bool:
        """A checkpoint: an earlier step's reference kept under solutions/, no starter, no TODOs."""
        return self.folder.parent == SOLUTIONS_DIR

    @property
    def solution(self) -> Path:
        """The reference code: solution/ (a checkpoint's folder is its code)."""
        return self.folder if self.checkpoint else self.folder / "solution"

    @property
    def unreleased(self) -> bool:
        """An open step of a student edition: its TODOs in todos/ (contracts and hints, the starter's
        code in each region), its reference not released until the step is closed."""
        return (
            not self.checkpoint and not self.solution.is_dir() and (self.folder / "todos").is_dir()
        )

    @property
    def marked(self) -> Path:
        """The files that carry the TODO regions: the marked solution, or an open step's todos/."""
        return self.folder / "todos" if self.unreleased else self.solution

    @property
    def starter(self) -> Path:
        """The code the student edits, generated from the marked solution."""
        return self.folder / "starter"

    @property
    def tests(self) -> Path:
        return self.folder / "tests"

    def impl(self, impl: str) -> Path:
        """The folder of an implementation: 'solution' or 'starter'."""
        return self.solution if impl == "solution" else self.folder / impl

    def regions(self) -> dict[str, Todo]:
        """TODO id -> its Todo, in course order, from the marked files (none in a checkpoint)."""
        return {} if self.checkpoint else step_regions(self.marked)

    def open_todos(self, todos: dict[str, Todo]) -> dict[str, tuple[Path, int, Region]]:
        """TODO id -> (starter file, line, Region) of each of `todos` the starter still raises."""
        return raised_in(self.starter, todos)

    def catalogue(self) -> ModuleType | None:
        """Its bugs.py (every step has one; a checkpoint none): its BUGS and EQUIVALENT."""
        path = self.folder / "bugs.py"
        return load_file(path) if path.is_file() else None

    def bugs(self) -> list:
        """Its curated bugs (common.course.bugs.Bug) in its handout's order: bugs.py's BUGS."""
        return getattr(self.catalogue(), "BUGS", [])

    def equivalents(self) -> dict[str, str]:
        """The mutants of tools.mutate no test can kill, Mutant.key -> why: bugs.py's EQUIVALENT."""
        return getattr(self.catalogue(), "EQUIVALENT", {})


def describe(folder: Path) -> Step:
    """The step.toml of a step folder, checked (a ValueError names the file and the fix); read
    again only when the file changes."""
    path = folder / "step.toml"
    if not path.is_file():
        raise ValueError(
            f"{shown(path)} is missing: every step describes itself there "
            "(CONTRIBUTING.md, 'A step describes itself'; python -m tools.newstep writes one)"
        )
    stat = path.stat()
    return _describe(folder, (stat.st_mtime_ns, stat.st_size))


@functools.cache
def _describe(folder: Path, stamp: tuple[int, int]) -> Step:
    path = folder / "step.toml"
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    for key, kind in KEYS.items():
        if key not in data and key in NEEDED:
            raise ValueError(f"{shown(path)}: add the key {key!r} ({kind.__name__})")
        if key in data and not isinstance(data[key], kind):
            raise ValueError(f"{shown(path)}: {key!r} must be a {kind.__name__}, got {data[key]!r}")
    if unknown := sorted(set(data) - set(KEYS)):
        raise ValueError(f"{shown(path)}: unknown keys {unknown}; known: {', '.join(KEYS)}")
    for earlier, modules in data.get("uses", {}).items():
        if not (isinstance(modules, list) and all(isinstance(m, str) for m in modules)):
            raise ValueError(
                f"{shown(path)}: [uses] {earlier} must list module names, got {modules!r}"
            )
    return Step(folder.name, folder, **data)


def is_step(folder: Path) -> bool:
    """A step (or checkpoint) folder holds its step.toml, or tests/ (a step being made): a folder
    a student adds (steps/notes/) holds neither, and catch-up, the check and progress skip it."""
    return folder.name[0] not in "._" and (
        (folder / "step.toml").is_file() or (folder / "tests").is_dir()
    )


def step_names(root: Path = STEPS_DIR) -> list[str]:
    """Every step folder under steps/ (or checkpoint under `root`=solutions/), sorted."""
    return sorted(p.name for p in root.iterdir() if p.is_dir() and is_step(p))


def at(folder: Path) -> Step:
    """The Step whose folder is `folder`, wherever it is (a copy, a fixture)."""
    return describe(folder) if (folder / "step.toml").is_file() else Step(folder.name, folder)


def course_step(name: str, root: Path | None = None) -> Step:
    """The step `name` under `root`; without a root, the step or checkpoint `name` (steps/, then
    solutions/). A ValueError lists the valid names."""
    roots = [root] if root else [STEPS_DIR, SOLUTIONS_DIR]
    for where in roots:
        if name in step_names(where):
            return at(where / name)
    what = f"unknown step {name!r}" if name else "name a step"
    also = f" (checkpoints: {', '.join(step_names(SOLUTIONS_DIR))})" if root is None else ""
    raise ValueError(f"{what}; valid steps: {', '.join(step_names(roots[0]))}{also}")


def course(steps_dir: Path = STEPS_DIR) -> list[Step]:
    """Every step and checkpoint that has a step.toml, in course order."""
    folders = [root / n for root in (steps_dir, SOLUTIONS_DIR) for n in step_names(root)]
    described = (describe(f) for f in folders if (f / "step.toml").is_file())
    return sorted(described, key=lambda s: (s.order, s.name))


def pixi_tasks(path: Path = PIXI_TOML) -> dict[str, dict]:
    """pixi.toml's tasks, each normalised to a table with a `cmd`."""
    tasks = tomllib.loads(path.read_text(encoding="utf-8")).get("tasks", {})
    return {n: t if isinstance(t, dict) else {"cmd": t} for n, t in tasks.items()}
