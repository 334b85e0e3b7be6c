"""Step 4 experiments: each function takes the head module under test and returns plain numbers."""

import math
from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F

from common.course import course_step
from common.docs import markdown_table
from common.loader import load_file, reference
from common.run.timing import clock, fit_exponent, interleaved, quartiles
from common.seeding import generator, randn, seed_all

D, D_HEAD, T_TEXT = 32, 16, 64  # the 4.3 setting: width 32, head size 16, 64 characters
SATURATED = 0.99  # a softmax row counts as one-hot when its largest weight is above this


def text_ids(T=T_TEXT):
    """The first T characters of the Step 3 corpus, their ids (1, T), and the vocabulary size."""
    data = reference("step-03", "data")
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
        raw_std, scaled_std, max_raw, max_scaled = head.score_stats(q, k)  # your measurement
        raw = head.attention_scores(q, k, scale=False)  # (B, T, T)
        scaled = head.attention_scores(q, k, scale=True)  # (B, T, T)
        # all T keys compete in every row (no mask), so every row is a softmax over T scores
        top_raw = F.softmax(raw, dim=-1).max(dim=-1).values  # (B, T) largest weight per row
        top_scaled = F.softmax(scaled, dim=-1).max(dim=-1).values  # (B, T)
        rows.append(
            dict(
                d_k=d_k,
                raw_std=raw_std,
                sqrt_d_k=math.sqrt(d_k),
                scaled_std=scaled_std,
                max_raw=max_raw,
                max_scaled=max_scaled,
                saturated_raw=(top_raw > SATURATED).float().mean().item(),
                saturated_scaled=(top_scaled > SATURATED).float().mean().item(),
                largest_raw=top_raw.max().item(),
                largest_scaled=top_scaled.max().item(),
                top_raw=top_raw.flatten(),
                top_scaled=top_scaled.flatten(),
            )
        )
    return rows


# (b) 4.3: an untrained head on real text, for several seeds, and the settings behind each pattern

# Thresholds of the pattern names, tried in this order (README, 4.3 and table (f)):
NEAR_UNIFORM = 0.9  # evenness (row entropy / its largest value) at or above this
DIAGONAL = 0.5  # share of rows whose largest weight sits on the diagonal, at or above this
COLUMN = 0.25  # share of all attention one key column takes, at or above this


def row_evenness(A):
    """Entropy of each row over the log of its visible keys, averaged over rows 1.. (row 0 has one key)."""
    T = A.shape[-1]
    visible = torch.arange(2, T + 1, dtype=A.dtype)  # (T - 1,) row i sees i + 1 keys
    entropy = -(A[1:] * torch.log(A[1:].clamp_min(1e-30))).sum(dim=-1)  # (T - 1,)
    return (entropy / torch.log(visible)).mean().item()


def pattern_metrics(A):
    """The numbers behind a pattern's name, for one attention matrix A (T, T)."""
    T = A.shape[-1]
    later = A[1:]  # (T - 1, T) rows 1.. ; row 0 has a single key and no choice
    top = later.argmax(dim=-1)  # (T - 1,) the key with the largest weight, per row
    columns = later.sum(dim=0) / (T - 1)  # (T,) share of all attention that lands on each key
    first = A[:, 0] * torch.arange(1, T + 1, dtype=A.dtype)  # (T,) first column / 1 / (i + 1)
    return dict(
        first_column=A[:, 0].mean().item(),
        first_vs_uniform=first[1:].mean().item(),
        diagonal=A.diagonal().mean().item(),
        diagonal_rows=(top == torch.arange(1, T)).float().mean().item(),
        column=columns.max().item(),
        column_key=columns.argmax().item(),
        evenness=row_evenness(A),
    )


