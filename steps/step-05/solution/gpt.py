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
# The smallest temperature generate accepts: logits / temperature must stay finite in float32
# (at most 3.4e38), and 1e-6 keeps logits up to 3.4e32 finite, far beyond what a GPT produces.
MIN_TEMPERATURE = 1e-6


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


def _list_problem(ids, name):
    """What to do with ids given as a Python list instead of a tensor."""
    rows = [len(r) for r in ids if isinstance(r, list | tuple)]
    if rows and len(set(rows)) > 1:  # ragged: torch.tensor would refuse it with its own error
        return (
            f"{name} must be one (B, T) tensor, got a list of prompts of lengths {rows}: the rows "
            "of a batch share one T, so generate each prompt on its own (B = 1), or cut them to "
            "the shortest"
        )
    fix = "torch.tensor(ids)" if rows else "torch.tensor([ids]), the [ ] adding the batch axis"
    return (
        f"{name} must be a tensor of integer token ids (torch.long), got {type(ids).__name__}; "
        f"encode text with the Step 3 vocabulary, then {fix}"
    )


def _shape_fix(ids, name):
    """The change that makes a tensor of the wrong shape (B, T), said for its shape."""
    if ids.dim() == 1 and len(ids):
        return (  # a slice that dropped the position axis (idx[:, -1]) is 1-D too
            f"one sequence gets a batch axis with {name}[None]; a slice of a single position "
            f"keeps its axis as {name}[:, -1:]"
        )
    if 0 in ids.shape:
        return "a prompt needs at least one id: start from one, e.g. the encoded newline"
    if ids.dim() == 0:
        return f"one id is a (1, 1) prompt: {name}.view(1, 1)"
    return f"it has {ids.dim()} axes: merge the leading ones with {name}.flatten(0, -2)"


def check_ids(ids, V, name="idx"):
    """Refuse anything but a (B, T) tensor of integer ids in [0, V) with B, T >= 1."""
    if isinstance(ids, list | tuple):
        raise ValueError(_list_problem(ids, name))
    if not isinstance(ids, torch.Tensor) or ids.dtype not in ID_DTYPES:
        got = f"dtype {ids.dtype}" if isinstance(ids, torch.Tensor) else type(ids).__name__
        raise ValueError(
            f"{name} must be a tensor of integer token ids (torch.long), got {got}; "
            "encode text with the Step 3 vocabulary, then torch.tensor(ids)"
        )
    if ids.dim() != 2 or 0 in ids.shape:
        raise ValueError(
            f"{name} must have shape (B, T) with B, T >= 1, got {tuple(ids.shape)}; "
            f"{_shape_fix(ids, name)}"
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
    """Refuse sampling settings generate cannot use: a count < 0, a temperature < MIN_TEMPERATURE, not a Generator."""
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int):
        raise ValueError(f"max_new_tokens must be an int >= 0, got {max_new_tokens!r}")
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be an int >= 0, got {max_new_tokens}")
    if isinstance(temperature, bool) or not isinstance(temperature, int | float):
        raise ValueError(f"temperature must be a number > 0, got {temperature!r}")
    if not 0 < temperature < math.inf:
        raise ValueError(f"temperature must be a finite number > 0, got {temperature}")
    if temperature < MIN_TEMPERATURE:
        raise ValueError(
            f"temperature must be at least {MIN_TEMPERATURE:g}, got {temperature:g}: below that, "
            "logits / temperature can overflow float32 to inf, whose softmax is NaN, not "
            "probabilities (0.01 already picks the likeliest id almost every time)"
        )
    if generator is not None and not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be a torch.Generator or None, got {generator!r}")


