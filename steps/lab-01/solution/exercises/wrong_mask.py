"""Exercise: a causal mask that passes every shape check, and the behavioural test that catches it."""

import torch

from common.seeding import randn

from ..attention import causal_mask, scaled_dot_product_attention


def buggy_causal_mask(seq_len: int) -> torch.Tensor:
    """The exhibit: a [T, T] bool mask that passes every shape check (read it, do not fix it)."""
    return causal_mask(seq_len).T  # (T, T) the transpose of the lower triangle: keys j >= t


def attention_weights(mask: torch.Tensor, d_head: int = 8, seed: int = 0) -> torch.Tensor:
    """Attention weights [1, T, T] of seeded q, k, v under `mask` [T, T] (what the diagnostic reads)."""
    T = mask.shape[-1]
    q, k, v = (randn(1, T, d_head, seed=seed + i) for i in range(3))  # each (1, T, d_head)
    _, weights = scaled_dot_product_attention(q, k, v, mask)  # (1, T, T)
    return weights


def future_leak(weights: torch.Tensor) -> tuple[int, float]:
    """(count, largest) of the non-zero weights above the diagonal: a query looking at a later key."""
    # BEGIN SOLUTION TODO(lab-01 task 7: future_leak)
    # CONTRACT: return (count, largest) for weights [..., T_q, T_k]: count, an int, is how many
    #   entries with key j later than query i (j > i) are not exactly 0, over every leading dim;
    #   largest, a float, is the biggest of them in size, 0.0 when there is none. Lesson 5, why
    #   causality is exact. The trap: a tiny leak: no tolerance, any non-zero weight is a leak,
    #   and the diagonal (j == i) is not the future.
    # HINT 1: Build a bool picture of "the future", True strictly above the diagonal, pick those
    #   weights out of every matrix of the batch at once, and keep the ones that are not 0.
    # HINT 2: torch.ones(T_q, T_k, dtype=torch.bool).triu(diagonal=1) is the future; boolean
    #   indexing weights[..., future] flattens the picked entries of every leading dim. The
    #   trap: triu's default diagonal=0 would count the diagonal, and .max() of an empty tensor
    #   raises.
    # HINT 3: future = torch.ones(___, ___, dtype=torch.bool).triu(diagonal=___);
    #   above = weights[..., ___]; leaked = above[above != 0];
    #   return leaked.numel(), (float(leaked.abs().max()) if ___ else 0.0)
    T_q, T_k = weights.shape[-2:]
    future = torch.ones(T_q, T_k, dtype=torch.bool).triu(diagonal=1)  # (T, T) True where j > t
    above = weights[..., future]  # (..., T, T) -> (..., n_above) the weights on later keys
    leaked = above[above != 0]  # (n_leaked,) exact zeros are what a correct mask gives
    return leaked.numel(), float(leaked.abs().max()) if leaked.numel() else 0.0
    # END SOLUTION


def assert_no_future_leak(weights: torch.Tensor, label: str) -> None:
    """Raise AssertionError naming `label` if any query puts weight on a later key."""
    count, largest = future_leak(weights)
    if count:
        raise AssertionError(
            f"{label}: {count} future-token weights are non-zero (largest {largest:.6f}); "
            "query t may only attend to keys j <= t"
        )