def pattern_name(m):
    """near-uniform, diagonal-hugging, column-collapse or scattered, by the thresholds above."""
    if m["evenness"] >= NEAR_UNIFORM:
        return "near-uniform"
    if m["diagonal_rows"] >= DIAGONAL:
        return "diagonal-hugging"
    if m["column"] >= COLUMN:
        return "column-collapse"
    return "scattered"


def text_attention(head, seed, scale=1.0, tied=False, pos=1.0, offset=0.0):
    """A (T, T) of an untrained head on the text, with one setting changed from the default."""
    _, idx, V = text_ids()
    T = idx.shape[1]
    tok_emb, pos_emb, h = embedded_head(head, seed, V)
    shared = randn(D, seed=seed)  # (d,) one vector added to every position when offset != 0
    with torch.no_grad():
        if tied:
            h.key.weight.copy_(h.query.weight)  # W_K = W_Q: q . k is a positive form
        h.query.weight.mul_(scale)  # scores grow by scale**2: an inverse temperature
        h.key.weight.mul_(scale)
        x = tok_emb(idx) + pos * pos_emb(torch.arange(T))[None, :] + offset * shared  # (1, T, d)
        h(x)
    return h.A[0]  # (T, T)


def real_text(head, seeds=(0, 1, 2, 3, 4)):
    """Attention matrices (S, 64, 64) of untrained heads on the first 64 characters."""
    text, idx, _ = text_ids()
    T = idx.shape[1]
    A = torch.stack([text_attention(head, seed) for seed in seeds])  # (S, T, T)
    rows = [dict(seed=seed, **pattern_metrics(a)) for seed, a in zip(seeds, A, strict=True)]
    uniform = (1 / torch.arange(1, T + 1, dtype=torch.float64)).mean().item()
    return dict(text=text, A=A, rows=rows, uniform=uniform)


# Setting name -> how it differs from the default (text_attention's keywords).
SETTINGS = {
    "default init": {},
    "W_Q, W_K x3": dict(scale=3.0),
    "W_K = W_Q": dict(tied=True),
    "W_K = W_Q, x3": dict(tied=True, scale=3.0),
    "no positions": dict(pos=0.0),
    "positions x4": dict(pos=4.0),
    "shared offset x4, W x2": dict(offset=4.0, scale=2.0),
}


def family(head, seeds=(0, 1, 2, 3, 4)):
    """Each setting: seed 0's matrix and metrics, and how many seeds get seed 0's pattern."""
    rows = []
    for name, setting in SETTINGS.items():
        mats = [text_attention(head, seed, **setting) for seed in seeds]  # S x (T, T)
        metrics = [pattern_metrics(A) for A in mats]
        names = [pattern_name(m) for m in metrics]
        same = sum(n == names[0] for n in names)
        rows.append(dict(setting=name, pattern=names[0], same=same, A=mats[0], **metrics[0]))
    return dict(text=text_ids()[0], rows=rows, seeds=len(seeds))


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
SWAPPED = "mask after softmax"  # bugs.py's: softmax over all keys, then the future zeroed


def swapped_head():
    """The broken head the proofs are graded on with the mask after the softmax (scorecard.py)."""
    step = course_step("step-04")
    bug = next(b for b in step.bugs() if b.name == SWAPPED)
    return load_file(step.folder / "scorecard.py").head_with(bug)


def reference_proofs():
    """The reference 4.2 proofs, whatever implementation is under test; None in a student edition
    while Step 4 is open: they are its answers."""
    return None if course_step("step-04").unreleased else reference("step-04", "proofs")


NOT_YET = "(the reference proofs come when Step 4 is closed)"


def failing_proofs(Head):
    """The names of the reference proofs that raise AssertionError on the head class `Head`."""
    proofs = reference_proofs()
    if proofs is None:
        return None
    failed = []
    for name in PROOFS:
        try:
            getattr(proofs, name)(Head)
        except AssertionError:
            failed.append(name)
    return failed


