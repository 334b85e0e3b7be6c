"""Lab 01's experiments: our attention against PyTorch's (max-abs-difference table), the masks,
the exercise, the appendix's lecture numbers, and the blocks the run prints of each."""

from collections.abc import Callable
from types import ModuleType

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from common.docs import markdown_table
from common.envreport import report
from common.run.experiment import Context
from common.seeding import generator, randn, seed_all

# Tolerances, float32 on CPU. The outputs compared are of size ~1, where one float32 rounding unit
# is 2**-23 ~ 1.2e-7; a wrong scale, mask, transpose or head layout moves them by 1e-2 or more.
#
# Single head vs F.scaled_dot_product_attention (MATH backend): 1e-6, about 8 rounding units. We
# scale q @ k^T after the matmul; the MATH backend multiplies q and k by sqrt(scale) before it and
# sums in its own order, so the two may differ in the last few bits and no more.
SINGLE_HEAD_TOL = 1e-6
# Multi-head vs nn.MultiheadAttention: 2e-5. Two extra d_model-long projections (in and out), run
# by different kernels in a different order, let rounding from three chained matmuls add up; still
# three orders of magnitude below what a wrong head split or weight layout produces.
MULTI_HEAD_TOL = 2e-5
# Stable softmax vs torch.softmax: 1e-6. Probabilities lie in [0, 1]; dividing by the sum and
# multiplying by its reciprocal differ by a rounding unit. A naive exp(1000) gives inf/NaN instead.
SOFTMAX_TOL = 1e-6

LARGE_LOGITS = (1000.0, 1001.0, 999.0, 1002.0)
SHAPE = (2, 8, 16)  # single-head rows: q, k, v are [B, T, d_head]
MULTI_HEAD = {"B": 2, "T": 8, "d_model": 32, "n_heads": 4}  # the multi-head row
EXERCISE_T = 4
MASK_BATCH = (3, 6)  # B, T of the mask figure: sequences of 6, 5 and 4 real tokens


def max_abs_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    """Largest |a - b| over all entries, as a Python float."""
    return (a - b).abs().max().item()


def reference_sdpa(q, k, v, attn_mask=None, is_causal=False) -> torch.Tensor:
    """PyTorch's F.scaled_dot_product_attention pinned to the plain-matmul MATH backend."""
    with sdpa_kernel(backends=[SDPBackend.MATH]):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal)


def seeded_qkv(shape: tuple[int, ...], seed: int) -> tuple[torch.Tensor, ...]:
    """q, k, v of `shape` [..., T, d_head], drawn from seeds seed, seed + 1, seed + 2."""
    return tuple(randn(*shape, seed=seed + i) for i in range(3))


def padding_mask(B: int, T: int) -> torch.Tensor:
    """[B, T] bool, True = real token: sequence b has T - b real tokens, then padding (at least 1)."""
    lengths = torch.tensor([max(T - b, 1) for b in range(B)])  # (B,)
    return torch.arange(T)[None, :] < lengths[:, None]  # (1, T) < (B, 1) -> (B, T)


def diff_single_head(attention: ModuleType, shape=SHAPE, seed: int = 0) -> float:
    """Max |ours - SDPA| for unmasked single-head attention."""
    q, k, v = seeded_qkv(shape, seed)  # each (B, T, d_head)
    ours, _ = attention.scaled_dot_product_attention(q, k, v)
    return max_abs_diff(ours, reference_sdpa(q, k, v))


def diff_causal(attention: ModuleType, shape=SHAPE, seed: int = 0) -> float:
    """Max |ours with causal_mask(T) - SDPA with is_causal=True|."""
    q, k, v = seeded_qkv(shape, seed)  # each (B, T, d_head)
    ours, _ = attention.scaled_dot_product_attention(q, k, v, attention.causal_mask(shape[-2]))
    return max_abs_diff(ours, reference_sdpa(q, k, v, is_causal=True))


def diff_padding(attention: ModuleType, shape=SHAPE, seed: int = 0) -> float:
    """Max |ours - SDPA| when the same boolean key-padding mask [B, 1, T] goes to both."""
    q, k, v = seeded_qkv(shape, seed)  # each (B, T, d_head) or (B, h, T, d_head)
    B, T = shape[0], shape[-2]
    mask = padding_mask(B, T).view(B, *(1,) * (len(shape) - 2), T)  # (B, T) -> (B, 1, T): keys only
    ours, _ = attention.scaled_dot_product_attention(q, k, v, mask)
    return max_abs_diff(ours, reference_sdpa(q, k, v, attn_mask=mask))  # SDPA: True = keep too


