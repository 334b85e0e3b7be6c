"""Step 4 experiments: each function takes the head module under test and returns plain numbers."""

import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from common.broken import BY_NAME, broken_head
from common.loader import load, load_checkpoint
from common.seeding import generator, randn, seed_all

D, D_HEAD, T_TEXT = 32, 16, 64  # the 4.3 setting: width 32, head size 16, 64 characters
SATURATED = 0.99  # a softmax row counts as one-hot when its largest weight is above this


def text_ids(T=T_TEXT):
    """The first T characters of the Step 3 corpus, their ids (1, T), and the vocabulary size."""
    data = load_checkpoint("step-03", "data")
    text = data.load_text()[:T]
    return text, torch.tensor(data.encode(text))[None, :], len(data.vocab())


def embedded_head(head, seed, V, T=T_TEXT, d=D, d_head=D_HEAD):
    """Token embedding, positional embedding and a Head, all built from one seed."""
    seed_all(seed)
    return nn.Embedding(V, d), nn.Embedding(T, d), head.Head(d, d_head, T_max=T)


# (a) 4.2 part 4: the variance lemma, and what it does to the softmax


def scale_check(head, d_ks=(16, 64, 256), B=64, T=8, seed=0):
    """Std of q.k with and without 1/sqrt(d_k), and how one-hot the softmax rows get."""
    rows = []
    for d_k in d_ks:
        q, k = randn(B, T, d_k, seed=seed), randn(B, T, d_k, seed=seed + 1)  # iid N(0, 1)
        raw = head.attention_scores(q, k, scale=False)  # (B, T, T)
        scaled = head.attention_scores(q, k, scale=True)  # (B, T, T)
        # all T keys compete in every row (no mask), so every row is a softmax over T scores
        top_raw = F.softmax(raw, dim=-1).max(dim=-1).values  # (B, T) largest weight per row
        top_scaled = F.softmax(scaled, dim=-1).max(dim=-1).values  # (B, T)
        rows.append(
            dict(
                d_k=d_k,
                raw_std=raw.std().item(),
                sqrt_d_k=math.sqrt(d_k),
                scaled_std=scaled.std().item(),
                max_raw=top_raw.mean().item(),
                max_scaled=top_scaled.mean().item(),
                saturated_raw=(top_raw > SATURATED).float().mean().item(),
                saturated_scaled=(top_scaled > SATURATED).float().mean().item(),
                largest_raw=top_raw.max().item(),
                largest_scaled=top_scaled.max().item(),
                top_raw=top_raw.flatten(),
                top_scaled=top_scaled.flatten(),
            )
        )
    return rows


# (b) 4.3: an untrained head on real text, for several seeds


def real_text(head, seeds=(0, 1, 2, 3, 4)):
    """Attention matrices (S, 64, 64) of untrained heads on the first 64 characters."""
    text, idx, V = text_ids()
    T = idx.shape[1]
    mats, rows = [], []
    for seed in seeds:
        tok_emb, pos_emb, h = embedded_head(head, seed, V)
        with torch.no_grad():
            x = tok_emb(idx) + pos_emb(torch.arange(T))[None, :]  # (1, T, d)
            h(x)
        A = h.A[0]  # (T, T)
        visible = torch.arange(1, T + 1, dtype=A.dtype)  # (T,) row i sees i + 1 keys
        entropy = -(A * torch.log(A.clamp_min(1e-30))).sum(dim=-1)  # (T,)
        rows.append(
            dict(
                seed=seed,
                first_column=A[:, 0].mean().item(),
                diagonal=A.diagonal().mean().item(),
                evenness=(entropy[1:] / torch.log(visible[1:])).mean().item(),
            )
        )
        mats.append(A)
    uniform = (1 / torch.arange(1, T + 1, dtype=torch.float64)).mean().item()
    return dict(text=text, A=torch.stack(mats), rows=rows, uniform=uniform)