def seeded_weights(Head, seed, B=4, T=8):
    """A (B, T, T) of Head(32, 16, T_max=T) from seed `seed` on x from seed + 100 (test_head.py's)."""
    x = randn(B, T, D, seed=seed + 100)  # (B, T, d)
    seed_all(seed)  # the same weights for every Head class: the head of tests/test_head.py
    h = Head(D, D_HEAD, T_max=T)
    with torch.no_grad():
        h(x)
    return h.A  # (B, T, T)


def mask_order(head, seed=0, B=4, T=8):
    """Row sums of your head and of the reference's swapped twin, and which reference proofs fail."""
    swapped = swapped_head()  # the same seeded weights as yours, the two lines swapped
    A = [seeded_weights(Head, seed, B, T) for Head in (head.Head, swapped)]  # 2 x (B, T, T)
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


# Appendix: how far a different draw moves the lecture's numbers

LECTURE_SCALE = {16: (4.12, 0.798), 64: (7.95, 0.684), 256: (18.00, 0.467)}  # raw std, max weight
LECTURE_MASK_LOW = 0.13  # the lecture's smallest row sum, softmax then mask
PERCENTILES = (0.05, 0.5, 0.95)


def percentiles(values):
    """The 5th, 50th and 95th percentiles of a list of floats."""
    q = torch.tensor(PERCENTILES, dtype=torch.float64)  # (3,)
    return torch.tensor(values, dtype=torch.float64).quantile(q).tolist()


def scale_spread(head, draws=200, B=1, T=8):
    """Raw std and largest scaled weight of one (B, T) draw of q, k, over `draws` seeds, per d_k."""
    rows = []
    for d_k, (lecture_std, lecture_max) in LECTURE_SCALE.items():
        std, top = [], []
        for seed in range(draws):
            q, k = randn(B, T, d_k, seed=2 * seed), randn(B, T, d_k, seed=2 * seed + 1)
            std.append(head.attention_scores(q, k, scale=False).std().item())  # (B, T, T) -> std
            scaled = head.attention_scores(q, k, scale=True)  # (B, T, T)
            top.append(F.softmax(scaled, dim=-1).max().item())  # largest weight of the draw
        rows.append(
            dict(
                d_k=d_k,
                lecture_std=lecture_std,
                std=percentiles(std),
                at_least=sum(s >= lecture_std for s in std) / draws,
                lecture_max=lecture_max,
                top=percentiles(top),
            )
        )
    return dict(rows=rows, draws=draws, B=B, T=T)


def mask_low_spread(head, seeds=100, B=4, T=8):
    """Smallest row sum of the swapped head, per seeded head and input: one sequence, and B."""
    swapped = swapped_head()
    sums = [seeded_weights(swapped, seed, B, T).sum(dim=-1) for seed in range(seeds)]  # (B, T) each
    rows = []
    for n in (1, B):  # the first sequence alone, then the whole batch (table (d)'s minimum)
        lows = [s[:n].min().item() for s in sums]
        at_least = sum(low >= LECTURE_MASK_LOW for low in lows) / seeds
        rows.append(dict(B=n, low=percentiles(lows), at_least=at_least))
    return dict(rows=rows, seeds=seeds, lecture=LECTURE_MASK_LOW)


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


