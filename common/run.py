"""Run a step: `python -m common.run lab-01 [--impl starter] [step options...]`."""

import argparse
import sys

from common import SOLUTIONS_DIR, command
from common.envreport import report
from common.loader import IMPLS, checkpoint_names, load_file, step_dir, step_names


def runnable() -> dict[str, object]:
    """Step and checkpoint names that have a run.py, mapped to its path."""
    found = {name: step_dir(name) / "run.py" for name in step_names()}
    found |= {name: SOLUTIONS_DIR / name / "run.py" for name in checkpoint_names()}
    return {name: path for name, path in sorted(found.items()) if path.is_file()}


def main(argv: list[str] | None = None) -> int:
    """Parse the step name and --impl, print the environment report, then hand over to run.py."""
    scripts = runnable()
    # no -h here: `pixi run lab-01 --help` should reach the step's own options
    argv = sys.argv[1:] if argv is None else argv
    known = argv[0] if argv and argv[0] in scripts else None
    prog = command(f"pixi run {known}", f"python -m common.run {known}") if known else None
    parser = argparse.ArgumentParser(
        prog=prog or "python -m common.run", description=__doc__, add_help=False
    )
    parser.add_argument("step", help=f"one of: {', '.join(scripts)}")
    parser.add_argument("--impl", choices=IMPLS, default="solution", help="code to run")
    if argv and argv[0] in ("-h", "--help"):
        parser.print_help()
        return 0
    if not argv or argv[0].startswith("-"):
        parser.error(f"name a step first; valid steps: {', '.join(scripts)}")
    args, rest = parser.parse_known_args(argv)
    if args.step not in scripts:
        parser.error(f"unknown step {args.step!r}; valid steps: {', '.join(scripts)}")
    if not {"-h", "--help"} & set(rest):  # the step's own help comes without the report
        print(report(), end="\n\n")
    module = load_file(scripts[args.step], f"_course_run_{args.step.replace('-', '_')}")
    return module.main(rest, impl=args.impl)


if __name__ == "__main__":
    sys.exit(main())
