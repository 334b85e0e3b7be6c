"""Induction heads: a two-layer attention-only model learns to continue a repeated random block."""

# Each sequence holds a block of random tokens that appears twice. The block length L and where the
# first copy starts change from sequence to sequence, so no fixed offset finds the copy: the model
# has to look up "where did my current token occur before, and what came after it?" That is the
# induction circuit of Olsson et al. (2022): a previous-token head in layer 0 writes "my previous
# token was a" into each position, and a head in layer 1 matches its query (the current token a)
# against those keys, so it attends to the token after the earlier a and copies it.

import math
import time
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from common.seeding import generator, seed_all


@dataclass(frozen=True)
class InductionConfig:
    V: int = 64  # vocabulary of the random tokens: a guess costs ln V = 4.16 nats
    T: int = 32  # tokens a sequence shows the model
    L_min: int = 8  # block length, drawn per sequence from [L_min, L_max]
    L_max: int = 16
    d: int = 64
    h: int = 4
    n_layer: int = 2
    B: int = 32
    steps: int = 2000
    lr: float = 3e-3
    seed: int = 0


# --- the data: one random block, twice, at a length and place that vary ---------------------------


def repeat_batch(cfg: InductionConfig, g: torch.Generator):
    """x, y (B, T) with y shifted by one, and where each sequence repeats: start s and length L (B,)."""
    B, T = cfg.B, cfg.T
    if 2 * cfg.L_max > T + 1:
        raise ValueError(
            f"two blocks of L_max = {cfg.L_max} need T + 1 >= {2 * cfg.L_max}, got T = {T}"
        )
    seq = torch.randint(cfg.V, (B, T + 1), generator=g)  # (B, T + 1) random tokens
    L = torch.randint(cfg.L_min, cfg.L_max + 1, (B,), generator=g)  # (B,) block lengths
    s = (torch.rand(B, generator=g) * (T + 2 - 2 * L)).long()  # (B,) start in [0, T + 1 - 2L]
    j = torch.arange(T + 1)  # (T + 1,)
    second = (j >= (s + L)[:, None]) & (j < (s + 2 * L)[:, None])  # (B, T + 1) the second copy
    src = (j - L[:, None]).clamp_min(0)  # (B, T + 1) where each position of the copy comes from
    seq = torch.where(second, seq.gather(1, src), seq)  # (B, T + 1)
    return seq[:, :-1], seq[:, 1:], s, L  # x, y (B, T); s, L (B,)


def target_masks(s: torch.Tensor, L: torch.Tensor, T: int):
    """(B, T) masks of the targets: inside the first copy, and predictable inside the repeat."""
    t = torch.arange(T) + 1  # (T,) position of each target in the sequence
    s, L = s[:, None], L[:, None]  # (B, 1)
    first = (t > s) & (t < s + L)  # (B, T) first copy: random tokens, nothing to look up
    repeat = (t > s + L) & (t < s + 2 * L)  # (B, T) repeat: the token after the earlier copy
    return first, repeat


# --- the model: attention only, no MLP ------------------------------------------------------------


