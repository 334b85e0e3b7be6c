"""Grade a step's starter from the check's own TODO states: `python -m tools.grade lab-01 [SUBMISSION]`.

A TODO the check marks [x] earns its weight; any other earns its tests' share passed (none while it
is not written). The submission (a folder or zip of the step's starter files; default: your
starter) is graded on a copy, in a contained child process; nothing of yours is changed.
"""

import argparse
import csv
import hashlib
import io
import json
import re
import shutil
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from common import REPO_ROOT, STEPS_DIR, shown
from common.catchup import source_files
from common.course import Step, course, course_step, describe
from common.loader import py_files, step_dir
from common.todos import module_name, optional, parse, split_id
from tools import check_command, pristine
from tools.gradescope import results_json
from tools.sandbox import Limits, ended, run_contained

PER_TEST = 10.0  # CPU seconds per test: the check's own default (common/check.py TIMEOUT)
MARKS = re.compile(r"^\[(.)\] TODO\(([^)]*)\): (.*)$", re.M)  # a TODO's line on the check's screen
# Failures that are a guard's refusal, not a wrong result: the TODO earns 0, not the share of tests
# its code did not reach (a loop, os._exit, a replaced judge, memory, network, a course file, the
# reference). The check's JSON has no field for it yet, so its one-line reason is read.
REFUSALS = re.compile(
    r"TookTooLong|EndsPython|replaced \S+ during this test|Read-only file system|"
    r"can't allocate memory|MemoryError|gaierror|Network is unreachable|"
    r"the graded copy holds no reference"
)
LIMIT = 1_000_000  # bytes: a submission larger than this is refused (a starter is a few kB)


class SubmissionError(ValueError):
    """A submission that cannot be graded (no starter file in it, a bad zip): one line."""


@dataclass
class Line:
    """One TODO's score."""

    todo: str
    state: str  # the check's state: done, bug, todo, waiting, untested, optional, exercise
    score: float
    weight: float  # 0 for optional work: shown, not counted
    reason: str

    @property
    def counted(self) -> bool:
        return not optional(self.todo)


@dataclass
class Grade:
    """A submission's grade: a line per TODO, and what happened around the run."""

    step: str
    lines: list[Line]
    notes: list[str] = field(default_factory=list)  # the run's own lines (a stop, containment)
    seconds: float = 0.0
    screen: str = ""  # the check's own screen, as the student would see it

    @property
    def score(self) -> float:
        return sum(line.score for line in self.lines if line.counted)

    @property
    def max_score(self) -> float:
        return sum(line.weight for line in self.lines if line.counted)


# --- the graded copy --------------------------------------------------------------------------


REFUSED = "the graded copy holds no reference solution of this step: grade your own code"


def hollow(text: str, where: str) -> str:
    """A marked solution file without its reference code: each region raises REFUSED (a shipped
    bug keeps its STARTER code); the markers stay, so the check still reads the regions."""
    kept, regions = parse(text, where)
    made, out = iter(regions), []
    for line in kept:
        if line is not None:
            out.append(line)
            continue
        region = next(made)
        i = region.indent
        out.append(f"{i}# BEGIN SOLUTION TODO({region.id})")
        out += [f"{i}# STARTER: {s[len(i) :]}" for s in region.starter]
        out += region.starter or [f'{i}raise RuntimeError("{REFUSED}")']
        out.append(f"{i}# END SOLUTION")
    return "\n".join(out) + "\n"


def _starter_root(root: Path, solution: Path) -> Path:
    """The folder in an unpacked submission that holds the starter's files (attention.py, ...)."""
    wanted = [p.relative_to(solution) for p in py_files(solution)]
    candidates = [root, root / "starter"]
    while True:  # a zip often holds one folder: look inside it
        entries = [p for p in root.iterdir() if p.name not in ("__MACOSX", ".DS_Store")]
        if len(entries) != 1 or not entries[0].is_dir():
            break
        root = entries[0]
        candidates += [root, root / "starter"]
    candidates += [c / "steps" / solution.parent.name / "starter" for c in list(candidates)]
    for folder in candidates:
        if folder.is_dir() and any((folder / rel).is_file() for rel in wanted):
            return folder
    names = ", ".join(r.as_posix() for r in wanted)
    raise SubmissionError(f"the submission holds none of the starter's files ({names})")


def _unpack(submission: Path, dest: Path) -> Path:
    """A folder with the submission's files: the folder itself, or the zip unpacked safely."""
    if submission.is_dir():
        return submission
    if not zipfile.is_zipfile(submission):
        raise SubmissionError(f"{submission} is neither a folder nor a zip file")
    out = dest / "unzipped"
    with zipfile.ZipFile(submission) as z:
        if sum(i.file_size for i in z.infolist()) > 20 * LIMIT:
            raise SubmissionError(f"{submission.name} unpacks to more than {20 * LIMIT} bytes")
        for info in z.infolist():
            target = (out / info.filename).resolve()
            if not target.is_relative_to(out.resolve()):  # ../ in a name: never outside `out`
                raise SubmissionError(f"{submission.name} holds a path outside it: {info.filename}")
        z.extractall(out)
    return out


