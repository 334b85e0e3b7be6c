"""The run's room, a student's `pixi run <step>`: `python -m common.run <step> [--impl starter]
[--quick] [--write-docs] [--out DIR]`; the declared experiments (experiment), figures and timing.

The command line of every step's run: CONTRIBUTING.md, "A step's run".
"""

import argparse
import os
import sys
import textwrap
from pathlib import Path

from common import (
    OUT_DIR,
    SOLUTIONS_DIR,
    STEPS_DIR,
    check_command,
    command,
    interpreter,
    run_command,
    shown,
    typed,
)
from common.course import course_step, describe, step_names
from common.course.todos import optional, todo_in
from common.loader import IMPLS, ImplImportError, load_file

TYPES = {"int": int, "float": float, "str": str}


def runnable() -> dict[str, Path]:
    """Step and checkpoint names that have a run.py, mapped to its path."""
    paths = [root / n / "run.py" for root in (STEPS_DIR, SOLUTIONS_DIR) for n in step_names(root)]
    return {p.parent.name: p for p in sorted(paths, key=lambda p: p.parent.name) if p.is_file()}


def parser(step: str, folder: Path) -> argparse.ArgumentParser:
    """The options every step takes, then the step's own (step.toml's [run.options])."""
    about = describe(folder)
    prog = command(f"pixi run {step}", f"python -m common.run {step}")
    parser = argparse.ArgumentParser(prog=prog, description=f"{about.title}: {about.topic}")
    # a student edition ships no reference of the open step: there the default is their own code
    default, code = (
        (
            "starter",
            "the code to run: your starter (default: this step's reference comes when it closes)",
        )
        if course_step(step).unreleased
        else ("solution", "the code to run: the reference solution (default) or your starter")
    )
    parser.add_argument("--impl", choices=IMPLS, default=default, help=code)
    parser.add_argument("--quick", action="store_true", help="a short run (what the tests use)")
    docs = "rewrite the handout's generated blocks (reference solution only)"
    parser.add_argument("--write-docs", action="store_true", help=docs)
    out = (
        f"root of the output folder (default {shown(OUT_DIR)}/; the step writes to <root>/{step}/)"
    )
    parser.add_argument("--out", type=Path, default=OUT_DIR, metavar="DIR", help=out)
    for name, spec in about.run.get("options", {}).items():
        kind = TYPES[spec.get("type", "str")]
        parser.add_argument(f"--{name}", type=kind, default=spec.get("default"), help=spec["help"])
    return parser


def out_problem(folder: Path) -> str | None:
    """Why figures cannot be written to `folder` (None when they can)."""
    for place in (folder, *folder.parents):
        if not place.exists():
            continue
        if not place.is_dir():
            return f"{shown(place)} is a file, not a folder: move it away or choose --out DIR"
        if not os.access(place, os.W_OK | os.X_OK):
            return f"cannot write in {shown(place)}: make it writable or choose --out DIR"
        return None
    return None


def parse(step: str, folder: Path, argv: list[str]) -> argparse.Namespace:
    """The step's options, checked: argparse's one-line error for anything unusable."""
    options = parser(step, folder)
    args = options.parse_args(argv)
    if args.write_docs and (args.impl != "solution" or args.quick):
        options.error(
            "--write-docs records the reference's full run; drop --impl starter and --quick"
        )
    for name, spec in describe(folder).run.get("options", {}).items():
        value = getattr(args, name.replace("-", "_"))
        if "min" in spec and value < spec["min"]:
            options.error(f"--{name} must be at least {spec['min']}, got {value}")
    if problem := out_problem(args.out / step):
        options.error(problem)
    args.step, args.folder, args.readme = step, folder, folder / "README.md"
    return args


def options(step: str, argv: list[str] = ()) -> argparse.Namespace:
    """The parsed options of `step`'s run, as its main(args) gets them (tests call this)."""
    return parse(step, runnable()[step].parent, list(argv))


def not_written(step: str, exc: NotImplementedError) -> tuple[int, str]:
    """(exit code, one line) for a run stopped by a TODO: 0 when only optional work is left."""
    todo = todo_in(str(exc)) or str(exc)
    check = check_command(step)
    if optional(todo):
        return 0, f"optional TODO({todo}) not written: that part of the run is skipped"
    return 1, f"not implemented yet: TODO({todo}). Next: {check}"


def whose(step: str, impl: str) -> str:
    """The run's first line: whose code it runs, so the reference's numbers are not taken for yours."""
    layout = course_step(step)  # a checkpoint's reference is its own folder, solutions/<step>/
    if impl == "starter":
        return f"{step} with your starter ({shown(layout.starter)}/)"
    reference = f"{step} with the reference solution ({shown(layout.solution)}/)"
    return f"{reference}\n  your code: {run_command(step)}"


def main(argv: list[str] | None = None) -> int:
    """Find the step, parse its options, print the environment report, then run its run.py."""
    scripts, argv = runnable(), list(sys.argv[1:] if argv is None else argv)
    step = next((a for a in argv if a in scripts), None)  # before or after the options
    if step is None:
        prog = f"{interpreter()} -m common.run"
        about = f"Run a step: its tables and figures. `{prog} <step> --help` lists its options"
        usage = argparse.ArgumentParser(
            prog=prog, description=f"{about}: --impl starter runs your code."
        )
        usage.add_argument("step", help=f"one of: {', '.join(scripts)}")
        if {"-h", "--help"} & set(argv):
            usage.print_help()
            return 0
        named = next((a for a in argv if not a.startswith("-")), "")
        unknown = f"unknown step {named!r}" if named else "name a step"
        usage.error(f"{unknown}; valid steps: {', '.join(scripts)}")
    argv.remove(step)
    try:
        args = parse(step, scripts[step].parent, argv)
    except ValueError as exc:  # a step.toml missing or wrong: one line naming the file
        sys.exit(f"{interpreter()} -m common.run {step}: {exc}")
    from common.envreport import report  # imports torch: only once the options are known good

    print(report(), end="\n\n")
    print(whose(step, args.impl), end="\n\n")
    try:
        from common.run.experiment import execute  # the one runner of every step's declaration

        return execute(load_file(scripts[step]).RUN, args)
    except ImplImportError as exc:
        print(f"{step} stopped: {exc}")
        return 1
    except NotImplementedError as exc:
        code, line = not_written(step, exc)
        print(line)
        return code
    except Exception as exc:  # noqa: BLE001 - your code crashed: your line, not torch's frames
        if args.impl != "starter" or not (said := crashed(step, exc)):
            raise
        print(said)
        return 1


def crashed(step: str, exc: Exception) -> str:
    """Where the run crashed in the student's starter, and how to see it in the course's words
    ('' when no line of the starter is in its traceback: a crash of the course's own)."""
    starter, tb, line = course_step(step).starter, exc.__traceback__, None
    while tb is not None:
        if Path(tb.tb_frame.f_code.co_filename).resolve().is_relative_to(starter.resolve()):
            line = f"{shown(Path(tb.tb_frame.f_code.co_filename))}:{tb.tb_lineno}"
        tb = tb.tb_next
    if line is None:
        return ""
    check = command(
        f"pixi run check-{step}", f"python -m pytest {typed(STEPS_DIR / step)} --impl starter"
    )
    message = str(exc).splitlines()[0] if str(exc) else ""
    said = [
        f"{step} stopped in your code at {line}: {type(exc).__name__}: {message[:200]}",
        f"Next: {check} shows the failure with the shapes on your line",
    ]
    return "\n".join(textwrap.fill(s, 100, subsequent_indent="  ") for s in said)
