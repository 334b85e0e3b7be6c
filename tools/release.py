"""The student edition, released week by week: `python -m tools.release <step> <folder>` writes the
course as a class has it the week <step> opens: every earlier step closed (its reference released,
the checkpoint catch-up copies), <step> open (handout, starter, tests, hints: no reference in any
form), later steps absent. <folder> is a git repository of its own; each release is one commit."""

import argparse
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from common import REPO_ROOT, shown
from common.course import Step, course
from common.course.todos import parse, starter_lines, starter_text, without_code
from tools.course_map import course_map

# The course's files a student's commands need, beyond the released steps
TOP = (
    *(".gitattributes", ".gitignore", "LICENSE", "conftest.py", "requirements.txt"),
    *("requirements.lock", "pixi.lock", "pyproject.toml", "pixi.toml", ".pre-commit-config.yaml"),
)
ROOMS = ("common/", "solutions/", "bench/")  # the student's room, the checkpoints, going further
# the instructor's and the maintainer's: their tools are not in the edition
LEFT_OUT = ("bench/check_time.py", "bench/grade_time.py")
TASKS_LEFT_OUT = ("lock-pip", "new-step", "make-starters", "grade", "autograder", "release")
AUTHOR = {"GIT_AUTHOR_NAME": "LLM internals course", "GIT_AUTHOR_EMAIL": "course@localhost"}


@dataclass(frozen=True)
class Plan:
    """One release: the steps a class has, in course order, and which of them are still open."""

    released: list[Step]
    open: set[str]

    @property
    def closed(self) -> list[str]:
        return [s.name for s in self.released if s.name not in self.open and not s.checkpoint]

    def describe(self) -> str:
        opened = ", ".join(s.name for s in self.released if s.name in self.open)
        return f"{opened} open; closed: {', '.join(self.closed) or 'none'}"


def plan(step: str, also_open: tuple[str, ...] = ()) -> Plan:
    """The release of the week `step` opens: every step before it closed, `step` and `also_open`
    (two open at once, a step closed late) open. A ValueError names a step that is not there."""
    order = list(course())
    names = [s.name for s in order]
    for name in (step, *also_open):
        if name not in names or order[names.index(name)].checkpoint:
            raise ValueError(
                f"unknown step {name!r}; steps: {', '.join(s.name for s in order if not s.checkpoint)}"
            )
    last = max(names.index(n) for n in (step, *also_open))
    chosen = Plan(order[: last + 1], {step, *also_open})
    for s in chosen.released:  # a step that builds on another's reference needs it closed
        for earlier, modules in s.uses.items():
            needed = set(modules) & set(order[names.index(earlier)].todo_modules)
            if earlier in chosen.open and needed:
                raise ValueError(
                    f"{s.name} loads {earlier}'s reference ({', '.join(sorted(needed))}): "
                    f"{earlier} must be closed when {s.name} is released"
                )
    return chosen


def hollow(text: str, where: str) -> str:
    """A marked solution file with each region's reference code replaced by the starter's code:
    the headers (contract, hints 1 to 3) and the given code stay, so the one parser reads it."""
    return without_code(text, where, starter_lines)  # the shipped bug's code, or the raise


def released_bugs(step: Step) -> str:
    """An open step's bugs.py as its check reads it: each row's words and how it is recognised,
    without the replacement (the reference's code and the bug's) that bugs.py commits."""
    keep = ("name", "breaks", "fix", "check", "hint", "says", "passes", "fails", "module")
    rows = []
    for bug in step.bugs():
        args = ", ".join(f"{k}={getattr(bug, k)!r}" for k in keep if getattr(bug, k))
        rows.append(f"    Bug({args}),")
    return (
        f'"""{step.name}\'s curated bugs as its check recognises them (its symptom table): the '
        'replacements come with the reference, when the step is closed."""\n\n'
        "from common.course.bugs import Bug\n\n"
        "BUGS = [  # fmt: skip\n" + "\n".join(rows) + "\n]\n"
    )


