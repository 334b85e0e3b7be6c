"""Attention from scratch: stable softmax, scaled dot-product attention, masks, multi-head."""

import math

import torch
from torch import nn

# Masks are boolean and broadcast to the scores [..., T_q, T_k]; True means "this query may attend
# to this key". Activations are [..., T, d_head]: the leading dims are [B] for one head and [B, h]
# for several. Shape names follow the course glossary (README.md): d is the model width, d_model.


def _check_rank(x: torch.Tensor, name: str, layout: str, ndim: int, exact: bool = True) -> None:
    """Refuse a tensor whose number of dims is not `ndim` (or fewer than `ndim` if not exact)."""
    if (x.dim() != ndim) if exact else (x.dim() < ndim):
        want = f"{ndim} dims" if exact else f"at least {ndim} dims"
        raise ValueError(f"{name} must have shape {layout} ({want}), got shape {tuple(x.shape)}")


def _check_size(value: int, name: str) -> None:
    """Refuse a layer size (d_model, d_head, n_heads) that is not a positive int."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")


def _check_input(x: torch.Tensor, layer: nn.Module) -> None:
    """Refuse input `layer` cannot take: not a [B, T, d_model] with T >= 1 of its weights' dtype."""
    _check_rank(x, "x", "[B, T, d_model]", 3)
    if not x.is_floating_point():
        raise ValueError(f"x must be a floating-point tensor, got dtype {x.dtype}")
    if x.shape[-1] != layer.d_model:
        raise ValueError(f"x must have width d_model={layer.d_model}, got shape {tuple(x.shape)}")
    if x.shape[1] < 1:
        raise ValueError(f"x must have at least one position T >= 1, got shape {tuple(x.shape)}")
    dtype = next(layer.parameters()).dtype  # the weights' dtype: a matmul needs both the same
    if x.dtype != dtype:
        raise ValueError(
            f"x must have the layer's dtype {dtype}, got dtype {x.dtype}; "
            f"pass x.to({dtype}) or build the layer with .to({x.dtype})"
        )


def _check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    """Refuse q, k, v that cannot be attended: rank, dtype, q/k widths, k/v lengths, empty, batch."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        _check_rank(t, name, "[..., T, d_head]", 2, exact=False)
    if not (q.is_floating_point() and q.dtype == k.dtype == v.dtype):
        raise ValueError(
            "q, k and v must share one floating-point dtype, got "
            f"q {q.dtype}, k {k.dtype}, v {v.dtype}"
        )
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must have the same width d_head, got q {tuple(q.shape)}, k {tuple(k.shape)}"
        )
    if q.shape[-1] < 1:
        raise ValueError(f"q and k must have width d_head >= 1, got q {tuple(q.shape)}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same length T_k, got k {tuple(k.shape)} and v {tuple(v.shape)}"
        )
    if q.shape[-2] < 1 or k.shape[-2] < 1:
        raise ValueError(
            "q and k must have at least one position (T_q, T_k >= 1), got "
            f"q {tuple(q.shape)}, k {tuple(k.shape)}"
        )
    if not q.shape[:-2] == k.shape[:-2] == v.shape[:-2]:
        raise ValueError(
            "q, k and v must have the same leading dims [...], got "
            f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}"
        )


def _check_heads(x: torch.Tensor, n_heads: int, d_head: int) -> None:
    """Refuse heads that are not [B, n_heads, T, d_head]."""
    _check_rank(x, "x", "[B, h, T, d_head]", 4)
    if x.shape[1] != n_heads or x.shape[3] != d_head:
        raise ValueError(f"x must be [B, {n_heads}, T, {d_head}], got shape {tuple(x.shape)}")


def _check_mask(mask: torch.Tensor, shape: tuple[int, ...], name: str = "mask") -> None:
    """Refuse a mask that is not boolean or does not broadcast to `shape`."""
    if mask.dtype != torch.bool:
        raise ValueError(
            f"{name} must be a boolean tensor (True = may attend), got dtype {mask.dtype}; "
            "additive float masks (0 / -inf) are not accepted, pass a bool mask"
        )
    try:
        fits = torch.broadcast_shapes(mask.shape, shape) == torch.Size(shape)
    except RuntimeError:
        fits = False
    if not fits:
        raise ValueError(f"{name} must broadcast to {tuple(shape)}, got shape {tuple(mask.shape)}")


def stable_softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax that cannot overflow; a row that is all -inf gives all zeros instead of NaN."""
    raise NotImplementedError(
        "TODO(lab-01 task 1: stable_softmax): m = x.amax(dim=dim, keepdim=True), then m = m.masked_fill(m == float('-inf'), 0); e = torch.exp(x - m); s = e.sum(dim=dim, keepdim=True); return e / s.masked_fill(s == 0, 1), so a row that is all -inf gives zeros, not NaN."
    )


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q k^T * scale) v with blocked keys removed; returns (output, weights)."""
    raise NotImplementedError(
        "TODO(lab-01 task 2: scaled_dot_product_attention): _check_qkv(q, k, v); if scale is None: scale = 1 / math.sqrt(q.shape[-1]), the d_head; scores = q @ k.transpose(-2, -1) * scale; if mask is not None: _check_mask(mask, scores.shape) and scores = scores.masked_fill(~mask, float('-inf')); weights = stable_softmax(scores, dim=-1); return weights @ v, weights."
    )


def causal_mask(seq_len: int) -> torch.Tensor:
    """[T, T] lower triangle: query t may attend to keys j <= t and to nothing later."""
    raise NotImplementedError(
        'TODO(lab-01 task 3: causal_mask): unless seq_len is an int >= 1, raise ValueError(f"seq_len must be a positive int, got {seq_len!r}"); then return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool)).'
    )


def combine_causal_and_padding(causal: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
    """[B, T, T] mask: query i may attend key j if j <= i AND key j is real (padding[b, j] True)."""
    raise NotImplementedError(
        'TODO(lab-01 task 4: combine_causal_and_padding): _check_rank(causal, "causal", "[T, T]", 2) and _check_rank(padding, "padding", "[B, T]", 2); T = causal.shape[-1]; _check_mask(causal, (T, T), "causal") and _check_mask(padding, (padding.shape[0], T), "padding"); return causal & padding[:, None, :], which broadcasts (T, T) & (B, 1, T) to (B, T, T).'
    )


class SelfAttention(nn.Module):
    """One attention head: project x to q, k, v of width d_head, then attend."""

    def __init__(self, d_model: int, d_head: int | None = None, bias: bool = False):
        super().__init__()
        _check_size(d_model, "d_model")
        _check_size(d_model if d_head is None else d_head, "d_head")
        self.d_model = d_model
        self.d_head = d_model if d_head is None else d_head
        self.query = nn.Linear(d_model, self.d_head, bias=bias)
        self.key = nn.Linear(d_model, self.d_head, bias=bias)
        self.value = nn.Linear(d_model, self.d_head, bias=bias)

    def project(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """q, k, v, each [B, T, d_head], from x [B, T, d_model]."""
        raise NotImplementedError(
            "TODO(lab-01 task 5: SelfAttention): _check_input(x, self); return self.query(x), self.key(x), self.value(x)."
        )

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(output [B, T, d_head], weights [B, T, T]); mask broadcasts to [B, T, T]."""
        raise NotImplementedError(
            "TODO(lab-01 task 5: SelfAttention): q, k, v = self.project(x); return scaled_dot_product_attention(q, k, v, mask)."
        )


