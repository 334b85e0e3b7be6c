"""Start a step that passes every contract: `python -m tools.newstep step-07 "Scratch"`.

Writes steps/<name>/ with every file a step has (CONTRIBUTING.md, "Adding a step"): a solution
with one marked TODO, its starter, a test, its run, one curated bug; then the course map,
CONTRIBUTING's graph and pixi.toml's tasks from its step.toml. Nothing to paste by hand."""

import argparse
import re
import sys

from common import STEPS_DIR, command, shown
from common.course import course
from common.course.todos import starter_text
from common.docs import write_block
from common.loader import load_file
from common.run.experiment import fresh_blocks
from tools.common_map import CONTRIBUTING, step_files
from tools.course_map import write_docs
from tools.symptoms import table

MODULE = "pooling"  # the one module of a new step; rename it (and step.toml) as the step grows

SOLUTION = '''"""{title}: the code the student writes (starter/ is generated from this file)."""

import torch


def check_input(x: torch.Tensor) -> None:
    """Given code: a ValueError for anything but a float [B, T, d] tensor."""
    if not isinstance(x, torch.Tensor) or x.dim() != 3 or not x.is_floating_point():
        raise ValueError(f"x must be a float tensor [B, T, d], got {{getattr(x, 'shape', x)!r}}")


def mean_pool(x: torch.Tensor) -> torch.Tensor:
    """[B, T, d] -> [B, d]: the average of each sequence's T vectors."""
    check_input(x)
    # BEGIN SOLUTION TODO({name} task 1: mean_pool)
    # CONTRACT: returns [B, d], each row the mean over the T positions of that sequence; the
    #   property: a sequence of equal vectors pools to that vector. Trap: the wrong axis.
    # HINT 1: one reduction over the positions, the axis between the batch and the width.
    # HINT 2: Tensor.mean with dim=1; dim=-1 would average the width instead.
    # HINT 3: return x.___(dim=___)
    return x.mean(dim=1)  # (B, T, d) -> (B, d)
    # END SOLUTION
'''

TEST = '''"""mean_pool: the mean over positions, one row per sequence."""

import pytest
import torch

from common import expect
from common.loader import load


@pytest.fixture
def pooling(impl):
    """The module under test (starter or solution, per --impl)."""
    return load("{name}", "{module}", impl)


@pytest.mark.core  # parity with the formula
def test_mean_pool_averages_each_sequence_over_its_positions(pooling):
    x = torch.arange(2 * 3 * 4, dtype=torch.float32).reshape(2, 3, 4)  # (B, T, d)
    pooled = pooling.mean_pool(x)  # (B, d)
    expect.shape("mean_pool(x) for x of [2, 3, 4]", pooled, (2, 4), "one row of d per sequence")
    expect.equal("mean_pool(x)", pooled, torch.stack([x[b].sum(dim=0) / 3 for b in range(2)]))


@pytest.mark.core  # its property
def test_a_sequence_of_equal_vectors_pools_to_that_vector(pooling):
    v = torch.tensor([1.0, -2.0, 0.5])  # (d,)
    x = v.expand(2, 5, 3)  # (B, T, d) the same vector at every position
    expect.equal("mean_pool of five copies of v", pooling.mean_pool(x), v.expand(2, 3))


@pytest.mark.core  # its trap: the wrong axis
def test_the_mean_runs_over_the_positions_not_the_width(pooling):
    x = torch.zeros(1, 4, 2)  # (B, T, d)
    x[0, 0] = torch.tensor([4.0, 8.0])  # only position 0 is non-zero
    expect.equal("mean_pool(x)", pooling.mean_pool(x), torch.tensor([[1.0, 2.0]]), "sum / T = 4")
'''

RUN = '''"""{title}: the run, declared (CONTRIBUTING.md, "A step's run"): `pixi run {name}`."""

from common.course import course_step
from common.docs import exact
from common.run.experiment import Block, Experiment, Run
from common.loader import load_file

STEP = "{name}"
experiments = load_file(course_step(STEP).folder / "experiments.py")

RUN = Run(
    STEP,
    (
        Experiment(
            "pooled",
            ("{name} task 1: mean_pool",),
            lambda ctx: experiments.pooled(ctx.load("{module}")),
            blocks=(Block("{name}-pooled", experiments.pooled_block, check=exact),),
        ),
    ),
)
'''

EXPERIMENTS = '''"""{title}: what the run measures, and the handout tables it prints."""

import torch

from common.docs import markdown_table


def pooled(pooling):
    """mean_pool of arange(2 * 3 * 4) as [2, 3, 4]: halves of integers, every digit exact."""
    x = torch.arange(2 * 3 * 4, dtype=torch.float32).reshape(2, 3, 4)  # (B, T, d)
    return pooling.mean_pool(x)  # (B, d)


def pooled_block(pooled) -> str:
    """The handout's table: one row per sequence."""
    rows = [[b, " ".join(f"{{v:g}}" for v in row.tolist())] for b, row in enumerate(pooled)]
    return markdown_table(["sequence", "mean over its 3 positions"], rows)
'''

