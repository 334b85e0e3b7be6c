"""Exercise: a causal mask that passes every shape check and still lets queries see the future."""

import torch

from common.seeding import randn

from ..attention import scaled_dot_product_attention


def buggy_causal_mask(seq_len: int) -> torch.Tensor:
    """The exercise's [T, T] causal mask: it passes every shape check. Run the exercise, then fix it."""
    return torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool))  # (T, T)


def attention_weights(mask: torch.Tensor, d_head: int = 8, seed: int = 0) -> torch.Tensor:
    """Attention weights [1, T, T] of seeded q, k, v under `mask` [T, T] (what the diagnostic reads)."""
    T = mask.shape[-1]
    q, k, v = (randn(1, T, d_head, seed=seed + i) for i in range(3))  # each (1, T, d_head)
    _, weights = scaled_dot_product_attention(q, k, v, mask)  # (1, T, T)
    return weights


def future_leak(weights: torch.Tensor) -> tuple[int, float]:
    """(count, largest) of the non-zero weights above the diagonal: a query looking at a later key."""
    T_q, T_k = weights.shape[-2:]
    future = torch.ones(T_q, T_k, dtype=torch.bool).triu(diagonal=1)  # (T, T) True where j > t
    above = weights[..., future]  # (..., T, T) -> (..., n_above) the weights on later keys
    leaked = above[above != 0]  # (n_leaked,)
    return leaked.numel(), float(leaked.abs().max()) if leaked.numel() else 0.0


def assert_no_future_leak(weights: torch.Tensor, label: str) -> None:
    """Raise AssertionError naming `label` if any query puts weight on a later key."""
    count, largest = future_leak(weights)
    if count:
        raise AssertionError(
            f"{label}: {count} future-token weights are non-zero (largest {largest:.6f}); "
            "query t may only attend to keys j <= t"
        )