class MultiHeadSelfAttention(nn.Module):
    """n_heads heads of width d_model / n_heads side by side, merged by one output projection."""

    def __init__(self, d_model: int, n_heads: int, bias: bool = False):
        super().__init__()
        _check_size(d_model, "d_model")
        _check_size(n_heads, "n_heads")
        if d_model % n_heads != 0:
            raise ValueError(
                f"d_model must be divisible by n_heads, got d_model={d_model} and n_heads={n_heads}"
            )
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        # in_proj.weight rows are [W_q; W_k; W_v]: the layout of MultiheadAttention.in_proj_weight
        self.in_proj = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """[B, T, d_model] -> [B, h, T, d_head]; head i owns columns [i*d_head, (i+1)*d_head)."""
        raise NotImplementedError(
            "TODO(lab-01 task 6: MultiHeadSelfAttention): _check_input(x, self); B, T, _ = x.shape; return x.view(B, T, self.n_heads, self.d_head).transpose(1, 2), which is [B, h, T, d_head]."
        )

    def merge_heads(self, x: torch.Tensor) -> torch.Tensor:
        """[B, h, T, d_head] -> [B, T, d_model]: the heads' outputs concatenated side by side."""
        raise NotImplementedError(
            "TODO(lab-01 task 6: MultiHeadSelfAttention): _check_heads(x, self.n_heads, self.d_head); B, h, T, d_head = x.shape; return x.transpose(1, 2).reshape(B, T, h * d_head): reshape, not view, because the transposed tensor is not contiguous."
        )

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(output [B, T, d_model], weights [B, h, T, T]); mask broadcasts to [B, T, T]."""
        raise NotImplementedError(
            "TODO(lab-01 task 6: MultiHeadSelfAttention): _check_input(x, self); B, T, _ = x.shape; q, k, v = self.in_proj(x).split(self.d_model, dim=-1); then q, k, v = self.split_heads(q), self.split_heads(k), self.split_heads(v); if a mask is given, _check_mask(mask, (B, T, T)) and mask = mask.expand(B, T, T).unsqueeze(1), one [B, 1, T, T] mask shared by every head; out, weights = scaled_dot_product_attention(q, k, v, mask); return self.out_proj(self.merge_heads(out)), weights."
        )
