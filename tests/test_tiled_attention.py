"""bench/: tiled attention agrees with naive attention and torch's SDPA; the README quotes the run;
the timing protocol it shares with the steps (common/run/timing.py) holds."""

import json
import logging
import sys
import time

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from bench import bench_attention
from bench.tiled_attention import naive_attention, tiled_attention
from common.docs import read_block
from common.run import timing
from common.seeding import generator, randn

# float32 with scores of size ~1: summing the same products in another order (tile by tile, with
# rescaling) moves the output by ~1e-7; 1e-5 is the bound and leaves a 10x margin.
ATOL = 1e-5


def qkv(lead: tuple[int, ...], T: int, d_head: int = 8, seed: int = 0):
    """Seeded q, k, v, each [*lead, T, d_head]."""
    return tuple(randn(*lead, T, d_head, seed=seed + i) for i in range(3))


def assert_close(got: torch.Tensor, want: torch.Tensor) -> None:
    """Same shape, finite, and no entry further than ATOL from the wanted one."""
    assert got.shape == want.shape
    assert torch.isfinite(got).all()
    worst = (got - want).abs().max().item()
    assert worst <= ATOL, f"max |difference| {worst:.2e} > {ATOL:g}"


def reference(q, k, v, mask=None, is_causal=False) -> torch.Tensor:
    """torch's SDPA on the MATH backend, with the causal mask folded into the boolean mask."""
    T_q, T_k = q.shape[-2], k.shape[-2]
    if is_causal:
        tril = torch.ones(T_q, T_k, dtype=torch.bool).tril()  # (T_q, T_k)
        mask = tril if mask is None else mask & tril  # (..., T_q, T_k)
    with sdpa_kernel(SDPBackend.MATH):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (..., T_q, hs)


def assert_all_agree(q, k, v, mask=None, is_causal=False, **blocks) -> torch.Tensor:
    """Tiled == naive == SDPA (MATH) within ATOL; returns the tiled output."""
    want = reference(q, k, v, mask, is_causal)
    naive = naive_attention(q, k, v, mask=mask, is_causal=is_causal)
    tiled = tiled_attention(q, k, v, mask=mask, is_causal=is_causal, **blocks)
    assert_close(naive, want)
    assert_close(tiled, want)
    return tiled


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize(
    "lead, T, block_q, block_k",
    [
        ((), 50, 64, 64),  # one [T, d_head] matrix, a block larger than T
        ((2,), 64, 16, 32),  # [B, T, d_head], T a multiple of both blocks
        ((2, 3), 37, 8, 8),  # [B, h, T, d_head], T not a multiple of the block
        ((1, 2), 33, 1, 7),  # one query per block, ragged key blocks
        ((2, 2), 100, 32, 12),  # tiles that straddle the diagonal unevenly
    ],
)
def test_tiled_matches_naive_and_sdpa(lead, T, block_q, block_k, is_causal, seed):
    q, k, v = qkv(lead, T, seed=10 * seed)
    assert_all_agree(q, k, v, is_causal=is_causal, block_q=block_q, block_k=block_k)


def padding(block: int):
    """Padded sequences: real tokens per sequence 21, 13 and 4; keys past them are masked."""
    keys = torch.arange(21) < torch.tensor([21, 13, 4])[:, None]  # (B, T) True = real key
    return qkv((3, 2), 21, seed=5), keys[:, None, None, :], dict(block_q=block, block_k=block)


def by_query():
    """A mask that depends on the query as well as the key."""
    mask = torch.rand(2, 3, 30, 30, generator=generator(8)) > 0.5  # (B, h, T, T)
    return qkv((2, 3), 30, seed=7), mask, dict(block_q=8, block_k=8)


@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("case", [padding(4), padding(16), by_query()], ids=["pad4", "pad16", "q"])
def test_masks_match(case, is_causal):
    (q, k, v), mask, blocks = case
    assert_all_agree(q, k, v, mask, is_causal, **blocks)


def test_cross_attention_lengths_and_explicit_scale():
    q, (k, v) = randn(2, 9, 8, seed=0), qkv((2,), 23, seed=1)[:2]
    want = F.scaled_dot_product_attention(q, k, v, scale=0.3)  # (B, T_q, hs)
    assert_close(tiled_attention(q, k, v, scale=0.3, block_q=4, block_k=5), want)
    assert_close(naive_attention(q, k, v), reference(q, k, v))