def multi_head_pair(attention: ModuleType, d_model: int, n_heads: int, seed: int = 0):
    """(ours, nn.MultiheadAttention) holding the same weights, both without biases, in eval mode."""
    seed_all(seed)
    ref = nn.MultiheadAttention(d_model, n_heads, bias=False, batch_first=True)
    ours = attention.MultiHeadSelfAttention(d_model, n_heads)
    with torch.no_grad():
        ours.in_proj.weight.copy_(ref.in_proj_weight)  # (3C, C): rows [W_q; W_k; W_v] in both
        ours.out_proj.weight.copy_(ref.out_proj.weight)  # (C, C)
    return ours.eval(), ref.eval()


def diff_multi_head(
    attention: ModuleType,
    B: int = MULTI_HEAD["B"],
    T: int = MULTI_HEAD["T"],
    d_model: int = MULTI_HEAD["d_model"],
    n_heads: int = MULTI_HEAD["n_heads"],
    seed: int = 0,
    causal: bool = False,
) -> float:
    """Max |ours - nn.MultiheadAttention| on seeded x [B, T, d_model], with copied weights."""
    ours, ref = multi_head_pair(attention, d_model, n_heads, seed)
    x = randn(B, T, d_model, seed=seed)  # (B, T, C)
    mask = attention.causal_mask(T) if causal else None  # (T, T) True = may attend
    with torch.no_grad():
        out, _ = ours(x, mask)  # (B, T, C)
        # nn.MultiheadAttention's boolean attn_mask means the opposite: True = may NOT attend.
        blocked = None if mask is None else ~mask
        with sdpa_kernel(backends=[SDPBackend.MATH]):
            expected, _ = ref(x, x, x, attn_mask=blocked, need_weights=False)  # (B, T, C)
    return max_abs_diff(out, expected)


def diff_softmax(attention: ModuleType, logits=LARGE_LOGITS) -> float:
    """Max |stable_softmax - torch.softmax| on one row of logits."""
    x = torch.tensor(logits)  # (n,)
    return max_abs_diff(attention.stable_softmax(x, dim=-1), torch.softmax(x, dim=-1))


def comparisons() -> list[tuple[str, Callable[[ModuleType], float], float]]:
    """(label, measurement, threshold) for each row of the handout's table."""
    return [
        ("Single-head, non-causal vs SDPA", diff_single_head, SINGLE_HEAD_TOL),
        ("Single-head, causal vs SDPA is_causal=True", diff_causal, SINGLE_HEAD_TOL),
        ("Boolean padding mask vs SDPA attn_mask", diff_padding, SINGLE_HEAD_TOL),
        ("Multi-head vs nn.MultiheadAttention (copied weights)", diff_multi_head, MULTI_HEAD_TOL),
        (
            "Stable softmax vs torch.softmax, logits [1000, 1001, 999, 1002]",
            diff_softmax,
            SOFTMAX_TOL,
        ),
    ]


def parity_rows(attention: ModuleType) -> list[tuple[str, float, float]]:
    """(label, measured max abs difference, threshold) for every comparison."""
    return [(label, measure(attention), tol) for label, measure, tol in comparisons()]


def parity_table(rows: list[tuple[str, float, float]]) -> str:
    """The rows as a Markdown table (also readable in a terminal)."""
    header = ["Comparison", "Max abs difference", "Threshold", "Result"]
    body = [
        [label, f"{d:.2e}", f"{tol:.0e}", "PASS" if d <= tol else "FAIL"] for label, d, tol in rows
    ]
    return markdown_table(header, body)


def parity(attention: ModuleType) -> dict:
    """The table's rows, and the environment they were measured in (threads as the run fixed them)."""
    return {"rows": parity_rows(attention), "machine": report()}


def over_threshold(result: dict, ctx: Context) -> str | None:
    """The table's claim: every figure within its threshold (a FAIL line otherwise)."""
    if failed := [label for label, d, tol in result["rows"] if d > tol]:
        return f"{len(failed)} of the table's figures are above their threshold"
    return None


def exhibit(wrong_mask: ModuleType, T: int = EXERCISE_T) -> dict:
    """The exhibit buggy_causal_mask (needs tasks 2 and 3): its shape and its weights' row sums."""
    buggy = wrong_mask.buggy_causal_mask(T)  # (T, T) given code: the transpose of causal_mask
    weights = wrong_mask.attention_weights(buggy)[0]  # (T, T)
    return {
        "T": T,
        "buggy_shape": tuple(buggy.shape),
        "buggy_dtype": buggy.dtype,
        "row_sum_error": max_abs_diff(weights.sum(-1), torch.ones(T)),
        "buggy_mask": buggy,
        "buggy_weights": weights,
    }


