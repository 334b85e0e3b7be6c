"""Two attentions with one interface: naive (the whole T x T matrix) and tiled (online softmax)."""

import math

import torch

from common.loader import reference

# The input checks are the public ones lab-01 gives its students (given code, the same in starter
# and solution), reached through common.loader.reference: a change to them reaches this file too.
_lab01 = reference("lab-01", "attention")

# Conventions of lab-01: q, k, v are [..., T, d_head] (d_head in the shape comments; the leading dims
# are flattened to N inside the tiled loop); a mask is boolean, broadcasts to [..., T_q, T_k] and
# True means "this query may attend to this key"; a query that may attend to nothing outputs zeros.

LOG2_E = 1.0 / math.log(2.0)  # log2(e)


def _check_inputs(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool) -> None:
    """lab-01's checks of q, k, v, and a causal mask's need for as many queries as keys."""
    _lab01.check_qkv(q, k, v)
    if is_causal and q.shape[-2] != k.shape[-2]:
        raise ValueError(
            f"is_causal needs T_q == T_k, got q {tuple(q.shape)} and k {tuple(k.shape)}"
        )


def naive_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    is_causal: bool = False,
) -> torch.Tensor:
    """softmax(q k^T / sqrt(d_head)) v, materialising every [T_q, T_k] score matrix at once."""
    _check_inputs(q, k, v, is_causal)
    T_q, T_k = q.shape[-2], k.shape[-2]
    if mask is not None:
        _lab01.check_mask(mask, (*q.shape[:-1], T_k))
    q = q * (1.0 / math.sqrt(q.shape[-1]))  # (..., T_q, d_head) scaled once, not the bigger scores
    scores = q @ k.transpose(-2, -1)  # (..., T_q, d_head) @ (..., d_head, T_k) -> (..., T_q, T_k)
    allowed = mask  # (..., T_q, T_k) or None
    if is_causal:
        tril = torch.ones(T_q, T_k, dtype=torch.bool, device=q.device).tril()  # (T_q, T_k) j <= i
        allowed = tril if mask is None else mask & tril  # (..., T_q, T_k)
    if allowed is not None:
        scores.masked_fill_(~allowed, float("-inf"))  # (..., T_q, T_k) blocked keys -> -inf
    weights = torch.softmax(scores, dim=-1)  # (..., T_q, T_k) rows sum to 1
    if mask is not None:
        # A row with every key blocked is softmax(all -inf) = NaN; it must be all zeros. The causal
        # mask alone never does this: every query may attend to itself.
        weights = weights.masked_fill(~allowed, 0.0)  # (..., T_q, T_k)
    return weights @ v  # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)


def tiled_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
    block_q: int = 256,
    block_k: int = 256,
) -> torch.Tensor:
    """The same attention, one [block_q, block_k] tile of scores at a time (online softmax)."""
    # Forward only: the running statistics are updated in place, which autograd cannot replay.
    _check_inputs(q, k, v, is_causal)
    _lab01.check_size(block_q, "block_q")
    _lab01.check_size(block_k, "block_k")
    lead, (T_q, d_head), T_k, d_v = q.shape[:-2], q.shape[-2:], k.shape[-2], v.shape[-1]
    if mask is not None:
        _lab01.check_mask(mask, (*lead, T_q, T_k))
        mask = mask.expand(*lead, T_q, T_k)  # (..., T_q, T_k) a view: nothing is copied
    scale = 1.0 / math.sqrt(d_head) if scale is None else scale
    # Scores are kept in base 2: exp(x) = 2^(x * log2(e)), and torch's exp2 kernel was faster than
    # exp on the recording machine's CPU (bench/README.md). The factor rides along with the scale on q.
    scale2 = scale * LOG2_E
    N = math.prod(lead)
    q = q.reshape(N, T_q, d_head)  # (..., T_q, d_head) -> (N, T_q, d_head)
    kt = k.reshape(N, T_k, d_head).transpose(-2, -1)  # (..., T_k, d_head) -> (N, d_head, T_k)
    v = v.reshape(N, T_k, d_v)  # (..., T_k, d_v) -> (N, T_k, d_v)
    out = q.new_empty(N, T_q, d_v)  # (N, T_q, d_v) filled one query block at a time
    for i0 in range(0, T_q, block_q):
        i1 = min(i0 + block_q, T_q)
        q_i = q[:, i0:i1] * scale2  # (N, bq, d_head) scaled per block: no scaled copy of all of q
        m = q.new_full((N, i1 - i0, 1), float("-inf"))  # (N, bq, 1) running max of the scores
        denom = q.new_zeros(N, i1 - i0, 1)  # (N, bq, 1) running sum of exp2(score - m)
        acc = q.new_zeros(N, i1 - i0, d_v)  # (N, bq, d_v) running sum of exp2(score - m) * v
        # Causal: key blocks that start after this query block's last query are all -inf: skip.
        for j0 in range(0, i1 if is_causal else T_k, block_k):
            j1 = min(j0 + block_k, T_k)
            s = q_i @ kt[:, :, j0:j1]  # (N, bq, d_head) @ (N, d_head, bk) -> (N, bq, bk)
            if mask is not None:
                blocked = ~mask[..., i0:i1, j0:j1].reshape(N, i1 - i0, j1 - j0)  # (N, bq, bk)
                s.masked_fill_(blocked, float("-inf"))  # (N, bq, bk)
            if is_causal and j1 - 1 > i0:  # only tiles that straddle the diagonal need a mask
                tril = torch.ones(i1 - i0, j1 - j0, dtype=torch.bool, device=q.device)  # (bq, bk)
                tril = tril.tril(i0 - j0)  # (bq, bk) True where key j0+c <= query i0+r
                s.masked_fill_(~tril, float("-inf"))  # (N, bq, bk) key j0+c > query i0+r -> -inf
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))  # (N, bq, 1)
            # A row with no allowed key so far has m_new = -inf, and -inf - (-inf) would be NaN.
            m_safe = m_new.masked_fill(m_new == float("-inf"), 0.0)  # (N, bq, 1)
            p = s.sub_(m_safe).exp2_()  # (N, bq, bk) in place: every entry <= 1, blocked -> 0
            alpha = (m - m_safe).exp2_()  # (N, bq, 1) rescales what was summed under the old max
            denom.mul_(alpha).add_(p.sum(dim=-1, keepdim=True))  # (N, bq, 1)
            acc.mul_(alpha).baddbmm_(p, v[:, j0:j1])  # (N, bq, d_v) += (N, bq, bk) @ (N, bk, d_v)
            m = m_new
        # denom >= 1 when a row has an allowed key (its max adds 2^0 = 1); it is 0, and acc is
        # 0 too, only for a fully masked row, which must output zeros rather than 0 / 0 = NaN.
        out[:, i0:i1] = acc / denom.clamp_min(1.0)  # (N, bq, d_v) / (N, bq, 1) -> (N, bq, d_v)
    return out.reshape(*lead, T_q, d_v)  # (N, T_q, d_v) -> (..., T_q, d_v)
