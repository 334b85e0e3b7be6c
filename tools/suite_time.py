"""How long `pixi run test` takes, against another commit: `python -m tools.suite_time --against REF`.

Each round runs the `test` task of pixi.toml in this tree and, with --against, the same task of
REF (checked out in a git worktree beside this one, so `../shared` is found the same way, and run
with this Python), one after the other, after one warm-up run each (it writes the bytecode caches).
It prints the median, min and max over the rounds of the wall time and of the time pytest prints.
"""

import argparse
import re
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import REPO_ROOT
from common.course import pixi_tasks


def test_command(root: Path) -> list[str]:
    """The `test` task of root's pixi.toml, run with this Python."""
    words = shlex.split(pixi_tasks(root / "pixi.toml")["test"]["cmd"])
    return [sys.executable, *words[1:]] if words[0] == "python" else words


def one_run(root: Path) -> tuple[float, float, str]:
    """(wall seconds, pytest's seconds, its summary) of one run of root's test task."""
    start = time.perf_counter()
    done = subprocess.run(test_command(root), cwd=root, capture_output=True, text=True)
    wall = time.perf_counter() - start
    summary = re.search(r"(\d+ passed.*) in ([\d.]+)s", done.stdout)
    if done.returncode != 0 or summary is None:
        raise SystemExit(f"the suite in {root} failed (exit {done.returncode})")
    return wall, float(summary[2]), summary[1]


def spread(values: list[float]) -> str:
    """Median and range of a list of seconds."""
    return f"median {statistics.median(values):5.1f} s [{min(values):.1f}, {max(values):.1f}]"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.suite_time", description=__doc__)
    parser.add_argument("--against", metavar="REF", help="a commit to compare with (git worktree)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    trees = {"this tree": REPO_ROOT}
    git = ["git", "-C", str(REPO_ROOT), "worktree"]
    if args.against:
        other = REPO_ROOT.parent / f"{REPO_ROOT.name}-suite-time"
        subprocess.run([*git, "add", "--detach", str(other), args.against], check=True)
        trees[args.against] = other
    try:
        for root in trees.values():
            one_run(root)  # warm-up
        runs = {name: [] for name in trees}
        for r in range(args.rounds):
            for name, root in trees.items():
                runs[name].append(one_run(root))
                wall, clock, summary = runs[name][-1]
                print(f"round {r + 1}, {name}: {summary}, wall {wall:.2f} s, pytest {clock} s")
    finally:
        if args.against:
            subprocess.run([*git, "remove", "--force", str(other)], check=True)
    for name, results in runs.items():
        wall, clock = [r[0] for r in results], [r[1] for r in results]
        print(f"{name:>12}: wall {spread(wall)}; pytest's own time {spread(clock)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