def tracked(prefix: str = "") -> list[str]:
    """The repository's tracked files under `prefix` (git ls-files), as posix paths."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--", prefix or "."],
        cwd=REPO_ROOT, capture_output=True, check=True,
    ).stdout  # fmt: skip
    return [p for p in out.decode("utf-8").split("\0") if p and (REPO_ROOT / p).is_file()]


COURSE_ONLY = re.compile(r"^pytestmark = .*pytest\.mark\.course\b", re.M)


def instructors(rel: str) -> bool:
    """A test file marked `course` as a whole: it runs the reference (broken copies, whole runs),
    never a student's code, so the check leaves it out; an open step's stays with the instructor."""
    return "/tests/" in rel and bool(
        COURSE_ONLY.search((REPO_ROOT / rel).read_text(encoding="utf-8"))
    )


def step_files(step: Step, is_open: bool) -> dict[str, bytes]:
    """A released step's files: everything but its reference and its starter, the starter made
    from the marked solution; a closed step's solution/ as it is, an open step's todos/ instead."""
    files = {}
    base = f"steps/{step.name}/"
    for rel in tracked(base):
        inner = rel[len(base) :]
        if inner.startswith(("solution/", "starter/")) or (is_open and instructors(rel)):
            continue
        files[rel] = (REPO_ROOT / rel).read_bytes()
    if is_open:
        files[f"{base}bugs.py"] = released_bugs(step).encode("utf-8")
    for path in sorted(step.solution.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        inner = path.relative_to(step.solution).as_posix()
        text = path.read_text(encoding="utf-8")
        made = starter_text(text, inner) if path.suffix == ".py" else text
        files[f"{base}starter/{inner}"] = made.encode("utf-8")
        if not is_open:
            files[f"{base}solution/{inner}"] = path.read_bytes()
        else:
            files[f"{base}todos/{inner}"] = (
                hollow(text, inner) if path.suffix == ".py" else text
            ).encode()
    return files


def pixi_toml(text: str, plan: Plan) -> str:
    """pixi.toml with the student's tasks only: no maintainer's or instructor's task, no task of a
    step not released, no `test-` task of an open step (its reference is not there to test)."""
    names = {s.name for s in plan.released}
    known = {s.name for s in course()}
    drop = set(TASKS_LEFT_OUT) | {f"test-{s}" for s in plan.open}
    drop |= {t for s in known - names for t in (s, f"test-{s}", f"check-{s}")}
    lines, comments = [], []
    for line in text.splitlines():
        if line.startswith("#") and not line.startswith(("# BEGIN", "# END")):
            comments.append(line)  # held until the line it describes is kept or dropped
            continue
        task = re.match(r"^([\w-]+) = \{ cmd", line)
        if task and task[1] in drop:
            comments = []
            continue
        lines += comments + [line]
        comments = []
    text = "\n".join(lines + comments) + "\n"
    return text.replace(  # pyproject's test paths say which: the references the class has
        '"Run every test: contracts, all steps (solutions), checkpoints"',
        '"Run the tests of every closed step and checkpoint, on their references"',
    )


def pyproject(text: str, plan: Plan) -> str:
    """pyproject.toml whose test paths are what the class has references for: the checkpoints
    and the closed steps (`pixi run test` and the README's pip command run them)."""
    paths = ", ".join(f'"{p}"' for p in ["solutions", *(f"steps/{s}" for s in plan.closed)])
    return text.replace(
        'testpaths = ["tests", "grader/tests", "steps", "solutions"]', f"testpaths = [{paths}]"
    )


def hooks(text: str) -> str:
    """The pre-commit hooks without the maintainer's: the starters check and the rooms' imports
    (neither the generator nor the rooms it names are here)."""
    return re.sub(r"      - id: (starters|import-linter)\n(?:        .*\n)+", "", text)


STUDENT_SECTIONS = ("## For instructors", "## Teaching a class", "## Contributing", "## Layout")


def readme(text: str, plan: Plan) -> str:
    """The README for students: the edition's course map and what is open, no instructor's or
    maintainer's section."""
    sections = re.split(r"(?m)^(?=## )", text)
    kept = [s for s in sections if not s.startswith(STUDENT_SECTIONS)]
    text = "".join(kept)
    names = {s.name for s in plan.released}
    rows = course_map().splitlines()
    table = [r for r in rows[:2]] + [r for r in rows[2:] if _row_step(r) in names]
    for s in plan.open:  # no reference of an open step here, so no task that tests it
        table = [r.replace(f"`pixi run test-{s}`", "(when it closes)") for r in table]
    opened = ", ".join(f"**{s}**" for s in [s.name for s in plan.released] if s in plan.open)
    closed = ", ".join(plan.closed) or "none yet"
    note = (
        f"This is the class's edition of the course: {opened} open this week; closed, with "
        f"their reference to catch up from: {closed}. Each new step arrives with its lecture: "
        "`git pull` brings it, and keeps your work. An open step's reference comes when the "
        "step is closed (`pixi run catch-up <step>` then copies it, keeping a backup of yours).\n"
    )
    block = "<!-- BEGIN course-map -->\n" + "\n".join(table) + "\n<!-- END course-map -->\n"
    text = re.sub(
        r"<!-- BEGIN course-map -->\n.*?<!-- END course-map -->\n",
        lambda m: block,
        text,
        flags=re.S,
    )
    text = text.replace(  # the class's suite: the references it has (pyproject's test paths)
        "pixi run test     # every test in the repository, against the reference solutions",
        "pixi run test     # the tests of every closed step and checkpoint, on their references",
    )
    return text.replace("## Course map\n", "## Course map\n\n" + note, 1)


def _row_step(row: str) -> str | None:
    """The step a course-map row links to ('[lab-01](...)')."""
    m = re.search(r"\| \[([\w-]+)\]\(", row)
    return m[1] if m else None


def edition(plan: Plan) -> dict[str, bytes]:
    """Every file of the edition: posix path -> bytes."""
    files = {}
    for rel in tracked():
        if rel in TOP or (rel.startswith(ROOMS) and rel not in LEFT_OUT):
            files[rel] = (REPO_ROOT / rel).read_bytes()
    text = lambda rel: files[rel].decode("utf-8")  # noqa: E731
    files["pixi.toml"] = pixi_toml(text("pixi.toml"), plan).encode()
    files["pyproject.toml"] = pyproject(text("pyproject.toml"), plan).encode()
    files[".pre-commit-config.yaml"] = hooks(text(".pre-commit-config.yaml")).encode()
    files["README.md"] = readme(
        (REPO_ROOT / "README.md").read_text(encoding="utf-8"), plan
    ).encode()
    for step in plan.released:
        if not step.checkpoint:
            files |= step_files(step, step.name in plan.open)
    return dict(sorted(files.items()))


LONG = 25  # characters (whitespace aside): shorter lines (`return out`) stand in any code


def _norm(line: str) -> str:
    """A line of code without its comment and its whitespace ('' for a comment line)."""
    code = line.split("  #")[0] if not line.lstrip().startswith("#") else ""
    return re.sub(r"\s+", "", code)


def _lines(data: bytes) -> str:
    """A file's normalised lines, one a line: a secret found in it stands inside one of them."""
    return "\n".join(_norm(line) for line in data.decode("utf-8", errors="replace").splitlines())


def secret_lines(plan: Plan, files: dict[str, bytes]) -> dict[str, str]:
    """What no file of the edition may hold: each open step's reference lines (its regions' code
    and the lines its bugs replace), of LONG characters or more, normalised -> whose they are. Lines
    the class has anyway are not secret: code its starter gives, what a closed step or a
    checkpoint shows, and what the open step's handout types out for it (Step 4's 4.1)."""
    given = [f"steps/{s.name}/" for s in plan.released if s.name not in plan.open]
    handouts = [f"steps/{name}/README.md" for name in plan.open]
    known = "\n".join(
        _lines(data)
        for rel, data in files.items()
        if rel.startswith((*given, "solutions/")) or rel in handouts or "/starter/" in rel
    )
    secret = {}
    for step in (s for s in plan.released if s.name in plan.open):
        for path in step.solution.rglob("*.py"):
            for r in parse(path.read_text(encoding="utf-8"), path.name)[1]:
                secret |= {_norm(c): f"{step.name} TODO({r.id})" for c in r.code}
        for bug in step.bugs():  # the reference's lines each bug replaces
            secret |= {
                _norm(line): f"{step.name} bug {bug.name!r}" for line in bug.old.splitlines()
            }
    return {s: w for s, w in secret.items() if len(s) >= LONG and s not in known}  # substrings


def leaks(files: dict[str, bytes], secret: dict[str, str]) -> list[str]:
    """'file: the secret line (whose)' for each secret line some file holds (in a line of it, a
    string of bugs.py's too)."""
    found = []
    for rel, data in files.items():
        text = _lines(data)
        found += [f"{rel}: {s} ({w})" for s, w in secret.items() if s in text]
    return found


def objects(folder: Path) -> dict[str, bytes]:
    """Every blob in the git objects of the repository `folder` (history included), by its id."""
    if not (folder / ".git").exists():
        return {}
    ids = git(
        folder, "cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype)"
    )
    blobs = [line.split()[0] for line in ids.stdout.splitlines() if line.endswith(" blob")]
    return {b: subprocess.run(["git", "cat-file", "blob", b], cwd=folder, capture_output=True,
                              check=True).stdout for b in blobs}  # fmt: skip


def git(folder: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    env = os.environ | AUTHOR | {"GIT_COMMITTER_NAME": AUTHOR["GIT_AUTHOR_NAME"],
                                 "GIT_COMMITTER_EMAIL": AUTHOR["GIT_AUTHOR_EMAIL"]}  # fmt: skip
    return subprocess.run(
        ["git", *args], cwd=folder, env=env, capture_output=True, text=True, check=True, **kw
    )


def write(folder: Path, files: dict[str, bytes], message: str) -> str:
    """Write the edition into `folder` (a new git repository, or the last release's) and commit
    it; files of the last release that this one lacks are removed. Returns the commit's summary."""
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / ".git").exists():
        if any(folder.iterdir()):
            raise ValueError(
                f"{folder} holds files and is no edition (no .git): name an empty folder"
            )
        git(folder, "init", "-q", "-b", "main")
    for rel in git(folder, "ls-files", "-z").stdout.split("\0"):
        if rel and rel not in files:
            (folder / rel).unlink(missing_ok=True)
    for rel, data in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    git(folder, "add", "-A")
    if not git(folder, "status", "--porcelain").stdout.strip():
        return "nothing changed since the last release"
    git(folder, "commit", "-q", "-m", message)
    return git(folder, "log", "-1", "--format=%h %s").stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.release", description=__doc__)
    parser.add_argument("step", help="the step that opens this week, e.g. step-05")
    parser.add_argument("folder", type=Path, help="the edition: a new folder, or last week's")
    parser.add_argument(
        "--also-open", action="append", default=[], metavar="STEP",
        help="another step open this week: two at once, or an earlier one closed late",
    )  # fmt: skip
    parser.add_argument("--dry-run", action="store_true", help="list what goes in; write nothing")
    args = parser.parse_args(argv)
    try:
        chosen = plan(args.step, tuple(args.also_open))
    except ValueError as exc:
        parser.error(str(exc))
    files = edition(chosen)
    if args.dry_run:
        print("\n".join(files))
        print(
            f"{len(files)} files, {sum(map(len, files.values())) / 1e6:.1f} MB: {chosen.describe()}"
        )
        return 0
    secret = secret_lines(chosen, files)
    found = leaks(files, secret) + leaks(objects(args.folder.resolve()), secret)
    if found:  # an open step's answer would reach the class: refused, nothing written
        parser.exit(1, f"{parser.prog}: refused, an open step's reference would be in it:\n  "
                    + "\n  ".join(found[:10]) + "\n")  # fmt: skip
    try:
        done = write(args.folder.resolve(), files, f"Release {args.step}: {chosen.describe()}")
    except ValueError as exc:
        parser.exit(1, f"{parser.prog}: {exc}\n")
    print(f"{shown(args.folder.resolve())}: {done}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
