"""lab-02 task 3: the KV cache. Step 5's GPT, unchanged, generating one position per forward."""

import torch
import torch.nn.functional as F

from common import counted
from common.loader import reference

# Step 5's reference GPT, through the one route to an earlier step's code: the cache reads its
# weights and changes none of them, so the same model runs with and without it.
gpt5 = reference("step-05", "gpt")
GPT = gpt5.GPT


def cache_numbers(n_layer, B, h, T, d_head):
    """How many numbers a full cache holds: a key and a value of d_head per layer, sequence, head, position."""
    return 2 * n_layer * B * h * T * d_head


class KVCache:
    """Per layer, the keys and values of every position seen so far: n_layer pairs of (B, h, t, d_head)."""

    def __init__(self, model, B, dtype=None):
        if isinstance(B, bool) or not isinstance(B, int) or B < 1:
            raise ValueError(f"B must be a positive int, got {B!r}")
        self.B, self.T_max, self.h = B, model.T_max, model.h
        self.dtype = model.lm_head.weight.dtype if dtype is None else dtype
        self.keys = [None] * model.n_layer  # layer -> (B, h, t, d_head), None before the prefill
        self.values = [None] * model.n_layer  # layer -> (B, h, t, d_head)

    @property
    def length(self):
        """The positions held: t of the last layer's (B, h, t, d_head), 0 before the prefill."""
        # the last layer: during a forward the earlier layers already hold the new positions
        return 0 if self.keys[-1] is None else self.keys[-1].shape[2]

    def numel(self):
        """The numbers the cache holds, counted on its tensors."""
        return sum(t.numel() for t in self.keys + self.values if t is not None)

    def append(self, layer, k, v):
        """Add the new positions' keys and values (B, h, t, d_head) to `layer`'s; return all of them."""
        raise NotImplementedError(
            "TODO(lab-02 task 3a: KVCache.append): return the pair (keys, values) this layer holds after the append, each (B, h, P + t, d_head): the P positions held before, then the t new ones, in order along the position axis; the cache's two lists keep them at the layer's index. Property: after a forward of T positions the cache holds 2 * n_layer * B * h * T * d_head numbers (the handout's count). The trap: keeping only the new keys, so each query sees itself alone."
        )


def check_cache(model, idx, cache):
    """Refuse ids a cache cannot take: another batch size or dtype, or more positions than fit."""
    gpt5.check_ids(idx, model.V)
    if not isinstance(cache, KVCache):
        raise ValueError(f"cache must be a KVCache, got {type(cache).__name__}")
    dtype = model.lm_head.weight.dtype
    if cache.dtype != dtype:
        raise ValueError(
            f"the cache holds {cache.dtype} keys and values, but the model's weights are {dtype}; "
            "make the cache after model.to(dtype): KVCache(model, B)"
        )
    B, t = idx.shape
    if B == 1 and t == cache.B != 1 and cache.length:  # one new id per sequence laid across
        raise ValueError(
            f"ids {tuple(idx.shape)} for a cache of batch size B={cache.B}: one new id per "
            f"sequence is ({cache.B}, 1), B rows of one position; idx[:, -1:] keeps that axis"
        )
    if B != cache.B:
        raise ValueError(
            f"the cache was made for batch size B={cache.B}, got ids of batch size B={B}; "
            f"make one per batch: KVCache(model, {B})"
        )
    if cache.length + t > cache.T_max:
        raise ValueError(
            f"the cache holds {cache.length} of T_max={cache.T_max} positions, so at most "
            f"{cache.T_max - cache.length} more fit, got {t}; a new cache starts from each "
            f"row's last T_max ids, idx[:, -{cache.T_max}:] (axis 1: idx is (B, T))"
        )