def causal_order(head, seed=0):
    """Max |difference| for reorderings of the 4.3 input seen by the causal head, mask kept."""
    _, idx, V = text_ids()
    T = idx.shape[1]
    tok, pos, h = embedded_head(head, seed, V)
    perm = torch.randperm(T, generator=generator(seed))  # (T,) any reordering
    prefix = torch.cat([torch.randperm(T - 1, generator=generator(seed)), torch.tensor([T - 1])])
    with torch.no_grad():
        X, P = tok(idx), pos(torch.arange(T))[None, :]  # (1, T, d) each
        checks = {
            "no positions, any reordering: head(X[:, perm]) vs head(X)[:, perm]": (
                h(X[:, perm]) - h(X)[:, perm]
            ),
            "no positions, last output, positions 0..T-2 shuffled": (
                h(X[:, prefix])[:, -1] - h(X)[:, -1]  # (1, d_head) the last query sees a bag
            ),
            "with positions, last output, positions 0..T-2 shuffled": (
                h(X[:, prefix] + P)[:, -1] - h(X + P)[:, -1]
            ),
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


def flop_exponent(Ts, d, d_head):
    """p in FLOPs ~ T^p over Ts: below 2, since the projections grow only linearly in T."""
    return fit_exponent(Ts, [flop_count(T, d, d_head) for T in Ts])


MIN_RUN_TIME = 0.05  # seconds each timed block runs at least (torch.utils.benchmark)


def cost(
    head, Ts=(256, 512, 1024, 2048), d=64, d_head=64, repeats=3, seed=0, min_run_time=MIN_RUN_TIME
):
    """Median forward time at each T over `repeats` interleaved rounds on one thread, and slopes."""
    # The benchmark's protocol (common/run/timing.py): torch.utils.benchmark at a fixed thread count,
    # every T timed once per round, the median over rounds kept. Times are machine-dependent.
    seed_all(seed)
    h = head.Head(d, d_head, T_max=max(Ts))
    calls = {T: partial(h, randn(1, T, d, seed=seed)) for T in Ts}  # h(x), x (1, T, d)
    with torch.no_grad():  # the timer calls h in this thread, so no autograd graph is recorded
        seconds = interleaved(calls, repeats, threads=1, min_run_time=min_run_time)
    rows = []
    for T in Ts:
        q1, median, q3 = quartiles(seconds[T])
        rows.append(dict(T=T, seconds=median, q1=q1, q3=q3, flops=flop_count(T, d, d_head)))
    return dict(
        rows=rows,
        exponent=fit_exponent(Ts, [r["seconds"] for r in rows]),
        flop_exponent=flop_exponent(Ts, d, d_head),  # what the count predicts for the same T
        d=d,
        d_head=d_head,
        rounds=repeats,
        clock=clock(1)[1],
    )


# The blocks the run prints, and the experiments it calls on the head under test

TIMING_TS = (256, 512, 1024, 2048)
COST_D = COST_D_HEAD = 64


# What the tests time with: two short lengths, one round, a short timer (they never check speed).
QUICK = dict(timing_Ts=(16, 32), repeats=1, min_run_time=0.002)


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def scale_block(rows) -> str:
    """(a) the scale check."""
    header = ["d_k", "raw std", "sqrt(d_k)", "scaled std"]
    header += ["mean row max, raw", "mean row max, scaled"]
    header += ["rows > 0.99, raw", "rows > 0.99, scaled"]
    header += ["largest weight, raw", "largest weight, scaled"]
    return markdown_table(
        header,
        [
            [
                r["d_k"],
                f"{r['raw_std']:.2f}",
                f"{r['sqrt_d_k']:.1f}",
                f"{r['scaled_std']:.2f}",
                f"{r['max_raw']:.3f}",
                f"{r['max_scaled']:.3f}",
                _pct(r["saturated_raw"]),
                _pct(r["saturated_scaled"]),
                f"{r['largest_raw']:.3f}",
                f"{r['largest_scaled']:.3f}",
            ]
            for r in rows
        ],
    )


def real_text_block(rt) -> str:
    """(b) statistics of the untrained heads' attention on text."""
    rows = [
        [r["seed"], f"{r['first_column']:.3f}", f"{r['first_vs_uniform']:.2f}"]
        + [f"{r['diagonal']:.3f}", f"{r['evenness']:.3f}"]
        for r in rt["rows"]
    ]
    rows.append(["uniform rows", f"{rt['uniform']:.3f}", "1.00", f"{rt['uniform']:.3f}", "1.000"])
    header = ["seed", "first column", "first column / 1/(i+1)", "diagonal", "evenness"]
    return markdown_table(header, rows)


def family_block(fam) -> str:
    """(b2) which setting gives which pattern: seed 0's metrics and name, and how many seeds agree."""
    rows = [
        [r["setting"], f"{r['diagonal_rows']:.2f}", f"{r['column']:.2f}", r["column_key"]]
        + [f"{r['evenness']:.2f}", r["pattern"], f"{r['same']} of {fam['seeds']}"]
        for r in fam["rows"]
    ]
    header = ["setting", "rows peaked on the diagonal", "top key column's share", "that key"]
    header += ["evenness", "pattern (seed 0)", "seeds with that pattern"]
    return markdown_table(header, rows)


def smoothing_block(sm) -> str:
    """(c) the smoother at each bandwidth."""
    rows = [["none (the noisy input)", "0.00", "1.00", f"{sm['noise']:.3f}"]]
    rows += [
        [f"{r['s']:g}", f"{r['look_back']:.2f}", f"{r['keys']:.2f}", f"{r['rmse']:.3f}"]
        for r in sm["rows"]
    ]
    header = ["s", "look-back of the last row", "effective keys", "RMS error vs clean signal"]
    return markdown_table(header, rows)


def mask_order_block(mo) -> str:
    """(d) row sums with the mask before and after the softmax, and the proofs that fail."""

    def failed(proofs):
        if proofs is None:
            return [NOT_YET, ", ".join(f"`{name}`" for name in PROOFS.values())]
        tests = [PROOFS[name] for name in proofs]
        return [", ".join(f"`{name}`" for name in names) or "none" for names in (proofs, tests)]

    good, bad = mo["good"], mo["bad"]
    header = ["order", "smallest row sum", "largest row sum", "4.2 proofs that fail"]
    return markdown_table(
        header + ["tests of test_head.py for the same properties"],
        [
            ["mask, then softmax (your head)", f"{good[0]:.3f}", f"{good[1]:.3f}"]
            + failed(mo["failed_good"]),
            ["softmax, then mask", f"{bad[0]:.3f}", f"{bad[1]:.3f}"] + failed(mo["failed_bad"]),
        ],
    )


def mask_rows_block(mo) -> str:
    """(d) the wrong order's row sums, position by position."""
    header = ["query i", "keys it may see", "row sum after softmax-then-mask (mean of 4)"]
    return markdown_table(header, [[i, i + 1, f"{s:.3f}"] for i, s in enumerate(mo["bad_by_row"])])


def scale_spread_block(sp) -> str:
    """Appendix: the lecture's scale-table numbers against the spread of one draw of its size."""
    rows = []
    for r in sp["rows"]:
        std, top = r["std"], r["top"]
        rows.append(
            [r["d_k"], f"{r['lecture_std']:.2f}", f"{std[0]:.2f}", f"{std[2]:.2f}"]
            + [_pct(r["at_least"]), f"{r['lecture_max']:.3f}"]
            + [f"{top[0]:.3f}", f"{top[1]:.3f}", f"{top[2]:.3f}"]
        )
    header = ["d_k", "raw std, lecture", "raw std, 5th pct", "raw std, 95th pct"]
    header += ["draws >= lecture's std", "largest scaled weight, lecture"]
    header += ["largest scaled weight, 5th pct", "median", "95th pct"]
    return markdown_table(header, rows)


def mask_spread_block(ms) -> str:
    """Appendix: the smallest row sum after softmax-then-mask over seeded heads and inputs."""
    rows = [
        [f"{r['B']} x (8, 32)"] + [f"{v:.3f}" for v in r["low"]] + [_pct(r["at_least"])]
        for r in ms["rows"]
    ]
    header = ["input", "smallest row sum, 5th pct", "median", "95th pct"]
    header += [f"seeds >= lecture's {ms['lecture']:.2f}"]
    return markdown_table(header, rows)


def equivariance_block(diffs) -> str:
    """(e) the four permutation checks."""
    rows = [[name, f"{d:.1e}", "yes" if d < 1e-5 else "no"] for name, d in diffs.items()]
    return markdown_table(["check (mask switched off)", "max abs difference", "equivariant?"], rows)


def causal_order_block(diffs) -> str:
    """4.3: what the causal head of 4.3 does with a reordered input, positions off or on."""
    rows = [
        [name, f"{d:.3f}" if d > 1e-5 else f"{d:.1e}", "yes" if d < 1e-5 else "no"]
        for name, d in diffs.items()
    ]
    return markdown_table(
        ["reordering (causal mask kept)", "max abs difference", "unchanged?"], rows
    )


def online_block(on) -> str:
    """(e) streaming softmax and attention against the ordinary ones."""
    rows = [[name, f"{d:.1e}"] for name, d in on["diffs"].items()]
    rows.append(["(naive exp / sum on scores + 1000)", f"{_pct(on['naive_nan'])} nan"])
    return markdown_table(["streamed one key at a time vs", "max abs difference"], rows)


def cost_count_block(_=None) -> str:
    """(e) counted FLOPs and memory: arithmetic only, the same on every machine."""
    rows = []
    for T in TIMING_TS:
        flops = flop_count(T, COST_D, COST_D_HEAD)
        quadratic = 4 * T * T * COST_D_HEAD  # q k^T and A v
        rows.append([T, f"{flops:.3e}", _pct(quadratic / flops), f"{T * T * 4 / 2**20:g}"])
    header = ["T", "FLOPs per forward", "of which q k^T and A v", "attention matrix (MiB, float32)"]
    slope = flop_exponent(TIMING_TS, COST_D, COST_D_HEAD)
    return markdown_table(header, rows) + (
        f"\nFLOPs ~ T^{slope:.2f}: the least-squares slope of log FLOPs against log T, "
        f"T = {TIMING_TS[0]} to {TIMING_TS[-1]}.\n"
    )


def timing_table(cost: dict) -> str:
    """Measured forward times (printed only: they depend on the machine)."""
    rows = [
        [
            r["T"],
            f"{1e3 * r['seconds']:.2f}",
            f"{1e3 * r['q1']:.2f} to {1e3 * r['q3']:.2f}",
            f"{r['flops'] / r['seconds'] / 1e9:.1f}",
        ]
        for r in cost["rows"]
    ]
    header = ["T", "ms per forward (median)", "quartiles (ms)", "GFLOP/s"]
    return markdown_table(header, rows) + (
        f"fitted exponent: time ~ T^{cost['exponent']:.2f}; "
        f"the FLOP count over the same T grows as T^{cost['flop_exponent']:.2f}\n"
    )


def measured_block(cost: dict) -> str:
    """(e) the timing table, printed only: it changes from run to run and is checked nowhere."""
    said = (
        f"measured on this machine, one thread ({cost['clock']}), median of {cost['rounds']} "
        "interleaved rounds: changes from run to run, checked nowhere\n"
    )
    return said + timing_table(cost)


def timed_cost(ctx) -> dict:
    """(e) forward times over T: two short lengths and one short round under --quick."""
    timing = QUICK if ctx.quick else {"repeats": ctx.option("repeats", 3)}
    return cost(
        ctx.load("head"),
        Ts=timing.get("timing_Ts", TIMING_TS),
        d=COST_D,
        d_head=COST_D_HEAD,
        repeats=timing["repeats"],
        min_run_time=timing.get("min_run_time", MIN_RUN_TIME),
    )


def on_head(experiment):
    """An experiment of py, called on the head being run (yours or the reference)."""
    return lambda ctx: experiment(ctx.load("head"))


def at_64(rows):
    """Table (a)'s row at d_k = 64, the row the handout's predictions ask about."""
    return next(r for r in rows if r["d_k"] == 64)