@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
def test_fully_masked_rows_are_zero_and_finite(is_causal):
    q, k, v = qkv((2, 2), 12, seed=3)
    mask = torch.ones(2, 2, 12, 12, dtype=torch.bool)  # (B, h, T, T)
    mask[0] = False  # a whole sequence with nothing to attend to
    mask[1, :, 5] = False  # one query row in each head of the other
    for out in (
        tiled_attention(q, k, v, mask, is_causal, block_q=4, block_k=4),
        naive_attention(q, k, v, mask, is_causal),
    ):
        assert torch.isfinite(out).all()
        assert (out[0] == 0).all() and (out[1, :, 5] == 0).all()
        assert (out[1, :, 6] != 0).any()


def test_late_first_key_with_very_negative_scores():
    """Rows whose only keys sit in the last tile, all scoring -283, still average those keys."""
    q = torch.full((2, 40, 8), 10.0)  # (B, T, hs)
    k = -q  # every score is -800 / sqrt(8) = -283: exp(-283) is 0 in float32, so a running max
    v = randn(2, 40, 8, seed=4)  # stuck at 0 instead of -inf would turn these rows into zeros
    mask = torch.zeros(40, 40, dtype=torch.bool)  # (T, T)
    mask[:, 35:] = True  # only keys 35..39, in the last tile of 8
    out = assert_all_agree(q, k, v, mask, block_q=8, block_k=8)
    assert_close(out, v[:, 35:].mean(dim=1, keepdim=True).expand_as(out))


@pytest.mark.parametrize(
    "shapes, kwargs, message",
    [
        (((8,), (5, 8), (5, 8)), {}, r"q must have shape \[\.\.\., T, d_head\].*got shape \(8,\)"),
        (((5, 8), (5, 4), (5, 4)), {}, r"same width d_head, got q \(5, 8\), k \(5, 4\)"),
        (((5, 8), (6, 8), (5, 8)), {}, r"same length T_k, got k \(6, 8\) and v \(5, 8\)"),
        (((2, 5, 8), (3, 5, 8), (3, 5, 8)), {}, r"same leading dims"),
        (((4, 8), (6, 8), (6, 8)), {"is_causal": True}, r"T_q == T_k, got q \(4, 8\)"),
        (((5, 8),) * 3, {"mask": torch.ones(5, 5)}, r"boolean.*got dtype torch\.float32"),
        (((5, 8),) * 3, {"mask": torch.ones(4, 5, dtype=torch.bool)}, r"broadcast to \(5, 5\)"),
        (((5, 8),) * 3, {"mask": torch.ones(2, 5, 5, dtype=torch.bool)}, r"got shape \(2, 5, 5\)"),
        (((4, 8),) * 3, {"dtype": torch.int64}, r"floating-point dtype, got q torch\.int64"),
    ],
)
@pytest.mark.parametrize("attend", [naive_attention, tiled_attention], ids=["naive", "tiled"])
def test_bad_input_is_a_value_error(attend, shapes, kwargs, message):
    kwargs = dict(kwargs)  # one dict for both functions: never popped in place
    dtype = kwargs.pop("dtype", torch.float32)
    q, k, v = (randn(*shape, seed=i).to(dtype) for i, shape in enumerate(shapes))
    with pytest.raises(ValueError, match=message):
        attend(q, k, v, **kwargs)


@pytest.mark.parametrize("blocks", [{"block_q": 0}, {"block_k": 2.5}, {"block_q": True}])
def test_bad_block_size_is_a_value_error(blocks):
    name, value = next(iter(blocks.items()))
    with pytest.raises(ValueError, match=rf"{name} must be a positive int, got {value!r}"):
        tiled_attention(*qkv((), 6), **blocks)


@pytest.mark.parametrize("doc", bench_attention.quoted_in(), ids=lambda p: p.parent.name)
def test_readme_block_is_the_rendering_of_results_json(doc):
    results = json.loads(bench_attention.RESULTS.read_text(encoding="utf-8"))
    block = read_block(doc, bench_attention.BLOCK)
    assert block == bench_attention.render_block(results)
    assert results["env"] in block and results["cpu"] in block  # names the recording machine
    assert [run["T"] for run in results["runs"]] == list(bench_attention.FULL_T)  # every length
    assert f"threads  {results['config']['threads']}" in block  # the count every method ran at


def _run(T, tiled_s, sdpa_s, tiled_bytes=1, naive_bytes=1):
    """A recorded run at length T with the given per-round seconds of tiled and SDPA."""
    seconds = {"naive": [1.0] * len(tiled_s), "tiled": tiled_s, "sdpa": sdpa_s}
    peak = {"naive": naive_bytes, "tiled": tiled_bytes, "sdpa": 1}
    return {"T": T, "seconds": seconds, "peak_extra_bytes": peak}