class Attention(nn.Module):
    """h causal heads of width d / h; `zero` lists heads whose output is replaced by 0 (ablation)."""

    def __init__(self, d: int, h: int, T_max: int):
        super().__init__()
        self.h = h
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.proj = nn.Linear(d, d, bias=False)
        self.register_buffer("tril", torch.tril(torch.ones(T_max, T_max, dtype=torch.bool)))

    def forward(self, x: torch.Tensor, zero: tuple[int, ...] = ()) -> torch.Tensor:
        B, T, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)  # 3 x (B, T, d)
        q, k, v = (
            t.view(B, T, self.h, d // self.h).transpose(1, 2) for t in (q, k, v)
        )  # (B, h, T, d_head)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.h)  # (B, h, T, T)
        A = F.softmax(scores.masked_fill(~self.tril[:T, :T], float("-inf")), dim=-1)  # (B, h, T, T)
        self.A = A.detach()  # kept for the pictures and the scores
        out = A @ v  # (B, h, T, d_head)
        if zero:
            keep = torch.ones(self.h, 1, 1)  # (h, 1, 1)
            keep[list(zero)] = 0.0
            out = out * keep  # (B, h, T, d_head) the ablated heads write nothing
        return self.proj(out.transpose(1, 2).reshape(B, T, d))  # (B, T, d)


class AttentionOnly(nn.Module):
    """Token and position embeddings, n_layer pre-LayerNorm attention layers with residuals, unembed."""

    def __init__(self, cfg: InductionConfig):
        super().__init__()
        self.tok = nn.Embedding(cfg.V, cfg.d)
        self.pos = nn.Embedding(cfg.T, cfg.d)
        self.ln = nn.ModuleList(nn.LayerNorm(cfg.d) for _ in range(cfg.n_layer))
        self.attn = nn.ModuleList(Attention(cfg.d, cfg.h, cfg.T) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.d)
        self.unembed = nn.Linear(cfg.d, cfg.V, bias=False)

    def forward(self, idx, targets=None, ablate: tuple[tuple[int, int], ...] = ()):
        """Logits (B, T, V) and the mean cross-entropy; `ablate` lists (layer, head) pairs to zero."""
        B, T = idx.shape
        x = self.tok(idx) + self.pos(torch.arange(T))  # (B, T, d)
        for layer, (ln, attn) in enumerate(zip(self.ln, self.attn, strict=True)):
            x = x + attn(ln(x), zero=tuple(h for lay, h in ablate if lay == layer))  # (B, T, d)
        logits = self.unembed(self.ln_f(x))  # (B, T, V)
        loss = None if targets is None else F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        return logits, loss

    def patterns(self) -> torch.Tensor:
        """The last forward's attention, (n_layer, B, h, T, T)."""
        return torch.stack([attn.A for attn in self.attn])


# --- the scores -----------------------------------------------------------------------------------


def split_losses(logits, y, s, L):
    """Mean cross-entropy on the first copy's targets and on the repeat's predictable targets."""
    nll = F.cross_entropy(logits.transpose(1, 2), y, reduction="none")  # (B, T)
    first, repeat = target_masks(s, L, y.shape[1])  # (B, T) each
    return nll[first].mean().item(), nll[repeat].mean().item()


def prefix_matching(A: torch.Tensor, s: torch.Tensor, L: torch.Tensor) -> torch.Tensor:
    """Per head: mean attention from each repeated token to the token after its earlier copy.

    A is (..., B, h, T, T); query p = s + L + j (j = 0..L-1) holds the token of position s + j, so
    the key it should read is s + j + 1 = p - L + 1: a stripe L - 1 below the diagonal.
    """
    T = A.shape[-1]
    p = torch.arange(T)  # (T,) queries
    s, L = s[:, None], L[:, None]  # (B, 1)
    rows = (p >= s + L) & (p < s + 2 * L)  # (B, T) queries inside the repeat
    key = (p - L + 1).clamp(0, T - 1)  # (B, T) the key each query should attend to
    on_key = A.gather(-1, key[:, None, :, None].expand(*A.shape[:-1], 1))[..., 0]  # (..., B, h, T)
    w = rows[:, None, :].to(A.dtype)  # (B, 1, T)
    return (on_key * w).sum(dim=(-1, -3)) / (w.sum() * 1.0)  # (..., h)


def previous_token(A: torch.Tensor) -> torch.Tensor:
    """Per head: mean attention from each query i >= 1 to key i - 1."""
    return A.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(-1, -3))  # (..., h) over B and i


PREV_TOKEN = 0.4  # a layer-0 head with this much attention on the previous token feeds the circuit


# --- training and the experiment ------------------------------------------------------------------


