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
        # BEGIN SOLUTION TODO(step-04 4.1: Head.forward)
        # CONTRACT: return A @ v of shape (B, T, d_head) for x (B, T, d), and keep the attention
        #   matrix A (B, T, T), detached, in self.A. Type in the forward of the lecture's Head, the
        #   code block under 4.1 of the handout, with a shape comment on every line. The trap: the
        #   mask fills with -inf before the softmax, over the last axis.
        # HINT 1: The handout's 4.1 code block is the answer: read it line by line, say what each
        #   line computes and its shape, then type it.
        # HINT 2: self.query, self.key, self.value; q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5;
        #   masked_fill(self.tril[:T, :T] == 0, float("-inf")); F.softmax(..., dim=-1). The
        #   trap: self.tril is T_max x T_max, so cut it to [:T, :T].
        # HINT 3: q, k, v = ___; scores = q @ k.transpose(-2, -1) / ___;
        #   scores = scores.masked_fill(self.tril[:T, :T] == 0, ___);
        #   A = F.softmax(scores, dim=___); self.A = A.detach(); return A @ ___
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
    scores = q @ k.transpose(-2, -1)  # (B, T, d_k) @ (B, d_k, T) -> (B, T, T)
    return scores / k.shape[-1] ** 0.5 if scale else scores  # (B, T, T)


def score_stats(q, k):
    """The scale check: (raw std, scaled std, mean row max raw, mean row max scaled) of q k^T."""
    # BEGIN SOLUTION TODO(step-04 4.2.4: score_stats)
    # CONTRACT: return four floats for q, k (B, T, d_k) with iid N(0, 1) entries: the standard
    #   deviation of all raw scores, the same for the scores divided by the square root of d_k,
    #   and, for each, the largest softmax weight of a row averaged over all B * T rows (every
    #   key competes: no mask). Lecture 4, the variance lemma (4.2 part 4, the scale check). The
    #   trap: the axis: the softmax and its largest weight run over the keys, the last axis.
    # HINT 1: Compute both kinds of scores with the given attention_scores, measure their spread,
    #   then turn each into probabilities and ask how close each row is to one-hot.
    # HINT 2: attention_scores(q, k, scale=False) and attention_scores(q, k); tensor.std();
    #   F.softmax(..., dim=-1) and .amax(dim=-1) for each row's largest weight, then .mean();
    #   .item() turns a 0-dim tensor into a float. The trap: amax over dim=-2 would ask about
    #   columns.
    # HINT 3: raw = attention_scores(q, k, scale=___); scaled = attention_scores(q, k);
    #   top_raw = F.softmax(raw, dim=___).amax(dim=___); top_scaled = ...;
    #   return raw.std().item(), ___, top_raw.mean().item(), ___
    raw = attention_scores(q, k, scale=False)  # (B, T, T) variance d_k, by the lemma
    scaled = attention_scores(q, k)  # (B, T, T) variance 1 whatever d_k is
    top_raw = F.softmax(raw, dim=-1).amax(dim=-1)  # (B, T) near 1: a one-hot row
    top_scaled = F.softmax(scaled, dim=-1).amax(dim=-1)  # (B, T)
    return raw.std().item(), scaled.std().item(), top_raw.mean().item(), top_scaled.mean().item()
    # END SOLUTION


