"""Step 5: parameter counts, the loss at init against ln V, a short training run on Shakespeare, samples."""

from pathlib import Path

from common.docs import exact, last_digit
from common.loader import load_file
from common.run.experiment import Block, Experiment, Figure, Run, Slot

STEP = "step-05"
HERE = Path(__file__).resolve().parent
experiments = load_file(HERE / "experiments.py")
plots = load_file(HERE / "plots.py")

MODEL_TODOS = tuple(
    f"step-05 task {n}: {name}"
    for n, name in enumerate(("MultiHeadAttention", "FeedForward", "Block", "GPT"), start=1)
)
TODOS = (*MODEL_TODOS, "step-05 task 5: generate")  # the samples
# How close a fresh run must be. Counts are integers: exact. The loss at init is a mean of
# float32 logs over 16,384 positions; another CPU or BLAS sums them in another order and may move
# the third decimal by one, so one unit of the last digit printed. The counting baselines are
# float64 sums of logs of exact counts: one unit of the third decimal as well, though only a
# different summation order could move them.
RUN = Run(
    STEP,
    (
        Experiment(
            "params",
            MODEL_TODOS,
            experiments.params_experiment,
            blocks=(Block("params", experiments.params_block, check=exact),),
            figures=(Figure("parameters", plots.parameters),),
            slots=(
                Slot("parameters", "this step's run", experiments.this_run_count, "{:,}".format),
            ),
        ),
        Experiment(
            "init",
            MODEL_TODOS,
            experiments.init_experiment,
            blocks=(Block("init-loss", experiments.init_block, check=last_digit(1e-6)),),
            slots=(
                Slot(
                    "loss_at_init",
                    "held-out loss at init",
                    lambda r: r["loss"],
                    "{:.3f}".format,
                    quick="held-out loss at init (--quick: its tiny model's)",
                ),
            ),
        ),
        Experiment(
            "baselines",
            (),
            experiments.baselines_experiment,
            blocks=(Block("baselines", experiments.baselines_block, check=last_digit(1e-6)),),
        ),
        Experiment(
            "training",
            TODOS,
            experiments.training_experiment,
            blocks=(
                Block("training", experiments.training_block),
                Block("samples", experiments.samples_block),
            ),
            figures=(Figure("loss_curve", plots.loss_curve),),
            uses=("baselines",),
            verdict=experiments.below_threshold,
        ),
    ),
    threads=experiments.THREADS,
)