# (c) 4.4: attention over positions only is a kernel smoother


def smoothing(head, bandwidths=(0.5, 1, 2, 4, 8), T=64, seed=0):
    """Causal Gaussian smoothing of a noisy sine wave, one bandwidth s at a time."""
    t = torch.arange(T, dtype=torch.float32)  # (T,)
    clean = torch.sin(2 * math.pi * t / 32)  # (T,)
    noisy = clean + 0.3 * randn(T, seed=seed)  # (T,)
    rows, curves, last_rows = [], [], []
    for s in bandwidths:
        A = head.smoothing_weights(T, s)  # (T, T)
        smooth = A @ noisy  # (T, T) @ (T,) -> (T,)
        last = A[-1]  # (T,) weights of the last position over all positions
        rows.append(
            dict(
                s=s,
                look_back=(last * (T - 1 - t)).sum().item(),
                keys=(1 / (last**2).sum()).item(),
                rmse=(smooth - clean).pow(2).mean().sqrt().item(),
            )
        )
        curves.append(smooth)
        last_rows.append(last)
    noise_rmse = (noisy - clean).pow(2).mean().sqrt().item()
    return dict(
        t=t, clean=clean, noisy=noisy, rows=rows, curves=curves, last=last_rows, noise=noise_rmse
    )


# (d) the checkpoint question: mask after softmax instead of before

# Each reference proof of 4.2 (solution/proofs.py) -> the test of tests/test_head.py that checks
# the same property. Table (d) runs the proofs; the tests are named, not run.
PROOFS = {
    "prove_simplex": "test_rows_are_in_the_simplex",
    "prove_causality_by_perturbation": "test_causality_by_perturbation",
    "prove_causality_by_gradient": "test_causality_by_gradient",
}
SWAPPED = BY_NAME["mask after softmax"]  # softmax over all keys, then the future zeroed


def reference_proofs():
    """The reference 4.2 proofs, whatever implementation is under test."""
    return load("step-04", "proofs", impl="solution")


def failing_proofs(Head):
    """The names of the reference proofs that raise AssertionError on the head class `Head`."""
    proofs = reference_proofs()
    failed = []
    for name in PROOFS:
        try:
            getattr(proofs, name)(Head)
        except AssertionError:
            failed.append(name)
    return failed


def mask_order(head, seed=0, B=4, T=8):
    """Row sums of your head and of its swapped twin, and which reference 4.2 proofs fail."""
    swapped = broken_head(head.Head, SWAPPED)  # your head's weights, the two lines swapped
    x = randn(B, T, D, seed=seed + 100)  # the same x as tests/test_head.py
    A = []
    for Head in (head.Head, swapped):
        seed_all(seed)  # the same weights for both: the head of tests/test_head.py
        h = Head(D, D_HEAD, T_max=T)
        with torch.no_grad():
            h(x)
        A.append(h.A)  # (B, T, T)
    good, bad = A[0].sum(dim=-1), A[1].sum(dim=-1)  # (B, T) each
    return dict(
        good=(good.min().item(), good.max().item()),
        bad=(bad.min().item(), bad.max().item()),
        bad_sums=bad,
        bad_by_row=bad.mean(dim=0).tolist(),
        failed_good=failing_proofs(head.Head),
        failed_bad=failing_proofs(swapped),
        A_good=A[0][0],
        A_bad=A[1][0],
    )


# (e) going further: permutation equivariance, online softmax, cost


