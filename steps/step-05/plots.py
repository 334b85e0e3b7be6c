"""Step 5's figures: the loss curve of the training run, and where a GPT's parameters sit."""

import math

from common.run.figures import plt, save

SMOOTH = 10  # steps in the training curve's running mean


def loss_curve(result, path):
    """Training loss per step, its running mean, the held-out loss; ln V, counting baselines, 2.5."""
    from matplotlib.ticker import MaxNLocator  # loaded to draw, not on import

    fig, ax = plt.subplots(figsize=(9, 4), layout="constrained")
    curve = result["curve"]
    steps = range(1, len(curve) + 1)
    ax.plot(steps, curve, color="tab:blue", alpha=0.3, lw=1, label="training batch")
    k = SMOOTH  # a short trailing window: smooth, yet it lags the fast first steps only a little
    mean = [sum(curve[max(0, i - k) : i]) / len(curve[max(0, i - k) : i]) for i in steps]
    ax.plot(steps, mean, color="tab:blue", lw=2, label=f"training, mean of the last {k} steps")
    at, held = zip(*result["evals"], strict=True)
    ax.plot(at, held, "o-", color="tab:orange", label="held-out (last 10% of the text)")
    ax.axhline(
        math.log(result["V"]), color="grey", ls=":", label=f"ln V = {math.log(result['V']):.2f}"
    )
    for name, style in (("unigram", "-."), ("bigram", (0, (5, 2)))):
        value = result["baselines"][name]
        ax.axhline(value, color="black", lw=1, ls=style, label=f"{name} counts: {value:.2f}")
    if not result.get("quick"):  # --quick trains a tiny model for a second: the bar is not its own
        ax.axhline(
            result["threshold"], color="tab:red", ls="--", label=f"the bar: {result['threshold']}"
        )
    ax.set_xlabel("training step (AdamW, batch of B sequences of T characters)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # --quick's few steps: no 2.5 ticks
    ax.set_ylabel("cross-entropy loss (nats per character)")
    quick = ", --quick" if result.get("quick") else ""
    ax.set_title(f"Training the Step 5 GPT ({result['params']:,} parameters{quick}) on Shakespeare")
    # beside the axes, not on them: inside, it covered the bigram line of the short --quick curve
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    return save(fig, path)


def parameters(rows, path):
    """Horizontal stacked bars: each part's share of the parameter count, one bar per model size."""
    fig, ax = plt.subplots(figsize=(8, 3.8), layout="constrained")
    labels = [f"{r['label']}\n{r['counted']:,} parameters" for r in rows][::-1]  # first on top
    left = [0.0] * len(rows)
    for part in rows[0]["parts"]:
        share = [100 * r["parts"][part] / r["counted"] for r in rows][::-1]
        ax.barh(labels, share, left=left, label=part)
        left = [a + b for a, b in zip(left, share, strict=True)]
    ax.set_xlabel("share of the model's parameters (%)")
    ax.set_xlim(0, 100)
    ax.set_title("The blocks hold most of a character-level GPT;\nat GPT-2's vocabulary, "
                 "the embeddings and lm_head hold almost half")  # fmt: skip
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), title="part")
    return save(fig, path)
