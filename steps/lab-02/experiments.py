"""lab-02's experiments and the blocks its run prints: the permutation table, dropout's mean, the KV cache's size and speed."""

import copy
import os

import torch
import torch.nn.functional as F

from common.docs import markdown_table
from common.envreport import machine
from common.run import timing
from common.run.experiment import Context
from common.seeding import generator, randn, seed_all

V, T, D, D_HEAD = 65, 16, 32, 16  # Step 3's character vocabulary; a short sequence; one head
SHIFT = 5  # how far every position moves on in the relative check
SCHEMES = ("none", "learned", "sinusoidal", "rotary")
NOISE = 1e-5  # float32 rounding of outputs of size ~1: differences below it are no difference
PS = (0.1, 0.5, 0.9)  # dropout rates the table measures
N_DROP = 1_000_000  # entries per dropout measurement: shares to about 0.001
SHOW_P = 0.5  # the dropout rate the prediction asks about


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


def shown(d: float) -> str:
    """A difference as the table prints it: float32 rounding noise is shown as such."""
    return f"< {NOISE:.0e}" if d < NOISE else f"{d:.3f}"


def positions_block(rows: dict) -> str:
    """The permutation table: equivariant over tokens? relative under a shift of every position?"""
    yes = lambda d: "yes" if d < NOISE else "no"  # noqa: E731
    table = [
        [s, shown(r["permuted"]), yes(r["permuted"]), shown(r["shifted"]), yes(r["shifted"])]
        for s, r in rows.items()
    ]
    header = ["positions", "max \\|head(idx[perm]) - head(idx)[perm]\\|", "equivariant?"]
    header += [f"max \\|scores moved on by {SHIFT} - scores\\|", "relative?"]
    return markdown_table(header, table)


def dropout_block(rows: dict) -> str:
    """The dropout table: share of zeros, and the training mean with and without the scale."""
    table = [
        [
            f"{p:g}",
            f"{r['zeros']:.3f}",
            f"{r['mean']:.3f}",
            f"{r['unscaled']:.3f}",
            f"{r['eval']:g}",
        ]
        for p, r in rows.items()
    ]
    header = ["p", "share of zeros", "training mean", "training mean, no 1 / (1 - p)", "eval mean"]
    return markdown_table(header, table)


def below_noise(key: str):
    """rows -> how many kinds of positions measure below float32 noise on `key`."""
    return lambda rows: sum(r[key] < NOISE for r in rows.values())


def unscaled_ratio(rows: dict) -> float:
    """Eval mean over the unscaled training mean at SHOW_P: what the next layer sees grow by."""
    return rows[SHOW_P]["eval"] / rows[SHOW_P]["unscaled"]


# --- task 3: the KV cache's size and speed (recorded, not checked: the speed varies by machine)

# The timed GPT: Step 5's code, untrained (speed does not depend on the weights), with a T_max
# long enough for attention over the context to show. V = 65 is the Shakespeare vocabulary.
SPEED = dict(V=65, T_max=1024, d=128, h=4, n_layer=4)
CONTEXTS = (16, 64, 256, 1024)  # T: the ids the next token is computed from
ROUNDS, MIN_RUN_TIME = 5, 0.2  # interleaved rounds (the median kept), seconds per timed block
# --quick (the tests): the same code on a model and contexts small enough for a second
QUICK_SPEED = dict(V=65, T_max=32, d=32, h=4, n_layer=2)
QUICK_CONTEXTS, QUICK_ROUNDS, QUICK_MIN_RUN_TIME = (4, 8, 32), 1, 0.01
STEP = "lab-02"  # whose predictions.toml the speed table reads
THREADS = 1  # every contender on one thread (common/run/timing.py says why)
FLAT = 1.5  # cached time per token at the longest context, at most this times the shortest's
PARITY_TOL = 1e-4  # cached against uncached logits of the timed model (d = 128, 4 layers)

# (label, n_layer, h, d_head, T, bytes a number): the cache of one sequence (B = 1), full
CACHES = [
    (
        "the full run's timed GPT, float32",
        SPEED["n_layer"],
        SPEED["h"],
        SPEED["d"] // SPEED["h"],
        SPEED["T_max"],
        4,
    ),
    ("GPT-2 small, float32", 12, 12, 64, 1024, 4),
    ("GPT-2 small, bfloat16", 12, 12, 64, 1024, 2),
    ("GPT-2 XL, float32", 48, 25, 64, 1024, 4),
]


