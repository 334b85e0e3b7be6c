"""Step 4: run every experiment of the handout, print its numbers, and draw its figure."""

from pathlib import Path

from common.docs import exact, last_digit
from common.loader import load_file
from common.run.experiment import Block, Experiment, Figure, Run, Slot

STEP = "step-04"
HERE = Path(__file__).resolve().parent
experiments = load_file(HERE / "experiments.py")
plots = load_file(HERE / "plots.py")

# How far a fresh run may sit from the handout, per cell: one unit in the last digit printed (a
# value can sit next to a rounding boundary, and another CPU or BLAS may add the same floats in
# another order). Values below NOISE are float32 rounding errors: the equivariance and online
# checks compare outputs of size ~1, where one rounding unit is 2**-23 ~ 1.2e-7, and measure 1 or
# 2 such units; their digits depend on the machine, so both sides only stay below NOISE (about 8
# units). The FLOP count is integers and their ratios: every character reproduces.
NOISE = 1e-6
CLOSE = last_digit(NOISE)
HEAD = ("step-04 4.1: Head.forward",)
ONLINE = (*HEAD, "step-04 optional 1: online_softmax", "step-04 optional 2: online_attention")


# In the order a student meets the TODOs (4.1 first).
RUN = Run(
    STEP,
    (
        Experiment(
            "mask_order",
            HEAD,
            experiments.on_head(experiments.mask_order),
            blocks=(
                Block("mask-order", experiments.mask_order_block, "(d) mask before or after the softmax? T = 8", CLOSE),
                Block("mask-order-rows", experiments.mask_rows_block, "(d) row sums, softmax then mask", CLOSE),
            ),
            figures=(Figure("mask_order", plots.mask_order),),
        ),
        Experiment(
            "scale",
            ("step-04 4.2.4: score_stats",),
            experiments.on_head(experiments.scale_check),
            blocks=(Block("scale-check", experiments.scale_block, "(a) scale check: iid N(0, 1) q, k; 512 rows of 8 keys", CLOSE),),
            figures=(Figure("scale_check", plots.scale_check),),
            slots=(
                Slot("raw_std", "raw scores' std at d_k = 64", lambda s: experiments.at_64(s)["raw_std"], "{:.2f}".format),
                Slot("scaled_std", "scaled scores' std", lambda s: experiments.at_64(s)["scaled_std"], "{:.2f}".format),
                Slot("raw_row_max", "mean row max, raw", lambda s: experiments.at_64(s)["max_raw"], "{:.3f}".format),
                Slot("scaled_row_max", "mean row max, scaled", lambda s: experiments.at_64(s)["max_scaled"], "{:.3f}".format),
            ),
        ),
        Experiment(
            "real_text",
            HEAD,
            experiments.on_head(experiments.real_text),
            blocks=(Block("real-text", experiments.real_text_block, "(b) untrained heads on the first 64 characters", CLOSE),),
            figures=(Figure("real_text_heatmaps", plots.real_text), Figure("first_column", plots.first_column)),
            slots=(
                Slot(
                    "first_column",
                    "first column / 1/(i+1), mean of the seeds",
                    lambda rt: sum(r["first_vs_uniform"] for r in rt["rows"]) / len(rt["rows"]),
                    "{:.2f}".format,
                ),
            ),
        ),
        Experiment(
            "family",
            HEAD,
            experiments.on_head(experiments.family),
            blocks=(Block("family", experiments.family_block, "(b2) which untrained settings give which pattern, T = 64", CLOSE),),
            figures=(Figure("family", plots.family),),
            slots=(
                Slot(
                    "family",
                    "the default init's pattern",
                    lambda fam: next(r for r in fam["rows"] if r["setting"] == "default init")["pattern"],
                ),
            ),
        ),
        Experiment(
            "smoothing",
            ("step-04 4.4: smoothing_weights",),
            experiments.on_head(experiments.smoothing),
            blocks=(Block("smoothing", experiments.smoothing_block, "(c) position-only attention smoothing, T = 64", CLOSE),),
            figures=(Figure("smoothing", plots.smoothing),),
        ),
        Experiment(
            "equivariance",
            HEAD,
            experiments.on_head(experiments.equivariance),
            blocks=(Block("equivariance", experiments.equivariance_block, "(e) permutation equivariance", CLOSE),),
            figures=(Figure("equivariance", plots.equivariance),),
        ),
        Experiment(
            "causal_order",
            HEAD,
            experiments.on_head(experiments.causal_order),
            blocks=(Block("causal-order", experiments.causal_order_block, "(b3) the causal head and token order", CLOSE),),
        ),
        Experiment(
            "online",
            ONLINE,
            experiments.on_head(experiments.online_check),
            blocks=(Block("online", experiments.online_block, "(e) online softmax and attention", CLOSE),),
            figures=(Figure("online_softmax", plots.online),),
        ),
        Experiment(
            "cost_count",
            (),
            lambda ctx: None,  # arithmetic on the sizes: no head runs
            blocks=(Block("cost-count", experiments.cost_count_block, f"(e) cost, counted, d = d_head = {experiments.COST_D}", exact),),
        ),
        Experiment(
            "scale_spread",
            (),
            experiments.on_head(experiments.scale_spread),  # attention_scores is given
            blocks=(Block("lecture-scale", experiments.scale_spread_block, "appendix: 200 draws of (1, 8, d_k)", CLOSE),),
        ),
        Experiment(
            "mask_spread",
            HEAD,
            experiments.on_head(experiments.mask_low_spread),
            blocks=(Block("lecture-mask", experiments.mask_spread_block, "appendix: softmax then mask, 100 seeds", CLOSE),),
        ),
        Experiment(
            "cost",
            HEAD,
            experiments.timed_cost,
            blocks=(Block("cost-timing", experiments.measured_block, "(e) cost, measured", record=False),),
            figures=(Figure("cost", plots.cost),),
        ),
    ),
)  # fmt: skip