class MultiHeadAttention(nn.Module):
    """h causal Step 4 heads side by side, concatenated, then one output projection: (B, T, d) -> (B, T, d)."""

    def __init__(self, d, h, T_max):
        super().__init__()
        check_heads(d, h)
        _check_size(T_max, "T_max")
        # BEGIN SOLUTION TODO(step-05 task 1: MultiHeadAttention)
        # CONTRACT: two attributes. heads: a ModuleList of h Step 4 heads, each reading width d
        #   and returning d / h columns (its d_head), all of length T_max at most. proj: a square
        #   linear map of width d without bias, the output projection W_O of Lecture 4's
        #   multi-head attention (Algorithm 5 of Phuong-Hutter). The trap: a plain Python list
        #   hides the heads from the model's parameters, so they are neither trained nor counted.
        # HINT 1: h heads that each read all d columns of x but return only d / h of them; side
        #   by side they are d wide again, and proj mixes what the heads found.
        # HINT 2: nn.ModuleList(Head(...) for _ in range(h)) registers every head; Head is
        #   already imported at the top of this file. bias=False keeps lab-01's layout.
        # HINT 3: self.heads = nn.ModuleList(Head(___, ___, ___) for _ in range(___));
        #   self.proj = nn.Linear(___, ___, bias=___)
        d_head = d // h  # each head's share of the width
        self.heads = nn.ModuleList(Head(d, d_head, T_max) for _ in range(h))  # h x (d -> d_head)
        self.proj = nn.Linear(d, d, bias=False)  # W_O: (B, T, d) -> (B, T, d)
        # END SOLUTION

    def forward(self, x):
        """Every head on the same x, their outputs concatenated, then projected."""
        # BEGIN SOLUTION TODO(step-05 task 1: MultiHeadAttention)
        # CONTRACT: for x of shape (B, T, d) return (B, T, d): every head's output, each of
        #   width d_head, put side by side along the feature axis in the order of the heads, then
        #   the output projection. Property: with copied weights it equals lab-01's
        #   MultiHeadSelfAttention under a causal mask (README, task 1). The trap: joining along
        #   the time axis instead of the feature axis.
        # HINT 1: head i fills columns i*d_head to (i+1)*d_head of the result, as in lab-01's
        #   merge_heads.
        # HINT 2: torch.cat over a list of the heads' outputs, then one call of self.proj.
        # HINT 3: out = torch.cat([___ for head in self.heads], dim=___); return self.proj(___)
        out = torch.cat([head(x) for head in self.heads], dim=-1)  # h x (B, T, d_head) -> (B, T, d)
        return self.proj(out)  # (B, T, d) -> (B, T, d)
        # END SOLUTION


class FeedForward(nn.Module):
    """The position-wise MLP: d -> 4d -> GELU -> d, the same map at every position."""

    def __init__(self, d):
        super().__init__()
        _check_size(d, "d")
        # BEGIN SOLUTION TODO(step-05 task 2: FeedForward)
        # CONTRACT: two attributes, both linear maps with a bias: fc widens each position's
        #   vector from d to 4d, proj brings it back to d (W_mlp1, b_mlp1 and W_mlp2, b_mlp2 of
        #   Phuong-Hutter, Algorithm 10). The trap: any other hidden width runs just as well;
        #   only the parameter count shows it.
        # HINT 1: two linear maps, the first widens each position's vector fourfold, the second
        #   brings it back to d.
        # HINT 2: nn.Linear has bias=True by default; the GELU has no weights, so it needs no
        #   attribute here.
        # HINT 3: self.fc = nn.Linear(___, ___); self.proj = nn.Linear(___, ___)
        self.fc = nn.Linear(d, 4 * d)  # (B, T, d) -> (B, T, 4d)
        self.proj = nn.Linear(4 * d, d)  # (B, T, 4d) -> (B, T, d)
        # END SOLUTION

    def forward(self, x):
        """Widen, bend with the GELU, narrow: (B, T, d) -> (B, T, d)."""
        # BEGIN SOLUTION TODO(step-05 task 2: FeedForward)
        # CONTRACT: for x of shape (B, T, d) return (B, T, d): the widening map, then the exact
        #   GELU, u times the normal distribution function of u (README, task 2), then the
        #   narrowing map. Property: position-wise, so output t depends on position t of x alone.
        #   The trap: a ReLU in place of the GELU passes every shape check.
        # HINT 1: widen, bend, narrow.
        # HINT 2: F.gelu (its default is the exact form, not the tanh approximation).
        # HINT 3: return self.proj(F.___(self.fc(___)))
        return self.proj(F.gelu(self.fc(x)))  # (B, T, d) -> (B, T, 4d) -> (B, T, d)
        # END SOLUTION