def graded_copy(step: str, submission: Path | None, dest: Path) -> Path:
    """The steps folder the check runs on: the step and those before it as shipped, the
    submission in its starter/, and the step's reference code taken out of its solution/."""
    here = describe(step_dir(step))
    earlier = [s.name for s in course() if s.order < here.order and s.folder.parent == STEPS_DIR]
    steps = pristine([*earlier, step], dest)
    folder = steps / step
    copy = Step(step, folder)  # the copy's layout
    mine = here.starter if submission is None else None
    source = mine if mine is not None else _starter_root(_unpack(submission, dest), copy.solution)
    total = 0
    for rel in sorted(source_files(source)):  # links to folders are not followed, caches skipped
        path = source / rel
        if not path.is_file() or path.is_symlink():
            continue
        total += path.stat().st_size
        if total > LIMIT:
            raise SubmissionError(f"the submission is larger than {LIMIT} bytes")
        target = copy.starter / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)  # over the generated file: what was not submitted stays
    kept = (here.grade or {}).get("reference_kept", [])
    for path in py_files(copy.solution):
        module = module_name(copy.solution, path)
        if module not in kept:
            text = path.read_text(encoding="utf-8")
            path.write_text(hollow(text, shown(path)), encoding="utf-8", newline="\n")
    return steps


def fingerprint(steps: Path, step: str) -> dict[str, str]:
    """sha256 of every file of the copy except the submission's own starter/ and caches."""
    starter = Step(step, steps / step).starter
    return {
        f"steps/{path.relative_to(steps).as_posix()}": hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(steps.rglob("*"))
        if path.is_file() and not path.is_relative_to(starter) and "__pycache__" not in path.parts
    }


# --- grading ----------------------------------------------------------------------------------


def weights(step: str) -> dict[str, float]:
    """step.toml's [grade] weights: task -> weight ('task 2' = 2); 1 for any TODO not named."""
    return {
        k: float(v) for k, v in (describe(step_dir(step)).grade or {}).get("weights", {}).items()
    }


def score_lines(step: str, model: dict | None, screen: str, why: str = "") -> list[Line]:
    """A Line per TODO, from the check's JSON model (None: the check did not report; `why`)."""
    notes = {todo: note for _, todo, note in MARKS.findall(screen)}
    weight_of = weights(step)
    lines = []
    for todo in course_step(step).regions():
        weight = 0.0 if optional(todo) else weight_of.get(split_id(todo)[1], 1.0)
        entry = (model or {}).get(step, {}).get(todo)
        if entry is None:
            lines.append(Line(todo, "not run", 0.0, weight, why or "the check did not report it"))
            continue
        state = entry["state"]
        ran = entry["passed"] + entry["failing"] + entry["waiting"]
        if state == "done":
            share = 1.0
        elif state in ("todo", "optional", "exercise") or REFUSALS.search(entry["reason"]):
            share = 0.0  # not written yet, or refused by a guard: nothing to share
        else:
            share = entry["passed"] / ran if ran else 0.0
        reason = entry["reason"] or notes.get(todo, state)
        lines.append(Line(todo, state, round(weight * share, 4), weight, reason))
    return lines


def grade(
    step: str,
    submission: Path | None = None,
    limits: Limits | None = None,
    per_test: float = PER_TEST,
) -> Grade:
    """Grade one submission of `step` (None: the student's own starter) on a contained copy."""
    limits = limits or Limits()
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="course-grade-") as tmp:
        tmp = Path(tmp)
        try:
            steps = graded_copy(step, submission, tmp)
        except (SubmissionError, OSError) as exc:
            why = str(exc)
            return Grade(step, score_lines(step, None, "", why), [why], time.monotonic() - start)
        before = fingerprint(steps, step)
        report = tmp / "check.json"
        args = [str(steps / step), "--impl", "starter", "--check-json", str(report)]
        cmd, env = check_command(steps, [*args, f"--timeout={per_test:g}"])
        env.pop("PIXI_PROJECT_ROOT", None)  # the screen's commands are the student's, not ours
        protect = [REPO_ROOT] + ([submission] if submission and submission.is_dir() else [])
        protect = [p.resolve() for p in protect if not tmp.resolve().is_relative_to(p.resolve())]
        outcome = run_contained(
            cmd,
            env=env,
            cwd=tmp,
            protect=[*protect, steps.resolve()],
            hide=[
                (REPO_ROOT / step_rel).resolve() for step_rel in (f"steps/{step}/solution", ".git")
            ],
            writable=[(steps / step / "starter").resolve()],
            limits=limits,
        )
        notes = [f"contained: {'; '.join(outcome.contained)}", *outcome.missing]
        if kept := (describe(step_dir(step)).grade or {}).get("reference_kept"):
            notes.append(
                f"the graded copy keeps {step}'s reference {', '.join(kept)} (its tests judge with "
                "them), so the submission's code can reach it too"
            )
        after = fingerprint(steps, step)
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        model = None
        if report.is_file():
            try:
                model = json.loads(report.read_text(encoding="utf-8"))
            except ValueError:
                model = None
        screen = outcome.stdout
        stopped = [
            ln
            for ln in screen.splitlines()
            if ln.startswith(("The check stopped", "The run stopped"))
        ]
        notes += stopped
        if changed:
            why = f"the submission's code changed {changed[0]} (a course file, not your starter): every TODO scores 0"
            lines = [
                Line(t.todo, t.state, 0.0, t.weight, why) for t in score_lines(step, model, screen)
            ]
            notes.append(why)
        elif model is None:
            why = _why_no_report(outcome, limits)
            lines = score_lines(step, None, screen, why)
            notes.append(why)
        else:
            lines = score_lines(step, model, screen)
    return Grade(step, lines, notes, time.monotonic() - start, screen + outcome.stderr[-2000:])


