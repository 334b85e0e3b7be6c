"""lab-02's run: Step 4's permutation table with four kinds of positions, and dropout's scale."""

from common.course import course_step
from common.docs import exact, last_digit, markdown_table
from common.experiment import Block, Experiment, Run, Slot
from common.loader import load_file

STEP = "lab-02"
HERE = course_step(STEP).folder
experiments = load_file(HERE / "experiments.py")
CACHE = HERE / "cache_run.py"  # task 3 (the KV cache): its EXPERIMENTS join this run's when present
SHOW_P = 0.5  # the dropout rate the prediction asks about
POSITIONS = ("lab-02 task 1.1: sinusoidal", "lab-02 task 1.2: rope")


def shown(d: float) -> str:
    """A difference as the table prints it: float32 rounding noise is shown as such."""
    return f"< {experiments.NOISE:.0e}" if d < experiments.NOISE else f"{d:.3f}"


def positions_block(rows: dict) -> str:
    """The permutation table: equivariant over tokens? relative under a shift of every position?"""
    yes = lambda d: "yes" if d < experiments.NOISE else "no"  # noqa: E731
    table = [
        [s, shown(r["permuted"]), yes(r["permuted"]), shown(r["shifted"]), yes(r["shifted"])]
        for s, r in rows.items()
    ]
    header = ["positions", "max \\|head(idx[perm]) - head(idx)[perm]\\|", "equivariant?"]
    header += [f"max \\|scores moved on by {experiments.SHIFT} - scores\\|", "relative?"]
    return markdown_table(header, table)


def dropout_block(rows: dict) -> str:
    """The dropout table: share of zeros, and the training mean with and without the scale."""
    table = [
        [
            f"{p:g}",
            f"{r['zeros']:.3f}",
            f"{r['mean']:.3f}",
            f"{r['unscaled']:.3f}",
            f"{r['eval']:g}",
        ]
        for p, r in rows.items()
    ]
    header = ["p", "share of zeros", "training mean", "training mean, no 1 / (1 - p)", "eval mean"]
    return markdown_table(header, table)


def below_noise(key: str):
    """rows -> how many kinds of positions measure below float32 noise on `key`."""
    return lambda rows: sum(r[key] < experiments.NOISE for r in rows.values())


def unscaled_ratio(rows: dict) -> float:
    """Eval mean over the unscaled training mean at SHOW_P: what the next layer sees grow by."""
    return rows[SHOW_P]["eval"] / rows[SHOW_P]["unscaled"]


def cache_experiments() -> tuple[Experiment, ...]:
    """Task 3's experiments (cache_run.py's EXPERIMENTS), or none while the step has no cache run."""
    return load_file(CACHE).EXPERIMENTS if CACHE.exists() else ()


# How close a fresh run must be. The permutation table's differences of size ~1 are float32 sums
# in one order: one unit of the third decimal; those below NOISE are rounding, printed as
# "< 1e-05", the same words everywhere. The dropout table is shares and means of a million draws
# of one seeded generator, the same mask on every machine, summed in float64: exact.
RUN = Run(
    STEP,
    (
        Experiment(
            "positions",
            POSITIONS,
            lambda ctx: experiments.positions(ctx.load("layers")),
            blocks=(Block("positions", positions_block, check=last_digit(experiments.NOISE)),),
            slots=(
                Slot(
                    "equivariant_schemes",
                    "kinds of positions the head commutes with",
                    below_noise("permuted"),
                ),
                Slot(
                    "relative_schemes", "kinds whose scores ignore a shift", below_noise("shifted")
                ),
            ),  # fmt: skip
        ),
        Experiment(
            "dropout",
            ("lab-02 task 2: dropout",),
            lambda ctx: experiments.dropout_means(ctx.load("layers")),
            blocks=(Block("dropout", dropout_block, check=exact),),
            slots=(
                Slot(
                    "eval_mean_unscaled",
                    f"eval mean / training mean, p = {SHOW_P:g}, no scale",
                    unscaled_ratio,
                    "{:.2f}".format,
                ),
            ),  # fmt: skip
        ),
        *cache_experiments(),
    ),
    threads=1,
)
