"""lab-02 task 3's curated bugs: the KV cache's named traps, each a copy of kvcache.py that commits one.

`broken(module, bug)` changes a freshly loaded copy of kvcache.py (common.loader.load_fresh): a
line of the reference replaced (`old` -> `new`), or a function swapped (`inject`); its functions
look each other up by name, so a swapped next_logits is the one generate calls.
"""

from types import ModuleType

from common.bugs import Bug, commit

__all__ = ["BUGS", "broken"]  # BUGS: the cache's rows of the handout's symptom table, in its order


def broken(fresh: ModuleType, bug: Bug) -> ModuleType:
    """Make a freshly imported copy of kvcache.py commit `bug`."""
    return commit(fresh, bug)


def _new_keys_only(m):
    def append(self, layer, k, v):
        self.keys[layer], self.values[layer] = k, v  # the held positions dropped: no cache at all
        return k, v

    m.KVCache.append = append


def _sliding(m):
    def next_logits(model, idx, cache=None):
        m.check_state(model, idx, cache)
        if cache is None:
            cache = m.KVCache(model, idx.shape[0])
            return m.forward_cached(model, idx[:, -model.T_max :], cache)[:, -1, :], cache
        if cache.length == model.T_max:  # full: the oldest position dropped, the rest kept as is
            cache.keys = [k[:, :, 1:] for k in cache.keys]  # (B, h, T_max - 1, d_head) each
            cache.values = [v[:, :, 1:] for v in cache.values]
        return m.forward_cached(model, idx[:, -1:], cache)[:, -1, :], cache

    m.next_logits = next_logits


BUGS = [
    Bug(
        "position 0 every step",
        "the prefill is right, then every new id is embedded at position 0: the logits of the "
        "first generated position already differ from the uncached model's",
        "a new id sits at the position after the ones the cache holds, not at the start (task 3c); "
        "look at the positions forward_cached embeds",
        old="x = model.tok_emb(idx) + model.pos_emb(torch.arange(P, P + t))",
        new="x = model.tok_emb(idx) + model.pos_emb(torch.arange(t))",
        says="the positions of three calls",
        passes=(
            "test_the_prefill_gives_the_uncached_logits",
            "test_the_cache_holds_2_n_layer_B_h_T_d_head_numbers",
        ),
    ),
    Bug(
        "the cache slides past T_max",
        "equal to the uncached model up to T_max, different after: the full cache drops its "
        "oldest position and keeps the rest, whose keys were made at other positions",
        "every cached key has its position's embedding in it, and the layers above the first saw "
        "tokens that have left the window: a full cache is made again from the window (task 3d); "
        "look at what next_logits does when the cache holds T_max positions",
        inject=_sliding,
        says="ids (past T_max)",
        passes=("test_one_new_id_gives_the_uncached_last_row",),
    ),
    Bug(
        "the cache never rebuilt",
        "generation stops at T_max ids with the cache's own error, 'so at most 0 more fit'",
        "past T_max the window moves each step, and a full cache cannot take another position: "
        "start a new one from the window (task 3d); look at the cases next_logits tells apart",
        old="if cache is None or cache.length == model.T_max:",
        new="if cache is None:",
        says="so at most 0 more fit",
        passes=("test_one_new_id_gives_the_uncached_last_row",),
    ),
    Bug(
        "only the new keys kept",
        "the prefill is right, then each new query attends only to itself: the cache holds one "
        "position",
        "append adds the new keys and values after the held ones and returns all of them "
        "(task 3a); look at what append keeps",
        inject=_new_keys_only,
        says="keys after two appends",
        passes=("test_the_prefill_gives_the_uncached_logits",),
    ),
    Bug(
        "the mask's rows not offset",
        "a new query at position P reads the causal mask's row 0: it sees key 0 alone",
        "the new queries are rows P to P + t - 1 of the causal mask, over keys 0 to P + t - 1 "
        "(task 3b); look at which rows of tril cached_attention cuts",
        old="mask = attn.heads[0].tril[T - t : T, :T]",
        new="mask = attn.heads[0].tril[:t, :T]",
        says="cached attention",
        passes=(
            "test_append_joins_the_new_positions_after_the_held_ones",
            "test_cached_attention_of_a_prefill_is_step_5_causal_attention",
        ),
    ),
    Bug(
        "no causal mask in the prefill",
        "one new id at a time is right (it may see every key), but the prompt's positions see "
        "the future in the prefill, and their keys carry it into every later step",
        "the prefill is t > 1 new queries at once, and each keeps only the keys up to its own "
        "position (task 3b); look at the mask cached_attention applies",
        old='scores = scores.masked_fill(mask == 0, float("-inf"))',
        new="pass",
        says="the prefill's attention",
    ),
]