def test_goal_lines_take_ratios_per_round_and_say_met_or_not_met():
    # Round 1 is twice as slow for both methods (a busy moment): per round the ratio is 1.5 both
    # times. The ratio of the two medians would mix rounds: median(0.3, 0.6) / median(0.2, 0.4).
    run = _run(2048, [0.3, 0.6, 0.3], [0.2, 0.4, 0.2])
    assert bench_attention.ratios(run, "tiled", "sdpa") == pytest.approx([1.5, 1.5, 1.5])
    good = bench_attention.goals({"runs": [run, _run(4096, [1], [1], 10, 100)]})
    bad = bench_attention.goals({"runs": [_run(2048, [0.5], [0.2]), _run(4096, [1], [1], 20, 100)]})
    assert "**1.50** (quartiles 1.50 to 1.50, range 1.50 to 1.50 over 3 rounds" in good[0]
    assert "= 1/10 " in good[1] and "**2.50**" in bad[0]
    assert all(line.endswith(": met)") for line in good), good
    assert all(line.endswith(": NOT met)") for line in bad), bad


def test_warnings_name_a_wide_spread_and_a_high_load():
    def results(tiled_s, start, end):
        runs = [_run(2048, tiled_s, [0.2] * len(tiled_s))]
        loads = {"load_average_at_start": start, "load_average_at_end": end}
        return {"runs": runs, "cores": 2, "config": {"threads": 1}} | loads

    steady = [0.30, 0.31, 0.30]
    assert bench_attention.warnings(results(steady, 0.2, 1.9)) == []  # 1.9 - our 1 thread <= 1
    assert bench_attention.warnings(results(steady, None, None)) == []  # Windows: no load average
    busy = bench_attention.warnings(results(steady, 2.5, 2.5))
    assert [line.split(" on ")[0] for line in busy] == [
        "load average 2.50",
        "load average 2.50 (1 of it this run's own)",
    ]
    found = bench_attention.warnings(results([0.3, 0.6, 0.3, 0.6], 0.2, 1.0))
    assert found == [
        "T = 2048: quartiles more than 10% of the median apart for tiled (67%), tiled / SDPA (67%)"
    ]


def test_rounds_are_interleaved_and_one_thread_reads_its_own_cpu_clock():
    order = []
    cells = {"a": lambda: None, "b": lambda: None}
    seconds = timing.interleaved(
        cells, 2, min_run_time=0.001, done=lambda r, k: order.append((r, k))
    )
    assert order == [(0, "a"), (0, "b"), (1, "a"), (1, "b")]  # round 0 times both before round 1
    assert all(len(s) == 2 and min(s) >= 0 for s in seconds.values())
    windows = sys.platform == "win32"  # its thread clock moves in ~15 ms steps: wall time there
    assert timing.clock(1)[0] is (time.perf_counter if windows else time.thread_time)
    assert timing.clock(2)[0] is time.perf_counter  # other threads' work: only the wall clock


def test_torchs_cuda_home_warning_is_dropped_once_something_is_timed():
    """cpp_extension, which torch.utils.benchmark imports, warns of CUDA_HOME on a CPU-only machine
    (Step 6 printed it above its MFU): nothing is compiled, so only its errors are kept."""
    timing._benchmark()
    logger = logging.getLogger("torch.utils.cpp_extension")
    assert not logger.isEnabledFor(logging.WARNING) and logger.isEnabledFor(logging.ERROR)


def test_quick_bench_runs_end_to_end(tmp_path, capsys):
    readme_before = bench_attention.README.read_bytes()
    assert bench_attention.main(["--quick", "--out", str(tmp_path)]) == 0
    png = tmp_path / "attention.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out, err = capsys.readouterr()
    assert "threads  1" in out and "| T |" in out and "Fitted exponent" in out
    assert "at **1 thread**" in out and "num_threads=1" in out and timing.clock(1)[1] in out
    # stderr is not a terminal here: no carriage-return progress, one line per finished round
    assert "\r" not in err
    rounds = [line for line in err.splitlines() if line.startswith("round ")]
    assert [line.split(" timed")[0] for line in rounds] == ["round 1/2", "round 2/2"]
    assert bench_attention.README.read_bytes() == readme_before  # only --write-docs writes docs


@pytest.mark.parametrize(
    "argv, said",
    [(["--threads", "0"], "must be at least 1, got 0"), (["--write-docs"], "records the full run")],
)
def test_a_bad_option_is_refused(argv, said, capsys):
    with pytest.raises(SystemExit):
        bench_attention.main(["--quick", *argv])
    assert said in capsys.readouterr().err
