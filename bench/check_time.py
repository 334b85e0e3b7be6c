"""The student's first check against `python -c 'import torch'`: `python -m bench.check_time`.

For each step, the check on its untouched starter (a pristine copy, as `pixi run check-<step>`
runs it), wall time, median of --rounds runs; printed as a ratio to the median of as many
`python -c 'import torch'` runs, taken in turn with them so a busy machine slows both alike.
A measurement to read, never asserted by a test.
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common.course import step_names
from tools import check_command, pristine


def wall(
    cmd: list[str], env: dict | None = None, cwd: Path | None = None, expect: int | None = None
) -> float:
    """Seconds of wall time one run of `cmd` takes (`expect`: the exit code it must end with)."""
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if expect is not None and done.returncode != expect:  # a failed run times nothing worth a line
        raise RuntimeError(
            f"expected exit {expect} from {' '.join(cmd[:6])} ..., got {done.returncode}:\n"
            f"{(done.stdout + done.stderr)[-1500:]}"
        )
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.check_time", description=__doc__)
    parser.add_argument("--rounds", type=int, default=5, help="runs of each (median kept)")
    args = parser.parse_args(argv)
    torch_cmd = [sys.executable, "-c", "import torch"]
    with tempfile.TemporaryDirectory() as tmp:
        steps = pristine(step_names(), Path(tmp))
        checks = {
            s: check_command(steps, [str(steps / s), "--impl", "starter"]) for s in step_names()
        }
        times = {name: [] for name in ["import torch", *checks]}
        for _ in range(args.rounds):  # interleaved: each round times every command once
            times["import torch"].append(wall(torch_cmd))
            for step, (cmd, env) in checks.items():
                times[step].append(wall(cmd, env))
    base = statistics.median(times["import torch"])
    print(f"python -c 'import torch': {base:.2f} s wall (median of {args.rounds})")
    for step in checks:
        median = statistics.median(times[step])
        print(f"check {step:<8} {median:5.2f} s wall = {median / base:.2f} x import torch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