def cached_attention(attn, x, cache, layer):
    """Step 5's multi-head attention for the new positions x (B, t, d), over every cached key: (B, t, d)."""
    raise NotImplementedError(
        "TODO(lab-02 task 3b: cached_attention): for the t newest positions x (B, t, d) of a sequence whose first P positions the cache holds, return (B, t, d): what attn(x_all) (Step 5's MultiHeadAttention on all P + t positions) gives at its last t rows. Each head computes the new queries, keys and values with its own weights; the new keys and values join the cache (task 3a); each new query at position P + i attends the cached keys 0 to P + i; then the heads side by side, then proj. The trap: the causal mask cut as [:t, :t] or dropped, when the new queries sit at rows P to P + t - 1 of it."
    )


def forward_cached(model, idx, cache):
    """Logits (B, t, V) of the t new ids idx (B, t), the cache holding the positions before them."""
    check_cache(model, idx, cache)
    raise NotImplementedError(
        "TODO(lab-02 task 3c: forward_cached): return the logits (B, t, V) that model(all ids)[0] gives at its last t positions, running the model on the t new ids only: embed them at their own positions P to P + t - 1, P being what the cache held before the call, then each block with the cached attention of its layer (task 3b) in place of its attention, then ln_f and lm_head. Property: the prefill (P = 0) gives model(idx)[0]. The trap: positions 0 to t - 1 on every call, so each new token is embedded at position 0."
    )


def check_state(model, idx, cache):
    """Refuse a cache that does not hold what next_logits left in it: all of idx but its last id, or T_max."""
    gpt5.check_ids(idx, model.V)
    if cache is None:
        return
    T = idx.shape[1]
    if cache.length not in (cache.T_max, T - 1):
        why = (  # which way it is off says who fed what
            "more: an id went in twice (next_logits's forward_cached call fed more than the "
            "newest id, or idx is not one id longer than at the last call)"
            if cache.length >= T
            else "fewer: an id never went in (the prefill's forward_cached call fed fewer ids "
            "than idx's last T_max?)"
        )
        raise ValueError(
            f"the cache holds {counted(cache.length, 'position')} and idx has T={T}: next_logits "
            f"feeds the cache one id a call, so it must hold T - 1 = {T - 1} (or T_max="
            f"{cache.T_max}, full); it holds {why}; pass the cache it returned with idx one id "
            "longer, or cache=None to start again"
        )


def next_logits(model, idx, cache=None):
    """Logits (B, V) of the id after idx (B, T), and the cache, which now holds the ids it was fed."""
    check_state(model, idx, cache)
    raise NotImplementedError(
        "TODO(lab-02 task 3d: next_logits): return the pair (logits (B, V), cache): the logits are Step 5's uncached ones, the last row of the model's logits on the last T_max ids at most. With no cache, make one and prefill it with those ids in one forward; with a cache that holds all of idx but its newest id, feed that one id; with a full cache (T_max positions), make a new one and prefill it again. Property: past T_max the equality holds too. The trap: sliding the full cache (dropping its oldest position), when each cached key has its position's embedding baked in and was computed by layers that saw tokens now out of the window."
    )


def generate(model, idx, max_new_tokens, temperature=1.0, generator=None, greedy=False):
    """Step 5's generate with the cache: idx (B, T) then max_new_tokens ids, (B, T + max_new_tokens)."""
    gpt5.check_ids(idx, model.V)
    gpt5.check_sampling(max_new_tokens, temperature, generator)
    cache = None
    with torch.no_grad():  # sampling trains nothing: no graph to keep
        for _ in range(max_new_tokens):
            logits, cache = next_logits(model, idx, cache)  # (B, V)
            if greedy:  # the likeliest id, no draw: what the tests compare token for token
                nxt = logits.argmax(dim=-1, keepdim=True)  # (B, 1)
            else:  # Step 5's draw, the same generator calls in the same order
                probs = F.softmax(logits / temperature, dim=-1)  # (B, V)
                nxt = torch.multinomial(probs, num_samples=1, generator=generator)  # (B, 1)
            idx = torch.cat((idx, nxt), dim=1)  # (B, T + 1)
    return idx
