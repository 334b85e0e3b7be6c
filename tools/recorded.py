"""Values an open step's tests expect, recorded from its reference by the maintainer (as CS336
keeps snapshots), so no test needs the reference where a class has the step open (tools.release):
`python -m tools.recorded --write`; tests/test_recorded.py holds each block to the reference."""

import sys
from collections.abc import Callable
from pathlib import Path

from common import STEPS_DIR, shown
from common.docs import read_block, write_block
from common.loader import load

# Step 6's schedules: (steps, warmup, lr, min_lr), each a case of its lr_at test
SCHEDULES = [(1000, 100, 3e-3, 3e-4), (50, 7, 1e-2, 1e-3), (20, 0, 5e-4, 5e-5), (9, 3, 2e-3, 2e-3)]
EVERY = 25  # a long schedule is recorded every EVERY steps and around its warm-up and its end


def recorded_steps(steps: int, warmup: int) -> list[int]:
    """The steps of a schedule whose rate is recorded: all of a short one; a long one sampled."""
    if steps <= 100:
        return list(range(steps + 1))
    edges = {0, 1, warmup - 1, warmup, warmup + 1, steps - 1, steps}
    return sorted(set(range(0, steps + 1, EVERY)) | {s for s in edges if 0 <= s <= steps})


def lr_schedule() -> str:
    """Step 6's lr_at on the reference, per schedule: the body of test_train.py's block."""
    train = load("step-06", "train", "solution")
    lines = ["LR_AT = {  # (steps, warmup, lr, min_lr) -> {step: the reference's lr_at(step)}"]
    for steps, warmup, lr, min_lr in SCHEDULES:
        cfg = train.TrainConfig(steps=steps, warmup=warmup, lr=lr, min_lr=min_lr)
        rates = [f"{s}: {train.lr_at(s, cfg)!r}," for s in recorded_steps(steps, warmup)]
        lines.append(f"    ({steps}, {warmup}, {lr!r}, {min_lr!r}): {{")
        lines += ["        " + " ".join(rates[i : i + 4]) for i in range(0, len(rates), 4)]
        lines.append("    },")
    return "\n".join([*lines, "}  # fmt: skip"]) + "\n"


# (file, block name, what writes its body)
BLOCKS: list[tuple[Path, str, Callable[[], str]]] = [
    (STEPS_DIR / "step-06" / "tests" / "test_train.py", "lr-schedule", lr_schedule),
]


def stale() -> list[str]:
    """The blocks that differ from what the reference gives now, as 'file block'."""
    return [
        f"{shown(p)} {n}" for p, n, made in BLOCKS if read_block(p, n).strip() != made().strip()
    ]


def main(argv: list[str] | None = None) -> int:
    if "--write" in (argv if argv is not None else sys.argv[1:]):
        for path, name, made in BLOCKS:
            changed = write_block(path, name, made())
            print(f"{shown(path)} {name}: {'updated' if changed else 'already up to date'}")
        return 0
    for line in stale():
        print(f"stale: {line} (python -m tools.recorded --write)")
    return 1 if stale() else 0


if __name__ == "__main__":
    sys.exit(main())
