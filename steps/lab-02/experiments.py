"""lab-02's experiments: Step 4's permutation table with four kinds of positions, and dropout's mean."""

import torch
import torch.nn.functional as F

from common.seeding import generator, randn

V, T, D, D_HEAD = 65, 16, 32, 16  # Step 3's character vocabulary; a short sequence; one head
SHIFT = 5  # how far every position moves on in the relative check
SCHEMES = ("none", "learned", "sinusoidal", "rotary")
NOISE = 1e-5  # float32 rounding of outputs of size ~1: differences below it are no difference
PS = (0.1, 0.5, 0.9)  # dropout rates the table measures
N_DROP = 1_000_000  # entries per dropout measurement: shares to about 0.001


def unmasked_head(seed: int = 0):
    """Seeded token embedding, learned position table and head weights, as one dict."""
    return {
        "tok": randn(V, D, seed=seed),  # (V, d) token embedding
        "pos": randn(T + SHIFT, D, seed=seed + 1),  # (T + SHIFT, d) learned positions, untrained
        "w": randn(3, D, D_HEAD, seed=seed + 2) / D**0.5,  # (3, d, d_head) W_Q, W_K, W_V
    }


def attend(layers, net, idx, scheme: str, start: int = 0):
    """The unmasked head on idx (T,) with `scheme`'s positions from `start`: (scores, output)."""
    n = idx.shape[0]
    x = net["tok"][idx]  # (T, d)
    if scheme == "learned":
        x = x + net["pos"][start : start + n]  # (T, d) row t gets position start + t
    if scheme == "sinusoidal":
        x = x + layers.sinusoidal(start + n, D)[start:]  # (T, d)
    q, k, v = x @ net["w"]  # (T, d_head) each
    if scheme == "rotary":
        q, k = layers.rope(q, start), layers.rope(k, start)  # (T, d_head) each, turned
    scores = q @ k.T / D_HEAD**0.5  # (T, T) no mask: every position sees every other
    return scores, F.softmax(scores, dim=-1) @ v  # (T, T), (T, d_head)


def positions(layers, seed: int = 0) -> dict:
    """Per scheme: how far the head is from permutation-equivariant, and from relative."""
    net = unmasked_head(seed)
    idx = torch.randint(V, (T,), generator=generator(seed))  # (T,) token ids
    perm = torch.randperm(T, generator=generator(seed + 3))  # (T,)
    rows = {}
    for scheme in SCHEMES:
        scores, out = attend(layers, net, idx, scheme)
        _, out_perm = attend(layers, net, idx[perm], scheme)  # the tokens reordered
        moved, _ = attend(layers, net, idx, scheme, start=SHIFT)  # every position + SHIFT
        rows[scheme] = {
            "permuted": (out_perm - out[perm]).abs().max().item(),
            "shifted": (moved - scores).abs().max().item(),
        }
    return rows


def dropout_means(layers, seed: int = 0) -> dict:
    """Per p: the share of zeros, and the training mean of dropout(ones) with and without the scale."""
    ones = torch.ones(N_DROP)
    rows = {}
    for p in PS:
        out = layers.dropout(ones, p, True, generator(seed))  # (N,) 0 or 1 / (1 - p)
        rows[p] = {
            "zeros": (out == 0).double().mean().item(),
            "mean": out.double().mean().item(),
            "unscaled": (out * (1 - p)).double().mean().item(),  # the same mask, no 1 / (1 - p)
            "eval": layers.dropout(ones, p, False, generator(seed)).double().mean().item(),
        }
    return rows
