"""Step 5: the GPT. Step 4's head multiplied, wrapped and stacked (Phuong-Hutter, Algorithm 10)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from common.loader import reference

# Step 4's reference Head, through the one route to an earlier step's code: Step 5 runs the same
# whether or not your own Step 4 is finished (README: Catching up).
Head = reference("step-04", "head").Head

ID_DTYPES = (torch.int64, torch.int32)  # what nn.Embedding accepts as indices


def _check_size(value, name):
    """Refuse a layer size (d, h, T_max, V, n_layer) that is not a positive int."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")


def check_heads(d, h):
    """Refuse a width d that h heads cannot share: d_head = d / h must be a whole number."""
    _check_size(d, "d")
    _check_size(h, "h")
    if d % h != 0:
        raise ValueError(f"d must be divisible by h, got d={d} and h={h} (d / h = {d / h:g})")


def check_ids(ids, V, name="idx"):
    """Refuse anything but a (B, T) tensor of integer ids in [0, V) with B, T >= 1."""
    if not isinstance(ids, torch.Tensor) or ids.dtype not in ID_DTYPES:
        got = f"dtype {ids.dtype}" if isinstance(ids, torch.Tensor) else type(ids).__name__
        raise ValueError(
            f"{name} must be a tensor of integer token ids (torch.long), got {got}; "
            "encode text with the Step 3 vocabulary, then torch.tensor(ids)"
        )
    if ids.dim() != 2 or 0 in ids.shape:
        raise ValueError(
            f"{name} must have shape (B, T) with B, T >= 1, got {tuple(ids.shape)}; "
            f"add a batch axis with {name}[None]"
        )
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= V:
        raise ValueError(f"{name} must be token ids in [0, {V}), got values from {low} to {high}")


def check_input(idx, targets, V, T_max):
    """Refuse what forward cannot take: idx as check_ids says with T <= T_max, targets alike."""
    check_ids(idx, V)
    if idx.shape[1] > T_max:
        raise ValueError(
            f"sequence length T={idx.shape[1]} exceeds T_max={T_max}; "
            f"keep the last T_max tokens: idx[:, -{T_max}:]"
        )
    if targets is not None:
        if not isinstance(targets, torch.Tensor) or targets.shape != idx.shape:
            got = tuple(targets.shape) if isinstance(targets, torch.Tensor) else targets
            raise ValueError(f"targets must have the shape of idx, {tuple(idx.shape)}, got {got!r}")
        check_ids(targets, V, "targets")


def check_sampling(max_new_tokens, temperature, generator):
    """Refuse sampling settings generate cannot use: a count < 0, a temperature <= 0, not a Generator."""
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int):
        raise ValueError(f"max_new_tokens must be an int >= 0, got {max_new_tokens!r}")
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be an int >= 0, got {max_new_tokens}")
    if isinstance(temperature, bool) or not isinstance(temperature, int | float):
        raise ValueError(f"temperature must be a number > 0, got {temperature!r}")
    if not 0 < temperature < math.inf:
        raise ValueError(f"temperature must be a finite number > 0, got {temperature}")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be a torch.Generator or None, got {generator!r}")


class MultiHeadAttention(nn.Module):
    """h causal Step 4 heads side by side, concatenated, then one output projection: (B, T, d) -> (B, T, d)."""

    def __init__(self, d, h, T_max):
        super().__init__()
        check_heads(d, h)
        _check_size(T_max, "T_max")
        self.d, self.h, self.T_max = d, h, T_max
        raise NotImplementedError(
            "TODO(step-05 task 1: MultiHeadAttention): build self.heads, an nn.ModuleList of h Step 4 heads Head(d, d_head, T_max) with d_head = d // h, and self.proj, a bias-free nn.Linear(d, d): the output projection W_O of Lecture 4's multi-head attention (Algorithm 5 of Phuong-Hutter). The trap: a Python list instead of nn.ModuleList hides the heads' weights from model.parameters(), so they are never trained or counted."
        )

    def forward(self, x):
        """Every head on the same x, their outputs concatenated, then projected."""
        raise NotImplementedError(
            "TODO(step-05 task 1: MultiHeadAttention): for x of shape (B, T, d) return (B, T, d): the h heads' outputs, each (B, T, d_head), concatenated along the last axis in the order of self.heads, then self.proj. Property: equal, with copied weights, to lab-01's MultiHeadSelfAttention under a causal mask. The trap: concatenating along the time axis (dim=1) instead of the feature axis."
        )


