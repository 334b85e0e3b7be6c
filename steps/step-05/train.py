"""Step 5's training loop: random windows of the corpus, AdamW, a loss curve. Every draw from a torch.Generator."""

import time

import torch
from tqdm import tqdm


def get_batch(data, B, T, generator):
    """B random windows of T ids from the 1-D tensor `data`, and the same windows one id later."""
    if data.dim() != 1 or len(data) < T + 1:
        raise ValueError(
            f"data must be 1-D with at least T + 1 = {T + 1} ids, got {tuple(data.shape)}"
        )
    starts = torch.randint(len(data) - T, (B,), generator=generator)  # (B,) window starts
    x = torch.stack([data[s : s + T] for s in starts.tolist()])  # (B, T)
    y = torch.stack([data[s + 1 : s + T + 1] for s in starts.tolist()])  # (B, T) the next ids
    return x, y


def split(data, fraction=0.9):
    """The first `fraction` of the ids to train on, the rest held out."""
    n = int(fraction * len(data))
    return data[:n], data[n:]


@torch.no_grad()
def estimate_loss(model, data, B, T, batches, seed):
    """Mean loss over `batches` windows drawn from their own seed: the same windows every call."""
    g = torch.Generator().manual_seed(seed)
    losses = [model(*get_batch(data, B, T, g))[1].item() for _ in range(batches)]
    return sum(losses) / len(losses)


def train(model, train_data, val_data, *, steps, B, T, lr, seed, eval_every, eval_batches):
    """AdamW on batches of `train_data`; returns the loss curve and the held-out losses."""
    g = torch.Generator().manual_seed(seed)  # the batches' only source of randomness
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    curve, evals, start = [], [], time.perf_counter()
    model.train()
    for step in tqdm(range(steps + 1), desc="training", unit="step", disable=None):
        if step % eval_every == 0 or step == steps:
            evals.append((step, estimate_loss(model, val_data, B, T, eval_batches, seed + 1)))
        if step == steps:
            break
        _, loss = model(*get_batch(train_data, B, T, g))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        curve.append(loss.item())
    return {"curve": curve, "evals": evals, "seconds": time.perf_counter() - start}
