"""Step 4: one head of causal self-attention, plus the small functions its experiments need."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Head(nn.Module):
    """One head of causal self-attention: (B, T, d) -> (B, T, d_head)."""

    def __init__(self, d, d_head, T_max):
        super().__init__()
        for name, size in (("d", d), ("d_head", d_head), ("T_max", T_max)):
            if isinstance(size, bool) or not isinstance(size, int) or size < 1:
                raise ValueError(f"{name} must be a positive int, got {size!r}")
        self.d, self.d_head, self.T_max = d, d_head, T_max
        self.key = nn.Linear(d, d_head, bias=False)  # (B, T, d) -> (B, T, d_head)
        self.query = nn.Linear(d, d_head, bias=False)  # (B, T, d) -> (B, T, d_head)
        self.value = nn.Linear(d, d_head, bias=False)  # (B, T, d) -> (B, T, d_head)
        # causal mask, built once; a buffer moves with the module but is not trained
        self.register_buffer("tril", torch.tril(torch.ones(T_max, T_max)))  # (T_max, T_max)
        self.A = None  # the last attention matrix, (B, T, T), kept for plotting

    def check_input(self, x):
        """Raise ValueError unless x is (B, T, d), of the weights' dtype, with 1 <= T <= T_max."""
        if not isinstance(x, torch.Tensor) or x.dim() != 3:
            got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(
                f"x must have shape (B, T, d) = 3 dims, got {got}; add a batch axis with x[None]"
            )
        dtype = self.query.weight.dtype
        if x.dtype != dtype:
            raise ValueError(
                f"x has dtype {x.dtype}, but this head's weights are {dtype}; use x.to({dtype})"
            )
        B, T, d = x.shape
        if d != self.d:
            raise ValueError(f"x has width d={d}, but this head was built for d={self.d}")
        if T == 0:
            raise ValueError("x has sequence length T=0; a head needs at least one position")
        if T > self.T_max:
            raise ValueError(f"sequence length T={T} exceeds T_max={self.T_max}")

    def forward(self, x):
        """Causal attention of every position over itself and the positions before it."""
        self.check_input(x)  # given: refuses x that is not (B, T, d) with 1 <= T <= T_max
        raise NotImplementedError(
            "TODO(step-04 4.1: Head.forward): return A @ v of shape (B, T, d_head) for x (B, T, d), and keep the attention matrix A (B, T, T), detached, in self.A. Type in the forward of the lecture's Head, the code block under 4.1 of the handout, with a shape comment on every line. The trap: the mask fills with -inf before the softmax, over the last axis."
        )


def attention_scores(q, k, scale=True):
    """Unmasked scores q k^T, divided by sqrt(d_k) if `scale`: (B, T, d_k), (B, T, d_k) -> (B, T, T)."""
    scores = q @ k.transpose(-2, -1)  # (B, T, d_k) @ (B, d_k, T) -> (B, T, T)
    return scores / k.shape[-1] ** 0.5 if scale else scores  # (B, T, T)


def score_stats(q, k):
    """The scale check: (raw std, scaled std, mean row max raw, mean row max scaled) of q k^T."""
    raise NotImplementedError(
        "TODO(step-04 4.2.4: score_stats): return four floats for q, k (B, T, d_k) with iid N(0, 1) entries: the standard deviation of all raw scores, the same for the scores divided by the square root of d_k, and, for each, the largest softmax weight of a row averaged over all B * T rows (every key competes: no mask). Lecture 4, the variance lemma (4.2 part 4, the scale check). The trap: the axis: the softmax and its largest weight run over the keys, the last axis."
    )


def smoothing_weights(T, s):
    """Causal attention over positions only, scores -(i-j)^2 / (2 s^2): a (T, T) matrix."""
    if isinstance(T, bool) or not isinstance(T, int) or T < 1:
        raise ValueError(f"T must be a positive int, got {T!r}")
    if isinstance(s, bool) or not isinstance(s, int | float) or not 0 < s < math.inf:
        raise ValueError(f"the bandwidth s must be a finite number > 0, got {s!r}")
    raise NotImplementedError(
        "TODO(step-04 4.4: smoothing_weights): return A (T, T), a causal attention matrix that looks only at positions: row i is the softmax over keys j <= i of the Gaussian kernel score minus (i - j) squared over (2 s squared), and 0 for j > i. Lecture 4, attention as Nadaraya-Watson smoothing (4.4). The trap: the mask, as in 4.1: blocked keys get -inf before the softmax, not 0 after."
    )


def online_softmax(scores):
    """Softmax over the last axis, one key at a time; ValueError if a row's first score is not finite."""
    # A row with no allowed key (all -inf) is refused, not turned into zeros: its softmax is 0 / 0.
    if scores.dim() < 1 or scores.size(-1) < 1:
        raise ValueError(f"scores must have at least one key, got shape {tuple(scores.size())}")
    bad = ~torch.isfinite(scores.select(-1, 0))  # (...,) rows whose first key is masked, inf, nan
    if bad.any():
        raise ValueError(
            f"every row's first score must be finite, got {int(bad.sum())} of {bad.numel()} rows "
            "where it is not (a row with no allowed key has no softmax)"
        )
    raise NotImplementedError(
        "TODO(step-04 optional 1: online_softmax): return the softmax over the last axis of scores (..., T), the same as F.softmax(scores, dim=-1) to float32 rounding, computed in one pass over the keys, left to right, carrying per row only the largest score so far and a running sum. Going further, online softmax. The trap: the rescale: when the running max grows, the sum so far must shrink by the exponential of old max minus new max."
    )


def online_attention(q, k, v):
    """Causal scaled attention, one key at a time, never building the (T, T) matrix."""
    raise NotImplementedError(
        "TODO(step-04 optional 2: online_attention): return causal scaled attention (B, T, d_v) for q, k (B, T, d_k) and v (B, T, d_v), the same as your Head's A @ v to float32 rounding, visiting one key at a time and never building a (T, T) matrix. Going further, online softmax (the heart of FlashAttention). The trap: the rescale, applied to the running sum of values too, and the causal mask: key j is invisible to queries before j."
    )
