"""Lab 01's run: our attention against PyTorch's (max-abs-difference table), the masks, then the
exercise; the appendix's blocks for the handout (experiments.py holds each experiment)."""

from pathlib import Path

from common.docs import exact, within
from common.loader import load_file
from common.run.experiment import Block, Experiment, Figure, Run, Slot

STEP = "lab-01"
HERE = Path(__file__).resolve().parent
experiments = load_file(HERE / "experiments.py")
plots = load_file(HERE / "plots.py")


# How far a fresh figure may sit from the README's. The max-abs-difference figures are O(1e-7)
# rounding noise in outputs of size ~1, where one rounding unit is 2**-23 ~ 1.2e-7; their exact
# bits depend on the BLAS and SIMD path (MKL or OpenBLAS on x86-64, Accelerate on macOS arm64),
# which may move them by a couple of units. On one machine runs are identical. DOCS_ABS_TOL, 5e-7,
# is a few units; a real change of scale, mask or layout moves them by 1e-2 or more.
DOCS_ABS_TOL = 5e-7
# Weights printed with 6 decimals: print rounding (5e-7 each side) plus cross-build rounding (~1e-7)
# stays below 2e-6; a different seed, T or mask moves them by far more.
EXERCISE_ABS_TOL = 2e-6
# the appendix's figures in rounding units: about 4 units
UNITS_TOL = DOCS_ABS_TOL / experiments.ULP
IN_UNITS = within(UNITS_TOL, e=DOCS_ABS_TOL)  # its raw figures (e-notation) as DOCS_ABS_TOL
# Numbers written without a '.' (counts, shapes, thresholds) must be equal (common.docs.within).


TASKS = ("stable_softmax", "scaled_dot_product_attention", "causal_mask")
TASKS += ("combine_causal_and_padding", "SelfAttention", "MultiHeadSelfAttention", "future_leak")
TODO = {n: f"{STEP} task {n}: {name}" for n, name in enumerate(TASKS, start=1)}  # n -> TODO id
TABLE_TODOS = (TODO[1], TODO[2], TODO[3], TODO[6])  # the five comparisons
EXERCISE_TITLE = (
    f"Exercise: right shape, wrong triangle (T = {experiments.EXERCISE_T}, seeded q, k, v)"
)
PREDICT = "Predict: which cells of leak.png put weight on a later key? Then write task 7."
# The run, in the order a student meets its TODOs; the appendix's experiments (docs=True) fill
# the handout's reference blocks only: --write-docs and tests/test_docs.py compute them, a run not.
RUN = Run(
    STEP,
    (
        Experiment(
            "parity",
            TABLE_TODOS,
            lambda ctx: experiments.parity(ctx.load("attention")),
            blocks=(
                Block(
                    "lab-01-parity",
                    experiments.parity_block,
                    "Max abs difference against PyTorch (float32, CPU, seeded inputs)",
                    check=within(DOCS_ABS_TOL),
                    # the table, not the machine it ran on
                    compared=lambda r: experiments.parity_table(r["rows"]),
                ),
            ),
            verdict=experiments.over_threshold,
        ),
        Experiment(
            "masks",
            (TODO[3], TODO[4]),
            lambda ctx: experiments.mask_pictures(ctx.load("attention")),
            figures=(Figure("masks", plots.masks),),
            slots=(
                Slot(
                    "combined_allowed",
                    "cells the combined mask allows, third sequence",
                    lambda m: int(m["combined"][2].sum()),  # 4 real tokens
                ),
            ),
        ),
        Experiment(
            "exhibit",
            (TODO[2], TODO[3]),
            lambda ctx: experiments.exhibit(ctx.load("exercises.wrong_mask")),
            blocks=(
                Block(
                    "lab-01-exhibit",
                    lambda ex: "\n".join(experiments.exhibit_lines(ex)),
                    EXERCISE_TITLE,
                    record=False,
                ),
            ),
            figures=(Figure("leak", plots.leak),),  # not outlined: your prediction comes first
        ),
        Experiment(
            "exercise",
            (TODO[7],),
            experiments.diagnosed,
            blocks=(
                Block(
                    "lab-01-exercise",
                    experiments.exercise_block,
                    "Exercise, diagnosed by your future_leak (the handout's block)",
                    check=within(EXERCISE_ABS_TOL, e=DOCS_ABS_TOL),
                ),
            ),
            figures=(Figure("leak", plots.leak),),  # drawn again, your diagnostic's leaks outlined
            slots=(
                Slot(
                    "leaks",
                    "exhibit cells with weight on a later key, as future_leak counts them",
                    lambda ex: int(ex["buggy_count"]),
                ),
            ),
            uses=("exhibit",),
            verdict=experiments.exercise_verdict,
            waiting=PREDICT,
        ),
        Experiment(
            "lecture-leak",
            (TODO[2], TODO[3], TODO[7]),
            lambda ctx: experiments.lecture_leak(
                ctx.load("attention"), ctx.load("exercises.wrong_mask")
            ),
            blocks=(
                Block(
                    "lab-01-lecture-leak",
                    experiments.lecture_leak_block,
                    check=within(EXERCISE_ABS_TOL),
                ),
            ),
            docs=True,
        ),
        Experiment(
            "lecture-parity",
            TABLE_TODOS,
            lambda ctx: experiments.parity_spread(ctx.load("attention")),
            blocks=(
                Block("lab-01-lecture-parity", experiments.parity_spread_block, check=IN_UNITS),
            ),
            docs=True,
        ),
        Experiment(
            "empty-row",
            (TODO[1],),
            lambda ctx: experiments.empty_row(ctx.load("attention")),
            # nan and 0.0 only: every character of the block reproduces
            blocks=(Block("lab-01-empty-row", experiments.empty_row_block, check=exact),),
            docs=True,
        ),
    ),
)
