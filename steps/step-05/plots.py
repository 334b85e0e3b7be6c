"""Step 5's figures: the loss curve of the training run, and where a GPT's parameters sit."""

import math

from common.figures import plt, save


def loss_curve(result, path):
    """Training loss per step, its running mean, the held-out loss, ln V and the 2.5 line."""
    fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    curve = result["curve"]
    steps = range(1, len(curve) + 1)
    ax.plot(steps, curve, color="tab:blue", alpha=0.3, lw=1, label="training batch")
    k = result["eval_every"]
    mean = [sum(curve[max(0, i - k) : i]) / len(curve[max(0, i - k) : i]) for i in steps]
    ax.plot(steps, mean, color="tab:blue", lw=2, label=f"training, mean of the last {k}")
    at, held = zip(*result["evals"], strict=True)
    ax.plot(at, held, "o-", color="tab:orange", label="held-out (last 10% of the text)")
    ax.axhline(
        math.log(result["V"]), color="grey", ls=":", label=f"ln V = {math.log(result['V']):.2f}"
    )
    ax.axhline(result["threshold"], color="tab:red", ls="--", label=f"{result['threshold']}")
    ax.set_xlabel("training step (AdamW, batch of B sequences of T characters)")
    ax.set_ylabel("cross-entropy loss (nats per character)")
    ax.set_title(f"Training the Step 5 GPT ({result['params']:,} parameters) on Shakespeare")
    ax.legend()
    return save(fig, path)


def parameters(rows, path):
    """Stacked bars: the share of each part of the model in its parameter count, per size."""
    fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    parts = list(rows[0]["parts"])
    labels = [f"{r['label']}\n{r['counted']:,}" for r in rows]
    bottom = [0.0] * len(rows)
    for part in parts:
        share = [100 * r["parts"][part] / r["counted"] for r in rows]
        ax.bar(labels, share, bottom=bottom, label=part)
        bottom = [b + s for b, s in zip(bottom, share, strict=True)]
    ax.set_ylabel("share of the parameters (%)")
    ax.set_xlabel("model size (total parameters)")
    ax.set_title("Where the parameters sit: embeddings dominate small models, blocks large ones")
    ax.legend(loc="upper left", bbox_to_anchor=(1, 1))
    return save(fig, path)
