"""Attention from scratch: stable softmax, scaled dot-product attention, masks, multi-head."""

import math

import torch
from torch import nn

# Masks are boolean and broadcast to the scores [..., T_q, T_k]; True means "this query may attend
# to this key". Activations are [..., T, d_head]: the leading dims are [B] for one head and [B, h]
# for several. Shape names follow the course glossary (README.md): d is the model width, d_model.


def check_rank(x: torch.Tensor, name: str, layout: str, ndim: int, exact: bool = True) -> None:
    """Refuse a tensor whose number of dims is not `ndim` (or fewer than `ndim` if not exact)."""
    if (x.dim() != ndim) if exact else (x.dim() < ndim):
        want = f"{ndim} dims" if exact else f"at least {ndim} dims"
        raise ValueError(f"{name} must have shape {layout} ({want}), got shape {tuple(x.shape)}")


def check_size(value: int, name: str) -> None:
    """Refuse a size (d_model, d_head, n_heads, seq_len) that is not a positive int."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")


def check_input(x: torch.Tensor, layer: nn.Module) -> None:
    """Refuse input `layer` cannot take: not a [B, T, d_model] with T >= 1 of its weights' dtype."""
    check_rank(x, "x", "[B, T, d_model]", 3)
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


def check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    """Refuse q, k, v that cannot be attended: rank, dtype, q/k widths, k/v lengths, empty, batch."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_rank(t, name, "[..., T, d_head]", 2, exact=False)
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


def check_heads(x: torch.Tensor, layer: nn.Module) -> None:
    """Refuse heads that are not [B, n_heads, T, d_head] for `layer`."""
    check_rank(x, "x", "[B, h, T, d_head]", 4)
    if x.shape[1] != layer.n_heads or x.shape[3] != layer.d_head:
        raise ValueError(
            f"x must be [B, {layer.n_heads}, T, {layer.d_head}], got shape {tuple(x.shape)}"
        )


def check_mask(mask: torch.Tensor | None, shape: tuple[int, ...], name: str = "mask") -> None:
    """Refuse a mask that is not boolean or does not broadcast to `shape` (None is no mask)."""
    if mask is None:
        return
    if mask.dtype != torch.bool:
        raise ValueError(
            f"{name} must be a boolean tensor (True = may attend), got dtype {mask.dtype}; "
            "additive float masks (0 / -inf) are not accepted, pass a bool mask"
        )
    # by hand: torch.broadcast_shapes imports sympy, a third of `import torch` for one check
    dims = [1] * (len(shape) - mask.dim()) + list(mask.shape)  # aligned from the right
    fits = mask.dim() <= len(shape)  # each aligned size is 1 (broadcast) or the same
    fits = fits and all(m in (1, s) for m, s in zip(dims, shape, strict=True))
    if not fits:
        raise ValueError(f"{name} must broadcast to {tuple(shape)}, got shape {tuple(mask.shape)}")


def stable_softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax that cannot overflow; a row that is all -inf gives all zeros instead of NaN."""
    raise NotImplementedError(
        "TODO(lab-01 task 1: stable_softmax): return probabilities of the same shape as x, [..., n]: every entry in [0, 1] and each slice along `dim` summing to 1, finite even for logits near 1000, and all zeros (not NaN) for a slice that is entirely -inf. Lesson 4, stable softmax. The trap: the max shift."
    )


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q k^T * scale) v with blocked keys removed; returns (output, weights)."""
    check_qkv(q, k, v)  # given: refuses queries, keys and values that cannot be attended
    check_mask(mask, (*q.shape[:-1], k.shape[-2]))  # given: broadcasts to the scores
    raise NotImplementedError(
        "TODO(lab-01 task 2: scaled_dot_product_attention): return (output [..., T_q, d_v], weights [..., T_q, T_k]) for q [..., T_q, d_head] and k, v [..., T_k, d_head or d_v]: weights are the stable softmax over the keys of the scaled scores, 0 exactly where the bool mask is False, and each row sums to 1 (or is all 0 when the mask blocks every key). Lesson 4, scaled dot-product attention. The trap: the scale is one over the square root of d_head (unless `scale` is given), and blocking happens before the softmax."
    )


def causal_mask(seq_len: int) -> torch.Tensor:
    """[T, T] lower triangle: query t may attend to keys j <= t and to nothing later."""
    check_size(seq_len, "seq_len")  # given: T must be a positive int
    raise NotImplementedError(
        "TODO(lab-01 task 3: causal_mask): return a bool tensor of shape [T, T], T = seq_len, that is True at (query t, key j) exactly when j <= t. Lesson 5, the causal mask (its formula in section 1.1). The trap: the diagonal: a token may attend to itself."
    )


def combine_causal_and_padding(causal: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
    """[B, T, T] mask: query i may attend key j if j <= i AND key j is real (padding[b, j] True)."""
    check_rank(causal, "causal", "[T, T]", 2)  # given: the two masks' shapes and dtypes
    check_rank(padding, "padding", "[B, T]", 2)
    if causal.shape[0] != causal.shape[1]:  # a (1, T) row would broadcast, and give [B, 1, T]
        raise ValueError(f"causal must be square, [T, T], got shape {tuple(causal.shape)}")
    check_mask(causal, causal.shape, "causal")  # its dtype
    check_mask(padding, (padding.shape[0], causal.shape[1]), "padding")
    raise NotImplementedError(
        "TODO(lab-01 task 4: combine_causal_and_padding): return a bool [B, T, T] mask from causal [T, T] and padding [B, T] (True marks a real token): entry [b, i, j] is True exactly when the causal mask allows (i, j) and key j of sequence b is real. Lesson 5, combining masks. The trap: AND, not OR, and the padding mask is about keys, so it needs a query axis."
    )


class SelfAttention(nn.Module):
    """One attention head: project x to q, k, v of width d_head, then attend."""

    def __init__(self, d_model: int, d_head: int | None = None, bias: bool = False):
        super().__init__()
        check_size(d_model, "d_model")
        check_size(d_model if d_head is None else d_head, "d_head")
        self.d_model = d_model
        self.d_head = d_model if d_head is None else d_head
        self.query = nn.Linear(d_model, self.d_head, bias=bias)
        self.key = nn.Linear(d_model, self.d_head, bias=bias)
        self.value = nn.Linear(d_model, self.d_head, bias=bias)

    def project(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Queries, keys and values, each [B, T, d_head], from x [B, T, d_model]."""
        check_input(x, self)  # given: x must be [B, T, d_model] of the weights' dtype
        raise NotImplementedError(
            "TODO(lab-01 task 5: SelfAttention): project returns the queries, keys and values, each [B, T, d_head], made from x [B, T, d_model] by the module's three linear maps. Lesson 4, from x to queries, keys and values. The trap: which map makes which of the three."
        )

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(output [B, T, d_head], weights [B, T, T]); mask broadcasts to [B, T, T]."""
        check_input(x, self)  # given
        raise NotImplementedError(
            "TODO(lab-01 task 5: SelfAttention): forward returns (output [B, T, d_head], weights [B, T, T]): the attention of task 2 over this module's own projections, with the mask passed on unchanged. Lesson 4, self-attention. The trap: no second scale: task 2 already scales."
        )


class MultiHeadSelfAttention(nn.Module):
    """n_heads heads of width d_model / n_heads side by side, merged by one output projection."""

    def __init__(self, d_model: int, n_heads: int, bias: bool = False):
        super().__init__()
        check_size(d_model, "d_model")
        check_size(n_heads, "n_heads")
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
        check_input(x, self)  # given
        B, T, _ = x.shape
        raise NotImplementedError(
            "TODO(lab-01 task 6: MultiHeadSelfAttention): split_heads returns [B, h, T, d_head] from x [B, T, d_model], head i holding columns i*d_head to (i+1)*d_head - 1 (nn.MultiheadAttention's layout). Lesson 6, the head split. The trap: the head axis must come before T, so the attention of task 2 sees [B, h] as its batch."
        )

    def merge_heads(self, x: torch.Tensor) -> torch.Tensor:
        """[B, h, T, d_head] -> [B, T, d_model]: the heads' outputs concatenated side by side."""
        check_heads(x, self)  # given
        B, h, T, d_head = x.shape
        raise NotImplementedError(
            "TODO(lab-01 task 6: MultiHeadSelfAttention): merge_heads undoes split_heads: [B, h, T, d_head] -> [B, T, d_model], so that merging a split gives x back bit for bit. Lesson 6, the merge. The trap: view after a transpose."
        )

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(output [B, T, d_model], weights [B, h, T, T]); mask broadcasts to [B, T, T]."""
        check_input(x, self)  # given: x [B, T, d_model], and a mask that broadcasts to [B, T, T]
        B, T, _ = x.shape
        check_mask(mask, (B, T, T))
        raise NotImplementedError(
            "TODO(lab-01 task 6: MultiHeadSelfAttention): forward returns (output [B, T, d_model], weights [B, h, T, T]): queries, keys and values from the one in_proj, split into heads, attended per head with task 2 under one shared mask, merged, then passed through out_proj. Lesson 6, multi-head attention. The trap: a head axis: a [B, T, T] mask must become [B, 1, T, T] before it meets the [B, h, T, T] scores, or batch b is masked with sequence h's mask."
        )