def flops_perowtoken(T, d, n_layer, V, cached):
    """Multiply-adds x 2 of the next token's logits from T ids: one position, or all T again."""
    dense = 24 * n_layer * d * d + 2 * d * V  # q, k, v, proj (8d^2), MLP (16d^2), lm_head (2dV)
    if cached:  # one new position's dense maps, its query against T keys and T values
        return dense + 4 * n_layer * T * d
    return T * dense + 4 * n_layer * T * T * d  # Step 5's forward: T positions, T x T scores


def cache_sizes(ctx: Context) -> list[dict]:
    """Every cache of CACHES in numbers (kvcache.cache_numbers, the formula) and in MB."""
    kv = ctx.load("kvcache")
    rows = []
    for label, n_layer, h, d_head, T, nbytes in CACHES:
        numbers = kv.cache_numbers(n_layer, 1, h, T, d_head)
        rows.append(dict(label=label, n_layer=n_layer, h=h, d_head=d_head, T=T, numbers=numbers))
        rows[-1]["MB"] = numbers * nbytes / 1e6
    return rows


def sizes_block(rows) -> str:
    """The cache per sequence: 2 n_layer h T d_head numbers, in MB; GPT-2 small's in a sentence."""
    table = markdown_table(
        ["cache of one full sequence", "n_layer", "h", "d_head", "T", "2 n_layer h T d_head", "MB"],
        [
            [r["label"], r["n_layer"], r["h"], r["d_head"], r["T"], f"{r['numbers']:,}"]
            + [f"{r['MB']:.1f}"]
            for r in rows
        ],
    )
    gpt2 = next(r for r in rows if r["label"] == "GPT-2 small, float32")
    return table + (
        f"\nGPT-2 small keeps {gpt2['MB']:.1f} MB of keys and values per sequence of "
        f"{gpt2['T']} tokens in float32 (MB = 10^6 bytes): {gpt2['numbers'] // gpt2['T']:,} "
        "numbers a token, 2 n_layer d; a batch of B sequences keeps B times as much.\n"
    )


def _cells(kv, model, T):
    """The two ways to the next token's logits from T ids (all T again, or one cached step), and their distance."""
    idx = torch.randint(model.V, (1, T), generator=generator(T))  # (1, T)
    want = model(idx)[0][:, -1]  # (1, V): made before the cache's code runs, so nothing it does
    base = kv.KVCache(model, 1)
    kv.forward_cached(model, idx[:, :-1], base)  # the prefill: T - 1 positions held

    def cached():
        held = copy.copy(base)  # the same T - 1 positions before every call: appends rebind lists
        held.keys, held.values = list(base.keys), list(base.values)
        return kv.forward_cached(model, idx[:, -1:], held)[:, -1]  # (1, V)

    def uncached():
        return model(idx)[0][:, -1]  # (1, V)

    distance = (cached() - want).abs().max().item()  # (the model as it was made) reaches it
    return {("uncached", T): uncached, ("cached", T): cached}, distance


def speed(ctx: Context) -> dict:
    """Seconds per new token at each context length, with and without the cache, one thread."""
    kv = ctx.load("kvcache")
    cfg = QUICK_SPEED if ctx.quick else SPEED
    Ts = QUICK_CONTEXTS if ctx.quick else CONTEXTS
    rounds, min_run_time = (
        (QUICK_ROUNDS, QUICK_MIN_RUN_TIME) if ctx.quick else (ROUNDS, MIN_RUN_TIME)
    )
    seed_all(0)
    model = kv.GPT(**cfg).eval()
    load_before = timing.load_average()
    with torch.no_grad():  # the timer calls in this thread: no autograd graph is recorded
        calls, distances = {}, {}
        for T in Ts:
            cells, distances[T] = _cells(kv, model, T)
            calls |= cells
        for fn in calls.values():  # warm-up: first calls allocate; none of them is timed
            fn()
        seconds = timing.interleaved(calls, rounds, threads=THREADS, min_run_time=min_run_time)
    rows = []
    for T in Ts:
        row = dict(T=T, parity=distances[T])
        for way in ("uncached", "cached"):
            q1, median, q3 = timing.quartiles(seconds[(way, T)])
            row[way] = dict(seconds=median, q1=q1, q3=q3, samples=seconds[(way, T)])
            row[way]["flops"] = flops_perowtoken(
                T, cfg["d"], cfg["n_layer"], cfg["V"], way == "cached"
            )
        row["speedup"] = row["uncached"]["seconds"] / row["cached"]["seconds"]
        rows.append(row)
    warnings = [
        timing.load_warning(load_before, os.cpu_count() or 1, "at the start"),
        timing.load_warning(timing.load_average(), os.cpu_count() or 1, "at the end", own=THREADS),
    ] + [
        f"spread: {way} at T={r['T']}: quartiles {100 * timing.relative_spread(r[way]['samples']):.0f}% "
        "of the median apart"
        for r in rows
        for way in ("uncached", "cached")
        if rounds > 1 and timing.relative_spread(r[way]["samples"]) > timing.SPREAD_LIMIT
    ]
    return dict(
        rows=rows,
        model=cfg,
        rounds=rounds,
        quick=ctx.quick,
        machine=machine(THREADS),
        clock=timing.clock(THREADS)[1],
        warnings=[w for w in warnings if w],
        growth={
            way: rows[-1][way]["seconds"] / rows[0][way]["seconds"]
            for way in ("uncached", "cached")
        },
    )