def evaluate(model, cfg: InductionConfig, seed: int = 10_000, ablate=()):
    """Losses on one fixed held-out batch of 4B sequences, and the attention patterns on it."""
    big = InductionConfig(**{**asdict(cfg), "B": 4 * cfg.B})
    x, y, s, L = repeat_batch(big, generator(seed))
    model.eval()
    with torch.no_grad():
        logits, _ = model(x, ablate=ablate)
    model.train()
    first, repeat = split_losses(logits, y, s, L)
    A = model.patterns()  # (n_layer, B, h, T, T)
    return dict(first=first, repeat=repeat, A=A, x=x, s=s, L=L)


def train(train_step, cfg: InductionConfig, every: int = 50, progress=None):
    """Train an attention-only model with `train_step` (Step 6 task 4); the curve every `every` steps."""
    seed_all(cfg.seed)
    model = AttentionOnly(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.0)
    g = generator(cfg.seed + 1)
    curve, start = [], time.perf_counter()
    for step in range(cfg.steps + 1):
        if step % every == 0 or step == cfg.steps:
            ev = evaluate(model, cfg)
            curve.append(dict(step=step, first=ev["first"], repeat=ev["repeat"]))
            if progress:
                progress(step, ev)
        if step == cfg.steps:
            break
        for group in opt.param_groups:  # cosine decay to lr / 10: the last steps settle the copy
            group["lr"] = cfg.lr * (0.55 + 0.45 * math.cos(math.pi * step / cfg.steps))
        x, y, _, _ = repeat_batch(cfg, g)
        loss = train_step(model, opt, x, y, 1.0)
        if not math.isfinite(loss):  # stop at once: every later step would be NaN as well
            raise FloatingPointError(
                f"the induction experiment (seed {cfg.seed}, {cfg.n_layer} layers) stopped at step "
                f"{step}: its training loss is {loss}, not a finite number. Usual causes: a bug "
                "in train_step (no clipping, the loss of the wrong tensors)"
            )
    return model, dict(curve=curve, seconds=time.perf_counter() - start)


def experiment(
    train_step, cfg: InductionConfig = InductionConfig(), every: int = 50, progress=None
):
    """Two layers and one, trained alike; the scores of every head, and the ablation of the circuit."""
    two, run2 = train(train_step, cfg, every, progress)
    one_cfg = InductionConfig(**{**asdict(cfg), "n_layer": 1})
    one, run1 = train(train_step, one_cfg, every, progress)
    ev = evaluate(two, cfg)
    prefix = prefix_matching(ev["A"], ev["s"], ev["L"])  # (n_layer, h)
    prev = previous_token(ev["A"])  # (n_layer, h)
    ind_layer, ind_head = divmod(int(prefix.argmax()), cfg.h)
    # Several layer-0 heads may learn the previous token: the circuit survives losing one of them
    prev_heads = tuple(h for h in range(cfg.h) if prev[0, h] >= PREV_TOKEN)
    each = [evaluate(two, cfg, ablate=((0, h),))["repeat"] for h in range(cfg.h)]
    ablated = evaluate(two, cfg, ablate=tuple((0, h) for h in prev_heads))
    ev1 = evaluate(one, one_cfg)
    return dict(
        cfg=cfg,
        curve=run2["curve"],
        curve_one=run1["curve"],
        seconds=run2["seconds"] + run1["seconds"],
        first=ev["first"],
        repeat=ev["repeat"],
        one_layer_repeat=ev1["repeat"],
        one_layer_first=ev1["first"],
        prefix=prefix,
        prev=prev,
        prefix_one=prefix_matching(ev1["A"], ev1["s"], ev1["L"]),
        prev_heads=prev_heads,
        ablate_each=each,
        induction=(ind_layer, ind_head),
        ablated_repeat=ablated["repeat"],
        ablated_first=ablated["first"],
        A=ev["A"],
        x=ev["x"],
        s=ev["s"],
        L=ev["L"],
        ln_V=math.log(cfg.V),
    )
