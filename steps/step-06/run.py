"""Step 6: train the Step 5 GPT with your loop, read its heads, and find an induction circuit."""

from pathlib import Path

from common.docs import exact, last_digit
from common.loader import load_file
from common.run.experiment import Block, Experiment, Figure, Run, Slot

STEP = "step-06"
HERE = Path(__file__).resolve().parent
experiments = load_file(HERE / "experiments.py")
plots = load_file(HERE / "plots.py")

TODOS = tuple(
    f"step-06 task {n}: {name}"
    for n, name in enumerate(("get_batch", "estimate_loss", "lr_at", "train_step"), start=1)
)
TINY = " (--quick: its tiny model's)"
HEADS = experiments.ModelConfig()  # the default run's sizes: the slot's "of 16 heads"
QUICK_HEADS = experiments.QUICK_MODEL
# Sizes and names are exact; the loss at init is one forward of float32 sums, whose last printed
# digit (of 3) another CPU's summation order can move by one: last_digit.
# Torch runs on one thread (threads=1), so a run repeats digit for digit on one machine; training
# alone takes --threads.
RUN = Run(
    STEP,
    (
        Experiment(
            "config",
            TODOS[:2],
            experiments.stopping(experiments.initial),
            blocks=(Block("config", experiments.config_block, check=last_digit(1e-9)),),
            slots=(
                Slot(
                    "loss_at_init",
                    "validation loss at init",
                    lambda r: r["inits"][r["quick"]]["loss"],
                    "{:.3f}".format,
                    quick=f"validation loss at init{TINY}",
                ),
            ),
        ),
        Experiment(
            "labels",
            (),
            lambda ctx: experiments.heads,
            blocks=(Block("labels", experiments.labels_block, check=exact),),
        ),
        Experiment(
            "training",
            TODOS,
            experiments.stopping(experiments.training),
            blocks=(
                Block("training", experiments.training_block),
                Block("samples", experiments.samples_block),
            ),
            figures=(Figure("loss_curve", plots.loss_curve),),
            verdict=experiments.validation_failure,
            skip=experiments.left_out("gpt"),
        ),
        Experiment(
            "heads",
            TODOS,
            experiments.stopping(experiments.trained),
            blocks=(Block("heads", experiments.heads_block),),
            figures=(
                Figure("trained_heads", plots.heads_beside_family),
                Figure("head_zoom", plots.head_zoom),
            ),
            slots=(
                Slot(
                    "previous_token_layers",
                    "layers with a previous-token head",
                    experiments.previous_token_layers,
                ),
                Slot(
                    "broad_heads",
                    f"broad heads of {HEADS.h * HEADS.n_layer}",
                    lambda both: sum(r["label"] == "broad" for r in both["heads"]["rows"]),
                    quick=f"broad heads of {QUICK_HEADS.h * QUICK_HEADS.n_layer}{TINY}",
                ),
            ),
            uses=("training",),
        ),
        Experiment(
            "induction",
            TODOS[3:],
            experiments.stopping(experiments.induction),
            blocks=(
                Block("induction", experiments.induction_block),
                Block("induction-targets", experiments.targets_block, record=False),
            ),
            figures=(
                Figure("induction_phase", lambda runs, path: plots.induction_phase(runs[0], path)),
                Figure("induction_heads", lambda runs, path: plots.induction_heads(runs[0], path)),
            ),
            verdict=experiments.induction_failures,
            skip=experiments.left_out("induction"),
        ),
    ),
    threads=1,
)