def equivariance(head, seed=0):
    """Max |difference| for the four permutation checks, with the causal mask switched off."""
    _, idx, V = text_ids()
    T = idx.shape[1]
    tok, pos, h = embedded_head(head, seed, V)
    h.tril.fill_(1.0)  # every position may see every other: no mask
    perm = torch.randperm(T, generator=generator(seed))  # (T,)
    with torch.no_grad():
        X = tok(idx)  # (1, T, d)
        P = pos(torch.arange(T))[None, :]  # (1, T, d)
        checks = {
            "rows of X, no positions": h(X[:, perm]) - h(X)[:, perm],
            "rows of X + P": h((X + P)[:, perm]) - h(X + P)[:, perm],
            "tokens, no positions": h(tok(idx[:, perm])) - h(tok(idx))[:, perm],
            "tokens, with positions": h(tok(idx[:, perm]) + P) - h(tok(idx) + P)[:, perm],
        }
    return {name: diff.abs().max().item() for name, diff in checks.items()}


def online_check(head, seed=0, B=4, T=8):
    """Max |difference| between the streaming versions and the ordinary ones."""
    causal = torch.tril(torch.ones(T, T)) == 0  # (T, T) True above the diagonal
    scores = 3 * randn(B, T, T, seed=seed)  # (B, T, T)
    masked = scores.masked_fill(causal, float("-inf"))  # (B, T, T)
    big = scores + 1000  # (B, T, T) exp(big) overflows float32
    naive = big.exp() / big.exp().sum(dim=-1, keepdim=True)  # (B, T, T) inf / inf = nan
    seed_all(seed)
    h = head.Head(D, D_HEAD, T_max=T)
    x = randn(B, T, D, seed=seed + 1)
    with torch.no_grad():
        out = h(x)  # (B, T, d_head)
        streamed = head.online_attention(h.query(x), h.key(x), h.value(x))  # (B, T, d_head)
    diffs = {
        "softmax, all keys": head.online_softmax(scores) - F.softmax(scores, dim=-1),
        "softmax, causal mask": head.online_softmax(masked) - F.softmax(masked, dim=-1),
        "softmax of scores + 1000": head.online_softmax(big) - F.softmax(big, dim=-1),
        "attention vs your head": streamed - out,
    }
    row = scores[0, 0]  # (T,) one row, for the figure
    return dict(
        diffs={name: d.abs().max().item() for name, d in diffs.items()},
        naive_nan=naive.isnan().float().mean().item(),
        row=row,
        row_softmax=F.softmax(row, dim=-1),
        row_online=head.online_softmax(row[None])[0],
    )


def flop_count(T, d, d_head):
    """Multiply-adds x 2 for one forward pass of one sequence: projections, q k^T and A v."""
    return 2 * 3 * T * d * d_head + 2 * T * T * d_head + 2 * T * T * d_head


def cost(head, Ts=(256, 512, 1024, 2048), d=64, d_head=64, repeats=3, seed=0, budget=2.0):
    """Forward time at each T (machine-dependent, at most about `budget` s per T) and its slope."""
    seed_all(seed)
    h = head.Head(d, d_head, T_max=max(Ts))
    xs = {T: randn(1, T, d, seed=seed) for T in Ts}
    rows = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread: far less disturbed by other programs on the machine
    try:
        with torch.no_grad():
            for T in Ts:
                h(xs[T])  # warm-up: the first call at a new size allocates memory
            for T in Ts:
                calls = max(1, (max(Ts) // T) ** 2)  # about the same total work at every T
                best, began = math.inf, time.perf_counter()
                for _ in range(repeats):
                    start = time.perf_counter()
                    for _ in range(calls):
                        h(xs[T])
                    best = min(best, (time.perf_counter() - start) / calls)
                    if time.perf_counter() - began > budget:  # a busy machine: stop early
                        break
                rows.append(dict(T=T, seconds=best, flops=flop_count(T, d, d_head)))
    finally:
        torch.set_num_threads(threads)
    logT = torch.tensor([math.log(r["T"]) for r in rows], dtype=torch.float64)
    logt = torch.tensor([math.log(r["seconds"]) for r in rows], dtype=torch.float64)
    slope = ((logT - logT.mean()) * (logt - logt.mean())).sum() / ((logT - logT.mean()) ** 2).sum()
    return dict(rows=rows, exponent=slope.item(), d=d, d_head=d_head)
