"""Positions, dropout and the KV cache: print what mean_pool makes of a small input."""

import torch

from common.docs import exact, markdown_table
from common.loader import load
from common.run import record

STEP = "lab-02"


def pooled_block(pooling) -> str:
    """The handout's table: mean_pool of arange(2 * 3 * 4) as [2, 3, 4]."""
    x = torch.arange(2 * 3 * 4, dtype=torch.float32).reshape(2, 3, 4)  # (B, T, d)
    pooled = pooling.mean_pool(x)  # (B, d)
    rows = [[b, " ".join(f"{v:g}" for v in row.tolist())] for b, row in enumerate(pooled)]
    return markdown_table(["sequence", "mean over its 3 positions"], rows)


def main(args) -> int:
    """`pixi run lab-02`: the table (common.run parses the options)."""
    block = pooled_block(load(STEP, "pooling", args.impl))
    print(block)
    record(args, {"lab-02-pooled": block})
    return 0


def docs_blocks() -> dict:
    """The handout's block from a fresh reference run: halves of integers, so every digit is exact."""
    return {"lab-02-pooled": (pooled_block(load(STEP, "pooling", "solution")), exact)}