PLOTS = '''"""{title}: its figures, one function per figure, each writing one PNG (none yet)."""
'''

BUGS = '''"""{title}: its curated bugs, each a replacement in solution/{module}.py: the handout's
symptom table (python -m tools.symptoms --write-docs) and the check's symptom rows."""

from common.course.bugs import Bug

BUGS = [
    Bug(
        "mean over the width",
        "each sequence pools to T numbers, one per position, instead of d: the shape is [B, T]",
        "the mean runs over the positions, the axis between the batch and the width (task 1); "
        "look at the dim the mean is given",
        old="return x.mean(dim=1)",
        new="return x.mean(dim=-1)",
        fails="test_{module}.py::test_mean_pool_averages_each_sequence_over_its_positions",
    ),
]

# the mutants of python -m tools.mutate that no test can kill, and why (none yet)
EQUIVALENT: dict[str, str] = {{}}
'''

BACKGROUND = """# {name}: Python background

No topic yet. A topic is one marimo notebook per piece of Python syntax this step's code uses
for the first time: how to write one is in [Step 4's background README](../../step-04/background/README.md).
"""

HANDOUT = """# {title}

What this step builds, and what it starts from. Plan on about an hour.

## Tasks

| Task | Write | In |
| --- | --- | --- |
| 1 | `mean_pool(x)`: `[B, T, d] -> [B, d]`, the mean over positions | `starter/{module}.py` |

Check your work with `pixi run check-{name}`; `pixi run {name} --impl starter` runs the step with
your code. The reference prints:

<!-- BEGIN {name}-pooled -->
<!-- END {name}-pooled -->

## Symptoms

<!-- BEGIN symptoms -->
<!-- END symptoms -->
"""

TOML = """# What the course knows about this step (CONTRIBUTING.md, "A step describes itself").
title = "{title}"
topic = "what the step covers"
order = {order}  # its row in the README's course map
starts_from = "{start}"  # the step or checkpoint whose reference it builds on
todo_modules = ["{module}"]  # solution/ modules that hold its TODOs

[mutation]
target = "{module}"  # the module its curated bugs (bugs.py) replace
"""


def create(name: str, title: str) -> list[str]:
    """Write the new step's folder and its blocks, then what the course derives from step.toml:
    the README's course map, CONTRIBUTING's graph, pixi.toml's tasks (a line each, as written)."""
    folder = STEPS_DIR / name
    if not re.fullmatch(r"[a-z]+-\d+", name):
        raise ValueError(f"a step's name is a word, a dash and a number (step-07), got {name!r}")
    if folder.exists():
        raise ValueError(f"{shown(folder)} exists already: pick another name")
    if not title.strip() or '"' in title:
        raise ValueError(f"give the step a title without double quotes, got {title!r}")
    earlier = [s for s in course() if not s.checkpoint]
    order = max((s.order for s in course()), default=-1) + 1
    fill = {"name": name, "title": title, "module": MODULE, "order": order}
    fill["start"] = earlier[-1].name if earlier else ""
    solution = SOLUTION.format(**fill)
    files = {
        "README.md": HANDOUT.format(**fill),
        "step.toml": TOML.format(**fill),
        "run.py": RUN.format(**fill),
        "experiments.py": EXPERIMENTS.format(**fill),
        "plots.py": PLOTS.format(**fill),
        "bugs.py": BUGS.format(**fill),
        "background/README.md": BACKGROUND.format(**fill),
        f"solution/{MODULE}.py": solution,
        f"starter/{MODULE}.py": starter_text(solution, f"solution/{MODULE}.py"),
        f"tests/test_{MODULE}.py": TEST.format(**fill),
    }
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8", newline="\n")
    run = load_file(folder / "run.py")
    for block, (text, _) in fresh_blocks(run.RUN).items():
        write_block(folder / "README.md", block, text)
    write_block(folder / "README.md", "symptoms", table(name))
    changed = write_block(CONTRIBUTING, "step-files", step_files())  # its modules, by docstring
    return [*write_docs(), f"CONTRIBUTING.md step-files: {'updated' if changed else 'up to date'}"]


def main(argv: list[str] | None = None) -> int:
    prog = command("pixi run new-step", "python -m tools.newstep")
    parser = argparse.ArgumentParser(prog=prog, description=__doc__)
    parser.add_argument("name", help="the step's folder name, e.g. step-07")
    parser.add_argument("title", help='its title, e.g. "Scratch"')
    args = parser.parse_args(argv)
    try:
        written = create(args.name, args.title)
    except ValueError as exc:
        parser.error(str(exc))
    print(f"wrote steps/{args.name}/, and from its step.toml:")
    print("\n".join(f"  {line}" for line in written))
    test = command("pixi run test", "python -m pytest -n auto --maxprocesses=4 --dist=loadgroup")
    starters = command("pixi run make-starters", "python -m tools.starters")
    print(f"Next: {test}  (green as it is)")
    print("Then write the step (CONTRIBUTING.md, 'Adding a step'); after each change to its")
    print(f"solution/: {starters}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
