"""The handouts' broken masks, for test_wrong_mask.py: boolean (T, T), or (B, T, T) with padding;
True = may attend."""

import torch


def triu_mask(seq_len: int) -> torch.Tensor:
    """Upper triangle: query i sees keys j >= i, the future, and none of its past."""
    return torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool))  # (T, T)


def missing_mask(seq_len: int) -> torch.Tensor:
    """No mask at all: every query sees every key."""
    return torch.ones(seq_len, seq_len, dtype=torch.bool)  # (T, T)


def inverted_mask(seq_len: int) -> torch.Tensor:
    """The causal mask negated: True where False was meant, so only the strict future is kept."""
    return ~torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool))  # (T, T)


def or_padding(causal: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
    """Padding OR-ed with the causal mask: a real key in the future becomes visible."""
    return causal | padding[:, None, :]  # (T, T) | (B, 1, T) -> (B, T, T)
