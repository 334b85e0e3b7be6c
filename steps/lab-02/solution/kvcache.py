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
        # BEGIN SOLUTION TODO(lab-02 task 3a: KVCache.append)
        # CONTRACT: return the pair (keys, values) this layer holds after the append, each (B, h,
        #   P + t, d_head): the P positions held before, then the t new ones, in order along the
        #   position axis; the cache's two lists keep them at the layer's index. Property: after a
        #   forward of T positions the cache holds 2 * n_layer * B * h * T * d_head numbers (the
        #   handout's count). The trap: keeping only the new keys, so each query sees itself alone.
        # HINT 1: the first append of a layer finds None and stores the new tensors; every later
        #   one joins the new positions after the old.
        # HINT 2: torch.cat over the position axis, axis 2 of (B, h, t, d_head).
        # HINT 3: self.keys[layer] = k if self.keys[layer] is None else torch.cat((___, k),
        #   dim=___); the same for values; return self.keys[layer], self.values[layer]
        self.keys[layer] = k if self.keys[layer] is None else torch.cat((self.keys[layer], k), 2)
        self.values[layer] = (
            v if self.values[layer] is None else torch.cat((self.values[layer], v), 2)
        )
        return self.keys[layer], self.values[layer]  # (B, h, P + t, d_head) each
        # END SOLUTION


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
    # BEGIN SOLUTION TODO(lab-02 task 3b: cached_attention)
    # CONTRACT: for the t newest positions x (B, t, d) of a sequence whose first P positions the
    #   cache holds, return (B, t, d): what attn(x_all) (Step 5's MultiHeadAttention on all P + t
    #   positions) gives at its last t rows. Each head computes the new queries, keys and values
    #   with its own weights; the new keys and values join the cache (task 3a); each new query at
    #   position P + i attends the cached keys 0 to P + i; then the heads side by side, then proj.
    #   The trap: the causal mask cut as [:t, :t] or dropped, when the new queries sit at rows P
    #   to P + t - 1 of it.
    # HINT 1: the same three projections and the same softmax as Step 4's Head, with the keys and
    #   values read back from the cache; stacking the heads on axis 1 does all of them at once.
    # HINT 2: torch.stack([head.query(x) for head in attn.heads], dim=1) is (B, h, t, d_head);
    #   a head's tril buffer, rows P to P + t and columns 0 to P + t, is the mask of the new queries.
    # HINT 3: K, V = cache.append(layer, k, v); T = K.shape[2]; scores = q @ K.transpose(-2, -1)
    #   / ___; scores = scores.masked_fill(attn.heads[0].tril[T - t : T, :T] == 0, ___);
    #   out = (F.softmax(scores, dim=-1) @ V).transpose(1, 2).flatten(2); return attn.proj(out)
    t = x.shape[1]  # x: (B, t, d)
    q = torch.stack(
        [head.query(x) for head in attn.heads], dim=1
    )  # h x (B, t, d_head) -> (B, h, t, d_head)
    k = torch.stack([head.key(x) for head in attn.heads], dim=1)  # (B, h, t, d_head)
    v = torch.stack([head.value(x) for head in attn.heads], dim=1)  # (B, h, t, d_head)
    K, V = cache.append(layer, k, v)  # (B, h, T, d_head) each, T = P + t
    T = K.shape[2]
    scores = q @ K.transpose(-2, -1)  # (B, h, t, d_head) @ (B, h, d_head, T) -> (B, h, t, T)
    scores = scores / K.shape[-1] ** 0.5  # (B, h, t, T)
    mask = attn.heads[0].tril[T - t : T, :T]  # (t, T): query P + i keeps keys j <= P + i
    scores = scores.masked_fill(mask == 0, float("-inf"))  # (B, h, t, T)
    A = F.softmax(scores, dim=-1)  # (B, h, t, T)
    out = (A @ V).transpose(1, 2).flatten(2)  # (B, h, t, d_head) -> (B, t, h, d_head) -> (B, t, d)
    return attn.proj(out)  # (B, t, d)
    # END SOLUTION


def forward_cached(model, idx, cache):
    """Logits (B, t, V) of the t new ids idx (B, t), the cache holding the positions before them."""
    check_cache(model, idx, cache)
    # BEGIN SOLUTION TODO(lab-02 task 3c: forward_cached)
    # CONTRACT: return the logits (B, t, V) that model(all ids)[0] gives at its last t positions,
    #   running the model on the t new ids only: embed them at their own positions P to P + t - 1,
    #   P being what the cache held before the call, then each block with the cached attention of
    #   its layer (task 3b) in place of its attention, then ln_f and lm_head. Property: the
    #   prefill (P = 0) gives model(idx)[0]. The trap: positions 0 to t - 1 on every call, so
    #   each new token is embedded at position 0.
    # HINT 1: Step 5's GPT.forward and Block.forward, line by line, with one change in each: the
    #   positions start at P, and the attention is the cached one.
    # HINT 2: torch.arange(P, P + t); enumerate(model.blocks) gives each block its layer number;
    #   block.ln1, block.attn, block.ln2, block.mlp are the block's parts.
    # HINT 3: P = cache.___; x = model.tok_emb(idx) + model.pos_emb(torch.arange(___, ___));
    #   for layer, block in enumerate(model.blocks): x = x + cached_attention(block.attn,
    #   block.ln1(x), cache, ___); x = x + block.mlp(___); return model.lm_head(model.ln_f(x))
    B, t = idx.shape  # idx: (B, t)
    P = cache.length  # positions held before this call; the new ids sit at P to P + t - 1
    x = model.tok_emb(idx) + model.pos_emb(torch.arange(P, P + t))  # (B, t, d) + (t, d)
    for layer, block in enumerate(model.blocks):
        x = x + cached_attention(block.attn, block.ln1(x), cache, layer)  # (B, t, d)
        x = x + block.mlp(block.ln2(x))  # (B, t, d)
    return model.lm_head(model.ln_f(x))  # (B, t, d) -> (B, t, V)
    # END SOLUTION


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
    # BEGIN SOLUTION TODO(lab-02 task 3d: next_logits)
    # CONTRACT: return the pair (logits (B, V), cache): the logits are Step 5's uncached ones, the
    #   last row of the model's logits on the last T_max ids at most. With no cache, make one
    #   and prefill it with those ids in one forward; with a cache that holds all of idx but its
    #   newest id, feed that one id; with a full cache (T_max positions), make a new one and
    #   prefill it again. Property: past T_max the equality holds too. The trap: sliding the full
    #   cache (dropping its oldest position), when each cached key has its position's embedding
    #   baked in and was computed by layers that saw tokens now out of the window.
    # HINT 1: three cases, two of which do the same thing: start (or restart) from the window, or
    #   feed the newest id.
    # HINT 2: KVCache(model, B) makes an empty cache; forward_cached (task 3c) feeds it;
    #   [:, -1, :] keeps the last position's logits.
    # HINT 3: if cache is None or cache.length == ___: cache = KVCache(model, idx.shape[0]);
    #   new = idx[:, -model.T_max :]; else: new = idx[:, ___:]; return forward_cached(model,
    #   new, cache)[:, -1, :], cache
    if cache is None or cache.length == model.T_max:  # start, or restart from the window
        cache = KVCache(model, idx.shape[0])
        new = idx[:, -model.T_max :]  # (B, min(T, T_max)): the prefill
    else:
        new = idx[:, -1:]  # (B, 1): the one id the cache has not seen
    return forward_cached(model, new, cache)[:, -1, :], cache  # (B, V)
    # END SOLUTION


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
