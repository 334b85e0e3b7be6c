"""Run a step: `python -m common.run lab-01 [--impl starter] [step options...]`."""

import argparse
import sys
from pathlib import Path

from common import SOLUTIONS_DIR, STEPS_DIR, command
from common.envreport import report
from common.loader import IMPLS, load_file, step_names


def runnable() -> dict[str, Path]:
    """Step and checkpoint names that have a run.py, mapped to its path."""
    paths = [root / n / "run.py" for root in (STEPS_DIR, SOLUTIONS_DIR) for n in step_names(root)]
    return {p.parent.name: p for p in sorted(paths, key=lambda p: p.parent.name) if p.is_file()}


def main(argv: list[str] | None = None) -> int:
    """Parse the step name and --impl, print the environment report, then hand over to run.py."""
    scripts = runnable()
    argv = sys.argv[1:] if argv is None else argv
    step = argv[0] if argv else ""
    prog = "python -m common.run"
    if step in scripts:
        prog = command(f"pixi run {step}", f"{prog} {step}")
    # no -h here: `pixi run lab-01 --help` should reach the step's own options
    parser = argparse.ArgumentParser(prog=prog, description=__doc__, add_help=False)
    parser.add_argument("step", help=f"one of: {', '.join(scripts)}")
    parser.add_argument("--impl", choices=IMPLS, default="solution", help="code to run")
    if step in ("-h", "--help"):
        parser.print_help()
        return 0
    if step not in scripts:
        unknown = f"unknown step {step!r}" if step and step[0] != "-" else "name a step first"
        parser.error(f"{unknown}; valid steps: {', '.join(scripts)}")
    args, rest = parser.parse_known_args(argv)
    if not {"-h", "--help"} & set(rest):  # the step's own help comes without the report
        print(report(), end="\n\n")
    module = load_file(scripts[step], f"_course_run_{step.replace('-', '_')}")
    return module.main(rest, impl=args.impl)


if __name__ == "__main__":
    sys.exit(main())
