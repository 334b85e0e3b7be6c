"""One timing protocol for the benchmark and Step 4's cost: torch.utils.benchmark, fixed threads."""

import logging
import os
import sys
import time
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager

import numpy as np
import torch

SPREAD_LIMIT = 0.10  # warn when a cell's quartiles are more than 10% of its median apart
LOAD_LIMIT = 0.5  # warn when the 1-minute load average exceeds half the logical cores


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run the block with torch's intra-op thread count set to n, then restore it."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def clock(threads: int) -> tuple[Callable[[], float], str]:
    """The clock to time with at this thread count, and its name for the record."""
    # On one thread the calling thread's CPU time is the call's cost, without the waits for a core
    # another program takes; other threads' work only the wall clock sees. Windows' thread clock
    # moves in steps of about 15 ms, too coarse for short calls.
    if threads == 1 and sys.platform != "win32":
        return time.thread_time, "CPU time of the calling thread"
    return time.perf_counter, "wall-clock time"


def _benchmark():
    """torch.utils.benchmark, imported when something is timed (a check that times nothing skips it)."""
    # cpp_extension, which it imports, warns of a CUDA toolkit without a CUDA runtime: noise here
    logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)
    from torch.utils import benchmark

    return benchmark


def seconds_per_call(fn: Callable[[], object], threads: int, min_run_time: float) -> float:
    """Median seconds per call of fn() over the blocks of one Timer.blocked_autorange."""
    timer = _benchmark().Timer(
        "fn()", globals={"fn": fn}, num_threads=threads, timer=clock(threads)[0]
    )
    return timer.blocked_autorange(min_run_time=min_run_time).median


def interleaved(
    cells: dict[Hashable, Callable[[], object]],
    rounds: int,
    threads: int = 1,
    min_run_time: float = 0.1,
    done: Callable[[int, Hashable], None] | None = None,
) -> dict[Hashable, list[float]]:
    """Seconds per call of every cell, round by round: round r times all cells before round r+1."""
    # a busy moment slows one round of every cell, and a ratio within a round compares like with like
    seconds = {key: [] for key in cells}
    for r in range(rounds):
        for key, fn in cells.items():
            seconds[key].append(seconds_per_call(fn, threads, min_run_time))
            if done is not None:
                done(r, key)
    return seconds


def matmul_peak(threads: int, n: int = 512, min_run_time: float = 0.3) -> float:
    """FLOPs per CPU-second (not wall: no waits for a core) of an n x n float32 matmul on `threads`."""
    from common.seeding import generator

    a, b = torch.randn(n, n, generator=generator(0)), torch.randn(n, n, generator=generator(1))
    timer = _benchmark().Timer(
        "a @ b", globals=dict(a=a, b=b), num_threads=threads, timer=time.process_time
    )
    return 2 * n**3 / timer.blocked_autorange(min_run_time=min_run_time).median


def seconds(value: float) -> str:
    """Seconds as a run prints them: whole ones from ten up, two digits below (a --quick run's are
    not "0")."""
    return f"{value:.0f}" if value >= 9.5 else f"{value:.2g}"


def quartiles(values: list[float]) -> tuple[float, float, float]:
    """(first quartile, median, third quartile) of values, linearly interpolated."""
    q1, med, q3 = np.percentile(values, [25, 50, 75])
    return float(q1), float(med), float(q3)


def medians_and_bars(samples: list[list[float]], scale: float = 1.0):
    """Medians of each sample x scale, and matplotlib's yerr [below, above] reaching its quartiles."""
    q1, med, q3 = (
        np.array(column) * scale for column in zip(*map(quartiles, samples), strict=True)
    )
    return med, np.stack([med - q1, q3 - med])  # (n,), (2, n)


def relative_spread(values: list[float]) -> float:
    """Interquartile range over median: 0.1 means the middle half spans 10% of the median."""
    q1, med, q3 = quartiles(values)
    return (q3 - q1) / med


def fit_exponent(xs: list[float], ys: list[float]) -> float:
    """p in y ~ x^p: the slope of a least-squares line through (log x, log y)."""
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def load_average() -> float | None:
    """The 1-minute load average, or None where the OS has none (Windows)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def load_warning(load: float | None, cores: int, when: str, own: int = 0) -> str | None:
    """A warning if the load average, less `own` busy threads of ours, says others were busy."""
    # the 1-minute average lags: at the end it also counts this run's own threads, hence `own`
    if load is None or load - own <= LOAD_LIMIT * cores:
        return None
    ours = f" ({own} of it this run's own)" if own else ""
    return (
        f"load average {load:.2f}{ours} on {cores} logical cores {when}: other programs were "
        "busy; timings taken beside them are slower and noisier"
    )
