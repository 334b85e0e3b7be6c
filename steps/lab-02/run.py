"""lab-02's run: Step 4's permutation table with four kinds of positions, dropout's scale, and the KV cache's size and speed."""

from common.course import course_step
from common.docs import exact, last_digit
from common.loader import load_file
from common.run.experiment import Block, Experiment, Figure, Run, Slot

STEP = "lab-02"
HERE = course_step(STEP).folder
experiments = load_file(HERE / "experiments.py")
plots = load_file(HERE / "plots.py")
POSITIONS = ("lab-02 task 1.1: sinusoidal", "lab-02 task 1.2: rope")


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
            blocks=(
                Block(
                    "positions", experiments.positions_block, check=last_digit(experiments.NOISE)
                ),
            ),
            slots=(
                Slot(
                    "equivariant_schemes",
                    "kinds of positions the head commutes with",
                    experiments.below_noise("permuted"),
                ),
                Slot(
                    "relative_schemes",
                    "kinds whose scores ignore a shift",
                    experiments.below_noise("shifted"),
                ),
            ),  # fmt: skip
        ),
        Experiment(
            "dropout",
            ("lab-02 task 2: dropout",),
            lambda ctx: experiments.dropout_means(ctx.load("layers")),
            blocks=(Block("dropout", experiments.dropout_block, check=exact),),
            slots=(
                Slot(
                    "eval_mean_unscaled",
                    f"eval mean / training mean, p = {experiments.SHOW_P:g}, no scale",
                    experiments.unscaled_ratio,
                    "{:.2f}".format,
                ),
            ),  # fmt: skip
        ),
        Experiment(
            name="cache-size",
            todos=(),
            compute=experiments.cache_sizes,
            blocks=(
                Block(
                    "cache-size",
                    experiments.sizes_block,
                    title="The KV cache of one sequence",
                    check=exact,
                ),
            ),
        ),
        Experiment(
            name="cache-speed",
            todos=("lab-02 task 3c: forward_cached",),
            compute=experiments.speed,
            blocks=(
                Block(
                    "cache-speed",
                    experiments.speed_block,
                    title="Time per new token, with and without the cache",
                ),
                Block(
                    "cache-speedup-prediction",
                    experiments.prediction_line,
                    title="Your prediction beside the clock and the FLOP count",
                    record=False,
                ),
            ),
            figures=(Figure("cache_speed", plots.speed_figure),),
            slots=(
                Slot(
                    "cache_speedup",
                    "uncached / cached time per new token at the longest context",
                    value=lambda r: round(r["rows"][-1]["speedup"], 1),
                    shown=lambda x: f"{x}x",
                    quick="uncached / cached time per new token (--quick: a tiny GPT, T <= 32, "
                    "not the model the question asks about)",
                ),
            ),
            verdict=experiments.logits_differ,
        ),
    ),
    threads=1,
)
