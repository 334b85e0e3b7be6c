"""The grade of one submission against the check on it: `python -m bench.grade_time`.

For lab-01 and step-05, a caught-up starter (common.catchup on a pristine copy) is graded with
`python -m grader.grade <step> <starter>` and checked with `python -m pytest steps/<step> --impl
starter` on the same copy; wall time, median of --rounds runs taken in turn (a busy machine slows
both alike), one thread each (OMP_NUM_THREADS=1, as the check and the grade's worker run), and
their ratio (issue 32 asks for at most 3). A measurement to read, never asserted by a test.
"""

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from bench.check_time import wall
from common import REPO_ROOT
from common.catchup import catch_up
from common.course import step_names
from tools import check_command, pristine

STEPS = ["lab-01", "step-05"]
THREADS = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def commands(steps: Path, step: str) -> dict[str, tuple[list[str], dict]]:
    """The check and the grade of `step`'s caught-up starter under `steps`: name -> (cmd, env)."""
    check, env = check_command(steps, [str(steps / step), "--impl", "starter"], THREADS)
    starter = str(steps / step / "starter")
    grade = [sys.executable, "-m", "grader.grade", step, starter]
    return {"check": (check, env), "grade": (grade, os.environ | THREADS)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.grade_time", description=__doc__)
    parser.add_argument("--rounds", type=int, default=3, help="runs of each (median kept)")
    parser.add_argument("--steps", nargs="+", default=STEPS, choices=step_names())
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        steps = pristine(step_names(), Path(tmp))
        for step in args.steps:
            catch_up(steps / step)
        runs = {(s, kind): cmd for s in args.steps for kind, cmd in commands(steps, s).items()}
        times = {key: [] for key in runs}
        for _ in range(args.rounds):  # interleaved: each round times every command once
            for key, (cmd, env) in runs.items():
                times[key].append(wall(cmd, env, cwd=REPO_ROOT, expect=0))
    for step in args.steps:
        check, grade = (statistics.median(times[step, k]) for k in ("check", "grade"))
        spread = " ".join(f"{t:.1f}" for t in times[step, "grade"])
        print(
            f"{step:<8} check {check:6.1f} s  grade {grade:6.1f} s (runs: {spread})  "
            f"grade / check = {grade / check:.2f} (median of {args.rounds}, wall, 1 thread)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