def _why_no_report(outcome, limits: Limits) -> str:
    """The check's own one line when it refused to run (a starter that does not import), else how it ended."""
    said = [
        ln.removeprefix("ERROR: ").strip()
        for ln in outcome.stderr.splitlines()
        if ln.startswith("ERROR: ")
    ]
    if (
        said
        and outcome.returncode is not None
        and outcome.returncode < 128
        and outcome.returncode >= 0
    ):
        return said[0]
    return ended(outcome, limits)


# --- output -----------------------------------------------------------------------------------


def _n(x: float) -> str:
    """A score as a person reads it: 1, 0.5, 0.67."""
    return f"{round(x, 2):g}"


def text(g: Grade) -> str:
    """The table: one line per TODO (score, max, state, reason), then the total."""
    width = max(len(line.todo) for line in g.lines) + 6
    rows = [f"{'TODO':<{width}} {'score':>7}  state     reason"]
    for line in g.lines:
        score = f"{_n(line.score)}/{_n(line.weight)}" if line.counted else "optional"
        reason = line.reason if len(line.reason) <= 110 else line.reason[:107] + "..."
        rows.append(f"{f'TODO({line.todo})':<{width}} {score:>7}  {line.state:<9} {reason}")
    rows.append(f"{'total':<{width}} {_n(g.score) + '/' + _n(g.max_score):>7}")
    return "\n".join([f"{g.step}: {_n(g.score)} of {_n(g.max_score)}", *rows, *g.notes])


def gradescope(g: Grade) -> dict:
    """Gradescope's results.json: tools.gradescope.results_json."""
    return results_json(g)


def class_csv(step: str, folder: Path, limits: Limits, per_test: float) -> str:
    """One CSV line per student (each folder or zip in `folder`): total, max, then each TODO."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    todos = list(course_step(step).regions())
    writer.writerow(["student", "score", "max_score", *todos, "notes"])
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith(".") or not (entry.is_dir() or entry.suffix == ".zip"):
            continue
        g = grade(step, entry, limits, per_test)
        cells = [_n(line.score) for line in g.lines]
        writer.writerow(
            [
                entry.stem,
                _n(g.score),
                _n(g.max_score),
                *cells,
                " | ".join(n for n in g.notes if not n.startswith("contained: ")),
            ]
        )
        print(f"graded {entry.name}: {_n(g.score)}/{_n(g.max_score)}", file=sys.stderr)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.grade", description=__doc__.split("\n")[0]
    )
    parser.add_argument("step")
    parser.add_argument(
        "submission", nargs="?", type=Path, help="a folder or zip (default: your starter)"
    )
    parser.add_argument("--format", choices=["text", "gradescope"], default="text")
    parser.add_argument(
        "--out", type=Path, help="gradescope: where results.json goes (default ./results.json)"
    )
    parser.add_argument(
        "--class",
        dest="klass",
        type=Path,
        metavar="DIR",
        help="a folder of submissions: one CSV line each",
    )
    parser.add_argument("--timeout", type=float, default=PER_TEST, help="CPU seconds per test")
    parser.add_argument("--screen", action="store_true", help="also print the check's screen")
    parser.add_argument("--wall", type=int, default=Limits.wall, help="seconds per submission")
    args = parser.parse_args(argv)
    try:
        step_dir(args.step)
    except ValueError as exc:
        parser.error(str(exc))
    limits = Limits(wall=args.wall)
    if args.klass:
        if not args.klass.is_dir():
            parser.error(f"--class needs a folder of submissions, got {args.klass}")
        sys.stdout.write(class_csv(args.step, args.klass, limits, args.timeout))
        return 0
    if args.submission is not None and not args.submission.exists():
        parser.error(f"no submission at {args.submission}")
    g = grade(args.step, args.submission, limits, args.timeout)
    if args.format == "gradescope":
        out = args.out or Path("results.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(gradescope(g), indent=2) + "\n", encoding="utf-8")
        print(f"wrote {out}: {_n(g.score)} of {_n(g.max_score)}")
    else:
        print(text(g))
    if args.screen:
        print(f"\nThe check's own screen:\n{g.screen}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
