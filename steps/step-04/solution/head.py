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
        # BEGIN SOLUTION TODO(step-04 4.1)
        # self.check_input(x); B, T, d = x.shape; q, k, v = self.query(x), self.key(x),
        # self.value(x); scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5; scores =
        # scores.masked_fill(self.tril[:T, :T] == 0, float('-inf')); A = F.softmax(scores,
        # dim=-1); self.A = A.detach(); return A @ v.
        self.check_input(x)
        B, T, d = x.shape  # x: (B, T, d)
        q, k, v = self.query(x), self.key(x), self.value(x)  # (B, T, d_head) each
        scores = q @ k.transpose(-2, -1)  # (B, T, d_head) @ (B, d_head, T) -> (B, T, T)
        scores = scores / k.shape[-1] ** 0.5  # (B, T, T), variance d_head -> 1
        scores = scores.masked_fill(self.tril[:T, :T] == 0, float("-inf"))  # (B, T, T), j > i
        A = F.softmax(scores, dim=-1)  # (B, T, T), each row sums to 1
        self.A = A.detach()  # (B, T, T)
        return A @ v  # (B, T, T) @ (B, T, d_head) -> (B, T, d_head)
        # END SOLUTION


def attention_scores(q, k, scale=True):
    """Unmasked scores q k^T, divided by sqrt(d_k) if `scale`: (B, T, d_k), (B, T, d_k) -> (B, T, T)."""
    # BEGIN SOLUTION TODO(step-04 4.2.4)
    # scores = q @ k.transpose(-2, -1); return scores / k.shape[-1] ** 0.5 if scale is true, else
    # scores unscaled.
    scores = q @ k.transpose(-2, -1)  # (B, T, d_k) @ (B, d_k, T) -> (B, T, T)
    return scores / k.shape[-1] ** 0.5 if scale else scores  # (B, T, T)
    # END SOLUTION


def smoothing_weights(T, s):
    """Causal attention over positions only, scores -(i-j)^2 / (2 s^2): a (T, T) matrix."""
    if isinstance(T, bool) or not isinstance(T, int) or T < 1:
        raise ValueError(f"T must be a positive int, got {T!r}")
    if isinstance(s, bool) or not isinstance(s, int | float) or not 0 < s < math.inf:
        raise ValueError(f"the bandwidth s must be a finite number > 0, got {s!r}")
    # BEGIN SOLUTION TODO(step-04 4.4)
    # scores[i, j] = -(i - j)**2 / (2 * s**2) for positions i, j < T; -inf where j > i; softmax
    # over the last axis
    pos = torch.arange(T, dtype=torch.float32)  # (T,)
    scores = -((pos[:, None] - pos[None, :]) ** 2) / (2 * s**2)  # (T, 1) - (1, T) -> (T, T)
    scores = scores.masked_fill(torch.tril(torch.ones(T, T)) == 0, float("-inf"))  # (T, T)
    return F.softmax(scores, dim=-1)  # (T, T)
    # END SOLUTION


def online_softmax(scores):
    """Softmax over the last axis, one key at a time; ValueError if a row's first score is not finite."""
    # A row with no allowed key (all -inf) is refused, not turned into zeros: its softmax is 0 / 0.
    if scores.dim() < 1 or scores.shape[-1] < 1:
        raise ValueError(f"scores must have at least one key, got shape {tuple(scores.shape)}")
    bad = ~torch.isfinite(scores[..., 0])  # (...,) rows whose first key is masked, inf or nan
    if bad.any():
        raise ValueError(
            f"every row's first score must be finite, got {int(bad.sum())} of {bad.numel()} rows "
            "where it is not (a row with no allowed key has no softmax)"
        )
    # BEGIN SOLUTION TODO(step-04 optional 1: online_softmax)
    # m = torch.full_like(scores[..., 0], float('-inf')); s = torch.zeros_like(m); for each key j:
    # m_new = torch.maximum(m, scores[..., j]); s = s * torch.exp(m - m_new) + torch.exp(scores[...,
    # j] - m_new); m = m_new; finally return torch.exp(scores - m[..., None]) / s[..., None].
    m = scores.new_full(scores.shape[:-1], float("-inf"))  # (...,) largest score seen so far
    s = scores.new_zeros(scores.shape[:-1])  # (...,) sum of exp(score - m) so far
    for j in range(scores.shape[-1]):
        m_new = torch.maximum(m, scores[..., j])  # (...,)
        s = s * torch.exp(m - m_new) + torch.exp(scores[..., j] - m_new)  # (...,) rescale, add
        m = m_new
    return torch.exp(scores - m[..., None]) / s[..., None]  # (..., T)
    # END SOLUTION


def online_attention(q, k, v):
    """Causal scaled attention, one key at a time, never building the (T, T) matrix."""
    # BEGIN SOLUTION TODO(step-04 optional 2: online_attention)
    # as online_softmax (m, s shaped like q[..., 0]), plus acc = torch.zeros_like(v); per key j:
    # score_j = (q @ k[..., j, :, None]).squeeze(-1) / math.sqrt(q.shape[-1]), -inf where
    # torch.arange(q.shape[-2]) < j; acc = acc * torch.exp(m - m_new)[..., None] + torch.exp(score_j
    # - m_new)[..., None] * v[..., j, None, :] before m = m_new; return acc / s[..., None].
    B, T, d_k = q.shape  # q, k: (B, T, d_k); v: (B, T, d_v)
    pos = torch.arange(T)  # (T,)
    m = q.new_full((B, T), float("-inf"))  # (B, T) running max of each query's scores
    s = q.new_zeros(B, T)  # (B, T) running sum of exp(score - m)
    acc = q.new_zeros(B, T, v.shape[-1])  # (B, T, d_v) running sum of exp(score - m) * v_j
    for j in range(T):
        score = (q @ k[:, j, :, None])[..., 0] / d_k**0.5  # (B, T, d_k) @ (B, d_k, 1) -> (B, T)
        score = score.masked_fill(pos < j, float("-inf"))  # (B, T), query i < j must not see key j
        m_new = torch.maximum(m, score)  # (B, T)
        rescale = torch.exp(m - m_new)  # (B, T) shrinks what was summed under the old max
        w = torch.exp(score - m_new)  # (B, T) weight of key j
        s = s * rescale + w  # (B, T)
        acc = acc * rescale[..., None] + w[..., None] * v[:, j, None, :]  # (B, T, d_v)
        m = m_new
    return acc / s[..., None]  # (B, T, d_v)
    # END SOLUTION