class FeedForward(nn.Module):
    """The position-wise MLP: d -> 4d -> GELU -> d, the same map at every position."""

    def __init__(self, d):
        super().__init__()
        _check_size(d, "d")
        raise NotImplementedError(
            "TODO(step-05 task 2: FeedForward): build self.fc, nn.Linear(d, 4 * d), and self.proj, nn.Linear(4 * d, d), both with a bias (W_mlp1, b_mlp1 and W_mlp2, b_mlp2 of Phuong-Hutter, Algorithm 10). The trap: a hidden width other than 4 * d still runs; only the parameter count shows it."
        )

    def forward(self, x):
        """proj(GELU(fc(x))) for x of shape (B, T, d)."""
        raise NotImplementedError(
            "TODO(step-05 task 2: FeedForward): for x of shape (B, T, d) return (B, T, d): self.proj(GELU(self.fc(x))) with the exact GELU, x * Phi(x) (README: task 2). Property: position-wise, so output t depends on x[:, t] alone. The trap: ReLU in place of GELU passes every shape check."
        )


class Block(nn.Module):
    """One pre-LayerNorm transformer block: x + attn(ln1(x)), then x + mlp(ln2(x))."""

    def __init__(self, d, h, T_max):
        super().__init__()
        check_heads(d, h)
        _check_size(T_max, "T_max")
        raise NotImplementedError(
            "TODO(step-05 task 3: Block): build self.ln1 = nn.LayerNorm(d), self.attn = MultiHeadAttention(d, h, T_max), self.ln2 = nn.LayerNorm(d) and self.mlp = FeedForward(d), in that order. The trap: one LayerNorm shared by both branches; each branch has its own gain and bias."
        )

    def forward(self, x):
        """Two residual branches, each reading a normalised copy of x and adding its result to x."""
        raise NotImplementedError(
            "TODO(step-05 task 3: Block): for x of shape (B, T, d) return (B, T, d): first x + attn(ln1(x)), then, on that result, x + mlp(ln2(x)): pre-LayerNorm as in GPT-2 and nanoGPT. Property: with both branches' proj set to zero the block returns x bit for bit. The trap: post-LN, ln1(x + attn(x)), which normalises the residual stream itself."
        )


class GPT(nn.Module):
    """A decoder-only transformer over V token ids: (B, T) ids -> (B, T, V) logits of the next token."""

    def __init__(self, V, T_max, d, h, n_layer):
        super().__init__()
        for name, size in (("V", V), ("T_max", T_max), ("n_layer", n_layer)):
            _check_size(size, name)
        check_heads(d, h)
        self.V, self.T_max, self.d, self.h, self.n_layer = V, T_max, d, h, n_layer
        raise NotImplementedError(
            "TODO(step-05 task 4: GPT): build self.tok_emb = nn.Embedding(V, d) (W_e), self.pos_emb = nn.Embedding(T_max, d) (W_p, learned), self.blocks, an nn.Sequential of n_layer Blocks, self.ln_f = nn.LayerNorm(d) and self.lm_head, a bias-free nn.Linear(d, V) (the unembedding W_u). The trap: nn.Sequential(*[Block(...)] * n_layer) repeats ONE block n_layer times, sharing its weights; the parameter count catches it."
        )
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module):
        """The lecture lineage's init: weights N(0, 0.02), biases 0, so the first logits are near 0."""
        if isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, idx, targets=None):
        """(logits (B, T, V), mean cross-entropy against targets (B, T), or None without targets)."""
        check_input(idx, targets, self.V, self.T_max)
        raise NotImplementedError(
            "TODO(step-05 task 4: GPT): for idx (B, T) return (logits, loss). x = tok_emb(idx) + pos_emb(positions 0..T-1), shape (B, T, d); then self.blocks, self.ln_f, self.lm_head give logits (B, T, V). loss is None without targets, else the mean cross-entropy of logits[b, t] against targets[b, t], a 0-dim tensor, about ln V at init. Property: logits[:, t] depend on idx[:, :t+1] only. The trap: F.cross_entropy wants the classes on axis 1, so (B, T, V) logits must be flattened to (B*T, V) first."
        )

    def generate(self, idx, max_new_tokens, temperature=1.0, generator=None):
        """idx (B, T) followed by max_new_tokens sampled ids: (B, T + max_new_tokens)."""
        check_ids(idx, self.V)  # longer than T_max is fine here: the context is cropped
        check_sampling(max_new_tokens, temperature, generator)
        raise NotImplementedError(
            "TODO(step-05 task 5: generate): return idx (B, T) with max_new_tokens ids appended, (B, T + max_new_tokens), one at a time: run the model on the last T_max ids at most, take the logits of the last position divided by temperature, softmax, and draw one id per row with torch.multinomial(..., generator=generator). No gradients (torch.no_grad()). Property: the same generator state gives the same ids. The trap: not cropping, so the context outgrows T_max and check_input refuses it."
        )


def n_params(V, T_max, d, n_layer):
    """The parameter count of GPT(V, T_max, d, h, n_layer), from the README's formula (h drops out)."""
    per_block = 12 * d * d + 9 * d  # attention 4d^2, MLP 8d^2 + 5d, two LayerNorms 4d
    return 2 * V * d + T_max * d + n_layer * per_block + 2 * d  # embeddings, blocks, ln_f, head