def smoothing_weights(T, s):
    """Causal attention over positions only, scores -(i-j)^2 / (2 s^2): a (T, T) matrix."""
    if isinstance(T, bool) or not isinstance(T, int) or T < 1:
        raise ValueError(f"T must be a positive int, got {T!r}")
    if isinstance(s, bool) or not isinstance(s, int | float) or not 0 < s < math.inf:
        raise ValueError(f"the bandwidth s must be a finite number > 0, got {s!r}")
    # BEGIN SOLUTION TODO(step-04 4.4: smoothing_weights)
    # CONTRACT: return A (T, T), a causal attention matrix that looks only at positions: row i is
    #   the softmax over keys j <= i of the Gaussian kernel score minus (i - j) squared over
    #   (2 s squared), and 0 for j > i. Lecture 4, attention as Nadaraya-Watson smoothing (4.4).
    #   The trap: the mask, as in 4.1: blocked keys get -inf before the softmax, not 0 after.
    # HINT 1: Make a (T, T) table of position differences i - j by broadcasting a column of
    #   positions against a row of them, turn it into kernel scores, mask, softmax.
    # HINT 2: torch.arange(T, dtype=torch.float32); pos[:, None] - pos[None, :]; torch.where
    #   keeps a score where the difference is >= 0 and puts -math.inf where a key comes after its
    #   query; F.softmax over the keys. The trap: an integer arange makes the scores integers.
    # HINT 3: pos = torch.arange(T, dtype=___); diff = pos[:, None] - ___;
    #   scores = -(diff**2) / (2 * ___); scores = torch.where(diff ___ 0, scores, ___);
    #   return F.softmax(scores, dim=___)
    pos = torch.arange(T, dtype=torch.float32)  # (T,)
    diff = pos[:, None] - pos[None, :]  # (T, 1) - (1, T) -> (T, T): i - j
    scores = -(diff**2) / (2 * s**2)  # (T, T) the Gaussian kernel on the distance
    # the differences already say which keys lie in the future (j > i): the mask tril would give
    scores = torch.where(diff >= 0, scores, -math.inf)  # (T, T)
    return F.softmax(scores, dim=-1)  # (T, T)
    # END SOLUTION


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
    # BEGIN SOLUTION TODO(step-04 optional 1: online_softmax)
    # CONTRACT: return the softmax over the last axis of scores (..., T), the same as
    #   F.softmax(scores, dim=-1) to float32 rounding, computed in one pass over the keys, left to
    #   right, carrying per row only the largest score so far and a running sum. Going further,
    #   online softmax. The trap: the rescale: when the running max grows, the sum so far must
    #   shrink by the exponential of old max minus new max.
    # HINT 1: Keep two numbers per row. Each new key may raise the max; if it does, everything
    #   summed so far was measured against the old max and must be rescaled before the new term
    #   is added. At the end one division gives every weight.
    # HINT 2: scores.new_full(shape, float("-inf")) and scores.new_zeros(shape) start m and s;
    #   torch.maximum and torch.exp in the loop. The trap: starting m at 0 underflows rows of
    #   scores near -1000.
    # HINT 3: for j in range(___): m_new = torch.maximum(m, scores[..., j]);
    #   s = s * torch.exp(___) + torch.exp(scores[..., j] - ___); m = m_new;
    #   return torch.exp(scores - m[..., None]) / ___
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
    # CONTRACT: return causal scaled attention (B, T, d_v) for q, k (B, T, d_k) and v (B, T,
    #   d_v), the same as your Head's A @ v to float32 rounding, visiting one key at a time and
    #   never building a (T, T) matrix. Going further, online softmax (the heart of
    #   FlashAttention). The trap: the rescale, applied to the running sum of values too, and
    #   the causal mask: key j is invisible to queries before j.
    # HINT 1: Online softmax, with a third running quantity: the weighted sum of the values
    #   seen so far, rescaled whenever the max grows. Divide by the running sum at the end.
    # HINT 2: per key j, the scores of all queries against key j are (q @ k[:, j, :, None])
    #   with the last axis dropped, divided by d_k ** 0.5, and -inf where the query position is
    #   below j. The trap: forgetting to rescale the accumulator.
    # HINT 3: m, s, acc start at -inf, 0, 0; for j: score = ___; m_new = torch.maximum(m, score);
    #   rescale = torch.exp(m - m_new); w = torch.exp(score - m_new); s = s * rescale + w;
    #   acc = acc * rescale[..., None] + w[..., None] * ___; m = m_new; return acc / ___
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