class Block(nn.Module):
    """One pre-LayerNorm transformer block: attention, then the MLP, each a residual branch."""

    def __init__(self, d, h, T_max):
        super().__init__()
        check_heads(d, h)
        _check_size(T_max, "T_max")
        # BEGIN SOLUTION TODO(step-05 task 3: Block)
        # CONTRACT: four attributes, in this order: ln1, a LayerNorm over width d; attn, the
        #   multi-head attention of task 1; ln2, a second LayerNorm; mlp, the network of task 2
        #   (README, task 3). The trap: one LayerNorm shared by both branches, when each branch
        #   needs its own gain and bias.
        # HINT 1: four attributes, each built from the classes above or from torch.nn.
        # HINT 2: nn.LayerNorm(d) normalises the last axis of width d and learns a gain and a bias.
        # HINT 3: self.ln1 = nn.___(d); self.attn = ___(d, h, T_max); self.ln2 = ...; self.mlp = ...
        self.ln1 = nn.LayerNorm(d)  # gamma_1, beta_1
        self.attn = MultiHeadAttention(d, h, T_max)
        self.ln2 = nn.LayerNorm(d)  # gamma_2, beta_2
        self.mlp = FeedForward(d)
        # END SOLUTION

    def forward(self, x):
        """Two residual branches, each reading a normalised copy of x and adding its result to x."""
        # BEGIN SOLUTION TODO(step-05 task 3: Block)
        # CONTRACT: for x of shape (B, T, d) return (B, T, d). First add to x what the attention
        #   makes of the first LayerNorm of x; then add to that sum what the MLP makes of its
        #   second LayerNorm: pre-LayerNorm, as in GPT-2 and nanoGPT. Property: with both
        #   branches' output projections zero the block returns x bit for bit. The trap:
        #   post-LN, normalising the sum instead of what the branch reads.
        # HINT 1: the normalisation is applied to what a branch reads, never to what it adds to.
        # HINT 2: two lines, each of the form x = x + branch(norm(x)).
        # HINT 3: x = x + self.attn(self.___(x)); x = ___ + self.mlp(___); return x
        x = x + self.attn(self.ln1(x))  # (B, T, d) communicate: positions exchange information
        x = x + self.mlp(self.ln2(x))  # (B, T, d) compute: each position on its own
        return x
        # END SOLUTION