def diagnosis(attention: ModuleType, wrong_mask: ModuleType, T: int = EXERCISE_T) -> dict:
    """Your future_leak (task 7) on the exhibit and on causal_mask, and causal_mask vs SDPA."""
    found = {}
    for name, mask in (("buggy", wrong_mask.buggy_causal_mask(T)), ("causal", None)):
        mask = attention.causal_mask(T) if mask is None else mask  # (T, T)
        weights = wrong_mask.attention_weights(mask)  # (1, T, T)
        found[f"{name}_count"], found[f"{name}_largest"] = wrong_mask.future_leak(weights)
        try:
            wrong_mask.assert_no_future_leak(weights, f"{name}_causal_mask".removeprefix("causal_"))
            found[f"{name}_message"] = ""
        except AssertionError as exc:
            found[f"{name}_message"] = f"AssertionError: {exc}"
    q, k, v = seeded_qkv((1, T, 8), seed=0)  # each (1, T, d_head)
    ours, _ = attention.scaled_dot_product_attention(q, k, v, attention.causal_mask(T))
    found["causal_vs_sdpa"] = max_abs_diff(ours, reference_sdpa(q, k, v, is_causal=True))
    return found


def exercise_passed(ex: dict) -> bool:
    """Your diagnostic catches every leak of the exhibit and none of causal_mask, which matches SDPA."""
    T = ex["T"]
    caught = ex["buggy_count"] == T * (T - 1) // 2 and bool(ex["buggy_message"])
    clean = ex["causal_count"] == 0 and not ex["causal_message"]
    return caught and clean and ex["causal_vs_sdpa"] <= SINGLE_HEAD_TOL


def exercise_problem(ex: dict) -> str:
    """Why the exercise did not pass, in one phrase."""
    if ex["buggy_count"] != ex["T"] * (ex["T"] - 1) // 2 or not ex["buggy_message"]:
        return "your future_leak does not count every leak of the exhibit"
    if ex["causal_count"] or ex["causal_message"]:
        return "your future_leak reports a leak in causal_mask, which has none"
    return "attention under causal_mask differs from SDPA is_causal=True (see the table)"


def exhibit_lines(ex: dict) -> list[str]:
    """What the exercise prints about the exhibit before any diagnostic has run."""
    return [
        f"exhibit buggy_causal_mask({ex['T']}): shape {ex['buggy_shape']}, {ex['buggy_dtype']}; "
        f"rows of its weights sum to 1 (max |row sum - 1| {ex['row_sum_error']:.2e})",
    ]


def diagnosed(ctx: Context) -> dict:
    """The exhibit, and what your future_leak (task 7) finds in it and in causal_mask."""
    wrong_mask = ctx.load("exercises.wrong_mask")
    return ctx.results["exhibit"] | diagnosis(ctx.load("attention"), wrong_mask)


def exercise_verdict(ex: dict, ctx: Context) -> str | None:
    """The exercise's claim: your diagnostic catches the exhibit and clears causal_mask."""
    return None if exercise_passed(ex) else f"the exercise: {exercise_problem(ex)}"


def diagnosis_lines(ex: dict) -> list[str]:
    """What the exercise prints once your future_leak is written."""
    verdict = "PASS" if exercise_passed(ex) else "FAIL"
    caught = (
        f"leak diagnostic caught it: {ex['buggy_message']}"
        if ex["buggy_message"]
        else "leak diagnostic MISSED the exhibit's leaks"
    )
    return [
        f"your future_leak on the exhibit: {ex['buggy_count']} future-token weights, "
        f"largest {ex['buggy_largest']:.6f}",
        caught,
        f"your future_leak on causal_mask({ex['T']}): {ex['causal_count']} future-token weights; "
        f"vs SDPA is_causal=True: max abs difference {ex['causal_vs_sdpa']:.2e} "
        f"(threshold {SINGLE_HEAD_TOL:.0e}) {verdict}",
    ]


def parity_block(result: dict) -> str:
    """The README's generated table, with the environment it was measured on."""
    inputs = (
        f"Inputs (seeded): single-head rows use q, k, v of shape [B, T, d_head] = {list(SHAPE)}; "
        "the multi-head row uses x of shape [B, T, d_model] = "
        f"{[MULTI_HEAD[n] for n in ('B', 'T', 'd_model')]} with n_heads = {MULTI_HEAD['n_heads']}."
    )
    cmd = "`python -m common.run lab-01 --write-docs` (the command behind `pixi run lab-01`)"
    env = f"Measured with {cmd} on:\n\n```text\n{result['machine']}\n```"
    return f"{inputs}\n\n{env}\n\n{parity_table(result['rows'])}"


def exercise_block(ex: dict) -> str:
    """The README's generated exercise output."""
    return "```text\n" + "\n".join(exhibit_lines(ex) + diagnosis_lines(ex)) + "\n```\n"