def flop_ratio(row) -> float:
    """Uncached over cached FLOPs of one new token at this row's T: what counting promises."""
    return row["uncached"]["flops"] / row["cached"]["flops"]


def grows(ratio: float, digits: int) -> str:
    """'grows 1.35x', or 'shrinks to 0.81x' when the later time is the smaller."""
    return f"grows {ratio:.{digits}f}x" if ratio >= 1 else f"shrinks to {ratio:.2f}x"


def prediction_line(r) -> str:
    """The student's cache_speedup beside the measured speed-up and the FLOP ratio (not recorded)."""
    from common.course import predictions

    last = r["rows"][-1]
    mine, problem = predictions.read(STEP)
    answer = predictions.Answer(
        "cache_speedup", "", round(last["speedup"], 1), f"{last['speedup']:.1f}x"
    )
    said = problem or predictions.compare(mine.get("cache_speedup", predictions.EMPTY), answer)
    quick = " (--quick: a tiny GPT, not the question's)" if r["quick"] else ""
    return (
        f"cache_speedup at T={last['T']}{quick}: {said}; the FLOP counts give "
        f"{flop_ratio(last):,.0f}x\n"
    )


def speed_block(r) -> str:
    """The table of time per new token, the growth of each way, and the machine it ran on."""
    table = markdown_table(
        [
            "context T",
            "uncached ms/token",
            "cached ms/token",
            "speed-up",
            "FLOP ratio",
            "uncached tokens/s",
            "cached tokens/s",
            "uncached MFLOP/token",
            "cached MFLOP/token",
            "max abs logit diff",
        ],
        [
            [
                row["T"],
                f"{1e3 * row['uncached']['seconds']:.2f}",
                f"{1e3 * row['cached']['seconds']:.2f}",
                f"{row['speedup']:.1f}x",
                f"{flop_ratio(row):,.0f}x",
                f"{1 / row['uncached']['seconds']:.0f}",
                f"{1 / row['cached']['seconds']:.0f}",
                f"{row['uncached']['flops'] / 1e6:.1f}",
                f"{row['cached']['flops'] / 1e6:.2f}",
                f"{row['parity']:.1e}",
            ]
            for row in r["rows"]
        ],
    )
    first, last, m = r["rows"][0], r["rows"][-1], r["model"]
    rounds = (
        "one round (--quick: no median)"
        if r["rounds"] == 1
        else f"the median of {r['rounds']} interleaved rounds"
    )
    lines = [
        f"From T={first['T']} to T={last['T']}, the cached time per new token "
        f"{grows(r['growth']['cached'], 2)} (the bar: at most {FLAT}x), the uncached "
        f"{grows(r['growth']['uncached'], 1)}; at T={last['T']} the cache is "
        f"{last['speedup']:.1f}x faster, where the FLOP counts (questions 5 and 6) promise "
        f"{flop_ratio(last):,.0f}x: what the cached step costs is not its FLOPs.",
        f"Step 5's GPT, untrained, V={m['V']}, T_max={m['T_max']}, d={m['d']}, h={m['h']}, "
        f"n_layer={m['n_layer']}; {rounds}, {r['clock']}. "
        f"Recorded on {r['machine']}: times vary from machine to machine and from run to run.",
        *(f"warning: {w}" for w in r["warnings"]),
    ]
    return table + "\n" + "\n".join(lines) + "\n"


def logits_differ(r, ctx) -> str | None:
    """A FAIL line when the cached logits are not the uncached ones (the timing itself is not judged)."""
    bad = [row for row in r["rows"] if not row["parity"] <= PARITY_TOL]
    if bad:
        return (
            f"the cached step's logits differ from Step 5's by {bad[0]['parity']:.2g} at T="
            f"{bad[0]['T']} (tolerance {PARITY_TOL:g}): the timing compares two different computations"
        )
    return None
