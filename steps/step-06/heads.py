"""What a trained head does, in four numbers per head, and the name those numbers give it."""

import math

import torch

# The labels, tried in this order: the first whose score reaches its threshold names the head
PREVIOUS = 0.5  # mean weight on key i - 1: a previous-token head
FIRST = 0.5  # mean weight on key 0: a first-token head, or attention sink
LOCAL = 0.5  # mean weight on keys i - 2 .. i (self included): local, diagonal-hugging
BROAD = 0.7  # evenness (row entropy / log of visible keys): broad, averaging many keys
LABELS = ("previous-token", "first-token/sink", "local/diagonal", "broad", "content (mixed)")

# Each label's ancestor among Step 4's untrained patterns (its 4.3 family, table b2)
GREW_FROM = {
    "previous-token": "diagonal-hugging (W_K = W_Q), its peak moved one key back",
    "first-token/sink": "column-collapse (shared offset x4, W x2), the column moved to key 0",
    "local/diagonal": "diagonal-hugging (W_K = W_Q)",
    "broad": "near-uniform (default init)",
    "content (mixed)": "scattered (W_Q, W_K x3; positions x4)",
}


def head_scores(A: torch.Tensor) -> dict:
    """The four scores of one head from its attention A (T, T), averaged over the rows 1..T-1.

    Row 0 sees one key only, so it says nothing about the head and is left out.
    """
    T = A.shape[-1]
    if A.ndim != 2 or A.shape[0] != T or T < 3:
        raise ValueError(
            f"A must be a square (T, T) attention matrix with T >= 3, got {tuple(A.shape)}"
        )
    rows = A[1:]  # (T - 1, T)
    i = torch.arange(1, T)  # (T - 1,) the query of each row
    near = torch.arange(T)[None, :]  # (1, T)
    window = (near <= i[:, None]) & (near >= i[:, None] - 2)  # (T - 1, T) keys i-2..i
    entropy = -(rows * rows.clamp_min(1e-30).log()).sum(dim=-1)  # (T - 1,)
    return dict(
        previous=A.diagonal(offset=-1).mean().item(),
        first=rows[:, 0].mean().item(),
        self=A.diagonal()[1:].mean().item(),
        local=(rows * window).sum(dim=-1).mean().item(),
        entropy=entropy.mean().item(),  # nats
        evenness=(entropy / torch.log(i + 1.0)).mean().item(),  # 1 = uniform over visible keys
    )


def label(scores: dict) -> str:
    """The head's name from its scores, by the thresholds above, in the order of LABELS."""
    if scores["previous"] >= PREVIOUS:
        return "previous-token"
    if scores["first"] >= FIRST:
        return "first-token/sink"
    if scores["local"] >= LOCAL:
        return "local/diagonal"
    if scores["evenness"] >= BROAD:
        return "broad"
    return "content (mixed)"


def attention_maps(model) -> list[torch.Tensor]:
    """Every head's last attention, (B, T, T) each, in module order (layer by layer, head by head)."""
    maps = []
    for module in model.modules():
        A = getattr(module, "A", None)
        if isinstance(A, torch.Tensor):
            maps += list(A.unbind(1)) if A.ndim == 4 else [A]  # (B, h, T, T) -> h x (B, T, T)
    return maps


def trained_heads(model, idx: torch.Tensor, h: int) -> list[dict]:
    """Run `model` on idx (1, T); each head's layer, index, A (T, T), scores and label."""
    model.eval()
    with torch.no_grad():
        model(idx)
    rows = []
    for n, A in enumerate(attention_maps(model)):
        scores = head_scores(A[0])
        rows.append(dict(layer=n // h, head=n % h, A=A[0], label=label(scores), **scores))
    return rows


def uniform_entropy(T: int) -> float:
    """Mean entropy of uniform rows over rows 1..T-1: the ceiling of a head's entropy, in nats."""
    return sum(math.log(i + 1) for i in range(1, T)) / (T - 1)