class GPT(nn.Module):
    """A decoder-only transformer over V token ids: (B, T) ids -> (B, T, V) logits of the next token."""

    def __init__(self, V, T_max, d, h, n_layer):
        super().__init__()
        self.V, self.T_max, self.d, self.h, self.n_layer = V, T_max, d, h, n_layer
        for name, size in (("V", V), ("T_max", T_max), ("n_layer", n_layer)):
            _check_size(size, name)
        check_heads(d, h)
        # BEGIN SOLUTION TODO(step-05 task 4: GPT)
        # CONTRACT: five attributes. tok_emb: a table of V learned vectors of width d (W_e);
        #   pos_emb: a table of T_max learned position vectors (W_p); blocks: a Sequential of
        #   n_layer distinct Blocks; ln_f: the final LayerNorm; lm_head: a linear map from d to V
        #   scores without bias (the unembedding W_u of Algorithm 10). The trap: multiplying a
        #   list holding one Block repeats that one block, weights shared; the count catches it.
        # HINT 1: embeddings turn ids into vectors, the blocks refine them, ln_f and lm_head turn
        #   each vector into V scores.
        # HINT 2: build a new Block on each turn of the loop; the formula of the README gives
        #   the count to check against.
        # HINT 3: self.blocks = nn.Sequential(*(Block(___) for _ in range(___)));
        #   self.lm_head = nn.Linear(___, ___, bias=___)
        self.tok_emb = nn.Embedding(V, d)  # W_e: id -> (d,)
        self.pos_emb = nn.Embedding(T_max, d)  # W_p: position -> (d,)
        self.blocks = nn.Sequential(*(Block(d, h, T_max) for _ in range(n_layer)))
        self.ln_f = nn.LayerNorm(d)  # the final LayerNorm
        self.lm_head = nn.Linear(d, V, bias=False)  # W_u: (B, T, d) -> (B, T, V)
        # END SOLUTION
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module):
        """The lecture lineage's init: weights N(0, 0.02), biases 0, so the first logits are near 0."""
        if isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, idx, targets=None):
        """Next-token logits (B, T, V) for ids (B, T), and their loss against targets if given."""
        check_input(idx, targets, self.V, self.T_max)
        # BEGIN SOLUTION TODO(step-05 task 4: GPT)
        # CONTRACT: for ids of shape (B, T) return a pair. The vectors are the token embedding
        #   plus the embedding of positions 0 to T-1, shape (B, T, d); the blocks, the final
        #   LayerNorm and the head turn them into logits of shape (B, T, V). The second item is
        #   None without targets, else the mean cross-entropy of the logits at (b, t) against the
        #   target at (b, t): one number, about ln V at init (Algorithm 10). Property: the logits
        #   at t depend on ids 0 to t only. The trap: cross_entropy wants the classes on axis 1,
        #   so both sides are flattened over batch and time first.
        # HINT 1: Algorithm 10 of Phuong-Hutter, line by line: embed, add positions, L blocks,
        #   final norm, unembed.
        # HINT 2: torch.arange(T) gives the positions, broadcast over the batch; .flatten(0, 1)
        #   turns (B, T, V) logits into (B*T, V) and .flatten() (B, T) targets into (B*T,) for
        #   F.cross_entropy.
        # HINT 3: x = self.tok_emb(___) + self.pos_emb(torch.arange(___)); logits =
        #   self.lm_head(self.ln_f(self.blocks(___))); loss = F.cross_entropy(logits.flatten(___),
        #   targets.flatten()) if targets is not None else None
        B, T = idx.shape  # idx: (B, T)
        pos = torch.arange(T, device=idx.device)  # (T,)
        x = self.tok_emb(idx) + self.pos_emb(pos)  # (B, T, d) + (T, d) -> (B, T, d)
        x = self.blocks(x)  # (B, T, d)
        logits = self.lm_head(self.ln_f(x))  # (B, T, d) -> (B, T, V)
        if targets is None:
            return logits, None
        # flatten, not view: targets may be a slice of a longer tensor, not contiguous
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())  # (B*T, V), (B*T,) -> ()
        return logits, loss
        # END SOLUTION

    def generate(self, idx, max_new_tokens, temperature=1.0, generator=None):
        """idx (B, T) followed by max_new_tokens sampled ids: (B, T + max_new_tokens)."""
        check_ids(idx, self.V)  # longer than T_max is fine here: the context is cropped
        check_sampling(max_new_tokens, temperature, generator)
        # BEGIN SOLUTION TODO(step-05 task 5: generate)
        # CONTRACT: return idx (B, T) with max_new_tokens ids appended, (B, T + max_new_tokens),
        #   one at a time: run the model on the last T_max ids at most, take the logits of the
        #   last position divided by temperature, softmax, and draw one id per row with
        #   torch.multinomial(..., generator=generator). No gradients (torch.no_grad()).
        #   Property: the same generator state gives the same ids. The trap: not cropping, so
        #   the context outgrows T_max and check_input refuses it.
        # HINT 1: sampling is autoregressive: each new id joins the context of the next draw.
        # HINT 2: idx[:, -self.T_max:] crops; logits[:, -1, :] is the last position;
        #   torch.cat(..., dim=1) appends.
        # HINT 3: for _ in range(___): logits, _ = self(idx[:, -___:]); probs =
        #   F.softmax(logits[:, -1, :] / ___, dim=-1); nxt = torch.multinomial(probs, 1,
        #   generator=___); idx = torch.cat((idx, nxt), dim=___)
        with torch.no_grad():  # sampling trains nothing: no graph to keep
            for _ in range(max_new_tokens):
                logits, _ = self(idx[:, -self.T_max :])  # (B, min(T, T_max), V)
                logits = logits[:, -1, :] / temperature  # (B, V) the next token's scores
                probs = F.softmax(logits, dim=-1)  # (B, V)
                nxt = torch.multinomial(probs, num_samples=1, generator=generator)  # (B, 1)
                idx = torch.cat((idx, nxt), dim=1)  # (B, T + 1)
        return idx
        # END SOLUTION


def n_params(V, T_max, d, n_layer):
    """The parameter count of GPT(V, T_max, d, h, n_layer), from the README's formula (h drops out)."""
    per_block = 12 * d * d + 9 * d  # attention 4d^2, MLP 8d^2 + 5d, two LayerNorms 4d
    return 2 * V * d + T_max * d + n_layer * per_block + 2 * d  # embeddings, blocks, ln_f, head