def mask_pictures(attention: ModuleType, B: int = MASK_BATCH[0], T: int = MASK_BATCH[1]) -> dict:
    """The causal, padding and combined masks of a small padded batch, from the code under test."""
    causal = attention.causal_mask(T)  # (T, T)
    padding = padding_mask(B, T)  # (B, T) True = real token
    return {
        "causal": causal,
        "padding": padding,
        "combined": attention.combine_causal_and_padding(causal, padding),  # (B, T, T)
    }


# Appendix: the lecture's numbers that this lab does not reproduce, and why.

LECTURE_LEAK = 0.740962  # the lecture's largest leaked weight in the exercise
LECTURE_PARITY = ("2.38e-07", "1.19e-07", "1.19e-07", "8.94e-08", "0.0")  # its table, in order
ULP = 2.0**-23  # one float32 rounding unit at 1.0
SPREAD_SEEDS = 20


def lecture_leak(attention: ModuleType, wrong_mask: ModuleType, T: int = EXERCISE_T) -> list:
    """The triu mask's leak for the lecture's draw of q, k, v and for this lab's."""
    g = generator(0)  # one generator, q then k then v: what torch.manual_seed(0) would give
    draws = {  # name -> [q, k, v], each (1, T, d_head)
        "one generator seeded 0, drawing q, then k, then v": [
            torch.randn(1, T, 8, generator=g) for _ in range(3)
        ],
        "three generators seeded 0, 1 and 2 (this lab's exercise)": seeded_qkv((1, T, 8), 0),
    }
    rows = []
    for name, (q, k, v) in draws.items():
        triu = torch.triu(torch.ones(T, T, dtype=torch.bool))  # (T, T), the exhibit's mask
        _, weights = attention.scaled_dot_product_attention(q, k, v, triu)  # (1, T, T)
        rows.append((name, *wrong_mask.future_leak(weights)))
    return rows


def lecture_leak_block(rows: list) -> str:
    """The appendix table: which draw gives the lecture's largest leaked weight."""
    body = [[name, count, f"{largest:.6f}"] for name, count, largest in rows]
    header = ["q, k, v of shape [1, 4, 8] drawn from", "future weights", "largest leaked weight"]
    return markdown_table(header, body)


def parity_spread(attention: ModuleType, seeds: int = SPREAD_SEEDS) -> list:
    """Per comparison: seed 0's figure and the smallest and largest over `seeds` seeds."""
    rows = []
    for (label, measure, _), lecture in zip(comparisons(), LECTURE_PARITY, strict=True):
        if measure is diff_softmax:  # fixed logits, no seed
            measured = [measure(attention)]
        else:
            measured = [measure(attention, seed=seed) for seed in range(seeds)]
        rows.append((label, lecture, measured[0], min(measured), max(measured)))
    return rows


def parity_spread_block(rows: list) -> str:
    """The appendix table: the parity figures in float32 rounding units, and their spread."""
    body = [
        [label, lecture, f"{d:.2e}", f"{d / ULP:.2f}", f"{lo / ULP:.2f}", f"{hi / ULP:.2f}"]
        for label, lecture, d, lo, hi in rows
    ]
    header = ["Comparison", "lecture", "here", "here, in units of 2^-23"]
    header += [f"smallest over {SPREAD_SEEDS} seeds, units", "largest, units"]
    return markdown_table(header, body)


def empty_row(attention: ModuleType) -> list[tuple[str, str]]:
    """What each softmax makes of a row whose every key is blocked (all -inf scores)."""
    row = torch.full((4,), float("-inf"))  # (4,) one query, every key blocked
    shifted = row - row.amax()  # -inf - (-inf): the max shift alone
    q = k = v = randn(1, 4, 8, seed=0)  # (1, T, d_head)
    blocked = torch.ones(4, 4, dtype=torch.bool)  # (T, T) True = may attend
    blocked[0] = False  # query 0 may see no key
    with sdpa_kernel(backends=[SDPBackend.MATH]):
        sdpa = F.scaled_dot_product_attention(q, k, v, attn_mask=blocked)[0, 0]  # (d_head,)
    return [
        ("torch.softmax(row)", str(torch.softmax(row, dim=-1).tolist())),
        ("exp(row - row.max()), the max shift alone", str(shifted.exp().tolist())),
        ("this lab's stable_softmax(row)", str(attention.stable_softmax(row).tolist())),
        ("SDPA (MATH backend), output of the blocked query", str(sdpa.tolist())),
    ]


def empty_row_block(rows: list[tuple[str, str]]) -> str:
    """The appendix table: NaN or zeros for a row with no allowed key."""
    return markdown_table(
        ["computed on a row of four -inf scores", "result"], [list(r) for r in rows]
    )
