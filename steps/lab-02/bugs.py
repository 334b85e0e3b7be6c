"""lab-02's curated bugs (step.toml [mutation]): the named traps of positions and dropout (in layers.py) and of the KV cache (in kvcache.py), each a replacement in the reference."""

from common.course.bugs import Bug

# the rows of the handout's symptom table, in its order
BUGS = [
    Bug(
        "sin and cos in halves",
        "the trap, sin and cos in halves: every sine in the first d / 2 columns and every cosine in the last: bounded and smooth, "
        "but no column pair is one angle any more",
        "the course's layout interleaves the two: pair i is the columns 2i (sin) and 2i + 1 (cos) "
        "of one angle (task 1.1); look at which columns sinusoidal writes the sines and cosines into",
        old="return pe.to(torch.float32)",
        new="return torch.cat((torch.sin(angle), torch.cos(angle)), dim=1).to(torch.float32)",
        says="the halves layout",
        passes=("test_sinusoidal_is_T_by_d_and_bounded",),
        fails="test_positions.py::test_sinusoidal_matches_the_papers_formula_computed_one_entry_at_a_time",
    ),
    Bug(
        "sin and cos swapped in each pair",
        "every pair holds (cos, sin) instead of (sin, cos): position 0 reads (1, 0), and the "
        "table is no longer the paper's PE(pos, 2i) = sin",
        "the sine of pair i goes in the even column 2i and its cosine in the odd column 2i + 1 "
        "(task 1.1); look at which of the two sinusoidal writes into the even columns",
        old="pe[:, 0::2] = torch.sin(angle)  # (T, d/2) the even columns\n"
        "    pe[:, 1::2] = torch.cos(angle)",
        new="pe[:, 0::2] = torch.cos(angle)  # (T, d/2) the even columns\n"
        "    pe[:, 1::2] = torch.sin(angle)",
        says="sin and cos swapped inside each pair",
        passes=("test_sinusoidal_is_T_by_d_and_bounded",),
        fails="test_positions.py::test_sinusoidal_matches_the_papers_formula_computed_one_entry_at_a_time",
    ),
    Bug(
        "angles in float32",
        "right for short sequences, off in the fourth decimal at position 10^4: the angles "
        "pos · ω were computed in float32",
        "float32 keeps about seven digits, so pos · ω near 10^4 keeps three decimals: compute the "
        "angles in float64 and return the table in float32 (task 1.1); look at the dtype of the "
        "positions, of the frequencies ω and of the angles",
        old="angle = torch.outer(torch.arange(T, dtype=torch.float64), frequencies(d // 2, d))",
        new="angle = torch.outer(torch.arange(T, dtype=torch.float32), "
        "frequencies(d // 2, d).float())",
        says="compute the angles in float64",
        passes=("test_sinusoidal_matches_the_papers_formula_computed_one_entry_at_a_time",),
        fails="test_positions.py::test_sinusoidal_keeps_every_digit_at_position_10000",
    ),
    Bug(
        "RoPE in halves (GPT-NeoX pairing)",
        "the trap, RoPE in halves (GPT-NeoX pairing): norms kept, position 0 the identity, scores relative: every property holds, yet weights "
        "trained with the paper's pairing read other positions",
        "this course pairs adjacent columns (2i, 2i + 1) as the paper does; column i with column "
        "i + d_head / 2 is GPT-NeoX's and Llama's convention (task 1.2); look at which columns rope "
        "takes as a pair",
        old="a, b = x[..., 0::2], x[..., 1::2]",
        new="a, b = x[..., : d_head // 2], x[..., d_head // 2 :]; "
        "return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)",
        says="GPT-NeoX's halves",
        passes=("test_rope_keeps_every_rows_norm", "test_rope_scores_depend_on_n_minus_m_only"),
        fails="test_positions.py::test_rope_matches_the_complex_number_computation[0]",
    ),
    Bug(
        "RoPE turned the wrong way",
        "norms kept, position 0 the identity, scores relative, but each pair turns clockwise: "
        "the angle's sign is flipped, another model's positions",
        "a pair (a, b) turned by the angle θ is (a cos θ - b sin θ, a sin θ + b cos θ) (task 1.2, "
        "HINT 1); look at the signs of the two products with sin",
        old="turned = torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1)",
        new="turned = torch.stack((a * cos + b * sin, b * cos - a * sin), dim=-1)",
        says="the angle's sign flipped",
        passes=("test_rope_keeps_every_rows_norm", "test_rope_scores_depend_on_n_minus_m_only"),
        fails="test_positions.py::test_rope_turns_each_pair_by_plus_m_omega_counterclockwise",
    ),
    Bug(
        "RoPE returns float64",
        "every value right, but a float32 x comes back float64, and the next matmul with a "
        "float32 weight refuses: 'expected m1 and m2 to have the same dtype'",
        "the angles are float64 for their digits, then cos and sin are cast to x's dtype, so rope "
        "returns what it was given (task 1.2); look at the dtype of cos and sin",
        old="cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)",
        new="cos, sin = angle.cos(), angle.sin()",
        says="cast cos and sin to x's dtype",
        passes=("test_rope_matches_the_complex_number_computation[0]",),
        fails="test_positions.py::test_rope_returns_the_dtype_of_x[torch.float32]",
    ),
    Bug(
        "RoPE casts to float32",
        "right for a float32 or float64 x, but a bfloat16 x comes back float32: cos and sin cast "
        "to one dtype of their own (float32, float16), not to x's dtype, promote it",
        "the angles are float64 for their digits, then cos and sin are cast to x's dtype, whatever "
        "it is, so rope returns what it was given (task 1.2); look at the dtype cos and sin are "
        "cast to",
        old="cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)",
        new="cos, sin = angle.cos().float(), angle.sin().float()",
        says="cast cos and sin to x's dtype",
        passes=(  # x's own digits kept at angle 0: an x cast to float32 is not this bug
            "test_rope_returns_the_dtype_of_x[torch.float32]",
            "test_rope_at_position_0_is_the_identity",
        ),
        fails="test_positions.py::test_rope_returns_the_dtype_of_x[torch.bfloat16]",
    ),
    Bug(
        "start ignored (position 0 every call)",
        "position 0 every call: right for a whole sequence, wrong for any row that does not start at 0: a token "
        "generated one at a time is always at position 0",
        "row t of x sits at position start + t (task 1.2); look at the positions rope turns by",
        old="positions = torch.arange(start, start + T, dtype=torch.float64)",
        new="positions = torch.arange(0, T, dtype=torch.float64)",
        says="as if the rows started at position 0",
        passes=("test_rope_matches_the_complex_number_computation[0]",),
        fails="test_positions.py::test_rope_matches_the_complex_number_computation[7]",
    ),
    Bug(
        "scale forgotten",
        "the trap, the scale forgotten: the right share of zeros, but the kept entries stay as they were: the training mean is "
        "(1 - p) times the eval mean, and a model trained with it sees bigger activations in eval",
        "inverted dropout divides every kept entry by 1 - p so that the mean is kept and eval needs "
        "no scaling (task 2, on paper); look at what dropout returns",
        old="return x * keep / (1 - p)",
        new="return x * keep",
        says="yours kept its value",
        passes=("test_dropout_zeros_a_share_p_within_binomial_bounds[0.5]",),
        fails="test_dropout.py::test_dropout_keeps_the_mean[0.1]",
    ),
    Bug(
        "dropout in place",
        "the output is right, but x itself is zeroed and scaled: the caller's activations (a "
        "residual stream, the eval pass after) change behind its back",
        "dropout returns a new tensor and leaves x as it was (task 2); look for an in-place "
        "operation on x: a method ending in _, or an assignment into x[...]",
        old="return x * keep / (1 - p)",
        new="return x.mul_(keep).div_(1 - p)",
        says="an in-place op",
        passes=("test_dropout_keeps_the_mean[0.5]",),
        fails="test_dropout.py::test_dropout_leaves_its_input_unchanged",
    ),
    Bug(
        "dropout mask in float32",
        "right for a float32 or float64 x, but a bfloat16 or float16 x comes back float32: the "
        "mask, made float32, promotes it",
        "the mask is made in x's dtype (or kept bool), so dropout returns what it was given "
        "(task 2); look at the dtype of the mask",
        old="keep = torch.rand(x.shape, generator=generator) >= p",
        new="keep = (torch.rand(x.shape, generator=generator) >= p).float()",
        says="make the mask in x's dtype",
        passes=(  # a float32 mask keeps a float64 x float64: a float64 x made float32 is another
            "test_dropout_keeps_the_shape_and_dtype[torch.float32]",
            "test_dropout_keeps_the_shape_and_dtype[torch.float64]",
        ),
        fails="test_dropout.py::test_dropout_keeps_the_shape_and_dtype[torch.bfloat16]",
    ),
    Bug(
        "p kept, not dropped",
        "at p = 0.1 nine entries in ten are zero: p read as the share kept",
        "p is the probability of dropping an entry: each one is kept with probability 1 - p "
        "(task 2); look at the comparison that makes the mask, and at which entries the "
        "output zeros",
        old="keep = torch.rand(x.shape, generator=generator) >= p",
        new="keep = torch.rand(x.shape, generator=generator) < p",
        says="p is the share dropped",
        fails="test_dropout.py::test_dropout_zeros_a_share_p_within_binomial_bounds[0.1]",
    ),
    Bug(
        "dropout in eval mode",
        "the validation loss is noisy and one batch gives two numbers: a mask drawn in eval mode",
        "in eval mode (training False) dropout returns x unchanged (task 2); look at when dropout "
        "returns before drawing a mask",
        old="if not training or p == 0:",
        new="if p == 0:",
        says="a mask was drawn in eval mode",
        fails="test_dropout.py::test_dropout_is_the_identity_in_eval_mode[0.3]",
    ),
    Bug(
        "NaN at p = 1",
        "p = 1 gives NaN instead of zeros: 0 / 0 in the scale",
        "at p = 1 every entry is dropped and 1 / (1 - p) is a division by zero: that case returns "
        "zeros before any scaling (task 2); look at what dropout does when p is 1",
        old="return torch.zeros_like(x)",
        new="pass",
        says="1 / (1 - p) is 1 / 0",
        fails="test_dropout.py::test_dropout_at_p_1_gives_zeros_not_nan",
    ),
    Bug(
        "generator ignored",
        "two runs from one seed differ: the mask comes from the global random state",
        "every draw takes the generator it is given, so the same seed gives the same mask "
        "(task 2); look at what draws the mask",
        old="keep = torch.rand(x.shape, generator=generator) >= p",
        new="keep = torch.rand(x.shape) >= p",
        says="drawn from the generator passed in",
        fails="test_dropout.py::test_dropout_same_seed_same_mask_other_seed_other_mask",
    ),
    # task 3, the KV cache: replacements in kvcache.py
    Bug(
        "position 0 every step",
        "the prefill is right, then every new id is embedded at position 0: the logits of the "
        "first generated position already differ from the uncached model's",
        "a new id sits at the position after the ones the cache holds, not at the start (task 3c); "
        "look at the positions forward_cached embeds",
        module="kvcache",
        old="x = model.tok_emb(idx) + model.pos_emb(torch.arange(P, P + t))",
        new="x = model.tok_emb(idx) + model.pos_emb(torch.arange(t))",
        says="not 0 each call",
        passes=(
            "test_the_prefill_gives_the_uncached_logits",
            "test_the_cache_holds_2_n_layer_B_h_T_d_head_numbers",
        ),
        fails="test_kvcache.py::test_new_ids_are_embedded_at_the_positions_after_the_cached_ones",
    ),
    Bug(
        "the cache slides past T_max",
        "equal to the uncached model up to T_max, different after: the full cache drops its "
        "oldest position and keeps the rest, whose keys were made at other positions",
        "every cached key has its position's embedding in it, and the layers above the first saw "
        "tokens that have left the window: a full cache is made again from the window (task 3d); "
        "look at what next_logits does when the cache holds T_max positions",
        module="kvcache",
        old="if cache is None or cache.length == model.T_max:  # start, or restart from the window\n"
        "        cache = KVCache(model, idx.shape[0])\n",
        new="if cache is not None and cache.length == model.T_max:  # full: the oldest dropped\n"
        "        cache.keys = [k[:, :, 1:] for k in cache.keys]  # (B, h, T_max - 1, d_head) each\n"
        "        cache.values = [v[:, :, 1:] for v in cache.values]\n"
        "    if cache is None:\n"
        "        cache = KVCache(model, idx.shape[0])\n",
        says="the full cache slid",
        passes=("test_one_new_id_gives_the_uncached_last_row",),
        fails="test_kvcache.py::test_logits_at_every_generated_position_equal_the_uncached_models",
    ),
    Bug(
        "the cache never rebuilt",
        "generation stops at T_max ids with the cache's own error, 'so at most 0 more fit'",
        "past T_max the window moves each step, and a full cache cannot take another position: "
        "start a new one from the window (task 3d); look at the cases next_logits tells apart",
        module="kvcache",
        old="if cache is None or cache.length == model.T_max:",
        new="if cache is None:",
        says="so at most 0 more fit",
        passes=("test_one_new_id_gives_the_uncached_last_row",),
        fails="test_kvcache.py::test_logits_at_every_generated_position_equal_the_uncached_models",
    ),
    Bug(
        "only the new keys kept",
        "the prefill is right, then each new query attends only to itself, as if the cache "
        "held one position",
        "append adds the new keys and values after the held ones and returns all of them "
        "(task 3a); look at what append keeps",
        module="kvcache",
        old="self.keys[layer] = k if self.keys[layer] is None else torch.cat((self.keys[layer], k), 2)\n"
        "        self.values[layer] = (\n"
        "            v if self.values[layer] is None else torch.cat((self.values[layer], v), 2)\n"
        "        )\n",
        new="self.keys[layer], self.values[layer] = k, v  # the held positions dropped\n",
        says="yours kept only the",
        passes=("test_the_prefill_gives_the_uncached_logits",),
        fails="test_kvcache.py::test_append_joins_the_new_positions_after_the_held_ones",
    ),
    Bug(
        "append along the last axis",
        "the first append is right, the second raises: new keys are joined along d_head, not "
        "along the positions",
        "keys and values are (B, h, t, d_head): the positions are axis 2, and append joins along "
        "it (task 3a); look at the axis append joins on",
        module="kvcache",
        old="torch.cat((self.keys[layer], k), 2)",
        new="torch.cat((self.keys[layer], k), -1)",
        says="joined along axis 3 (d_head)",
        passes=("test_the_prefill_gives_the_uncached_logits",),
        fails="test_kvcache.py::test_append_joins_the_new_positions_after_the_held_ones",
    ),
    Bug(
        "the mask's rows not offset",
        "a new query at position P reads the causal mask's row 0: it sees key 0 alone",
        "the new queries are rows P to P + t - 1 of the causal mask, over keys 0 to P + t - 1 "
        "(task 3b); look at which rows of tril cached_attention cuts (is_causal=True, in torch's "
        "attention, cuts the first t)",
        module="kvcache",
        old="mask = attn.heads[0].tril[T - t : T, :T]",
        new="mask = attn.heads[0].tril[:t, :T]",
        says="each new query at its own row",
        passes=(
            "test_append_joins_the_new_positions_after_the_held_ones",
            "test_cached_attention_of_a_prefill_is_step_5_causal_attention",
        ),
        fails="test_kvcache.py::test_cached_attention_gives_step_5_attention_at_the_new_rows",
    ),
    Bug(
        "the mask cut to the new positions",
        "the prefill is right, then torch refuses the mask: t x t of it against scores over all "
        "P + t keys",
        "the new queries are rows P to P + t - 1 of the causal mask, and each row covers every "
        "key, 0 to P + t - 1 (task 3b); look at the columns of tril cached_attention keeps",
        module="kvcache",
        old="mask = attn.heads[0].tril[T - t : T, :T]",
        new="mask = attn.heads[0].tril[:t, :t]",
        says="your mask is t x t",
        passes=("test_cached_attention_of_a_prefill_is_step_5_causal_attention",),
        fails="test_kvcache.py::test_cached_attention_gives_step_5_attention_at_the_new_rows",
    ),
    Bug(
        "no causal mask in the prefill",
        "one new id at a time is right (it may see every key), but the prompt's positions see "
        "the future in the prefill, and their keys carry it into every later step",
        "the prefill is t > 1 new queries at once, and each keeps only the keys up to its own "
        "position (task 3b); look at the mask cached_attention applies",
        module="kvcache",
        old='scores = scores.masked_fill(mask == 0, float("-inf"))',
        new="pass",
        says="the others saw later keys",
        fails="test_kvcache.py::test_cached_attention_of_a_prefill_is_step_5_causal_attention",
    ),
    Bug(
        "no residual around the cached attention",
        "even the prefill differs from Step 5's logits: the block's attention replaces x instead "
        "of adding to it",
        "each block adds its attention and its MLP to x, as Step 5's Block.forward does (task "
        "3c); look at what forward_cached assigns to x in each block",
        module="kvcache",
        old="x = x + cached_attention(block.attn, block.ln1(x), cache, layer)",
        new="x = cached_attention(block.attn, block.ln1(x), cache, layer)",
        says="instead of adding to it",
        passes=("test_cached_attention_of_a_prefill_is_step_5_causal_attention",),
        fails="test_kvcache.py::test_the_prefill_gives_the_uncached_logits",
    ),
]


# Survivors of python -m tools.mutate that no test can kill (step.toml [mutation] equivalent),
# keyed as its Mutant.key: "<module> <function>: <before> => <after>", with the reason.
EQUIVALENT: dict[str, str] = {
    "layers sinusoidal: angle = torch.outer(torch.arange(T, dtype=torch.float64), "
    "frequencies(d // 2, d)) => angle = torch.outer(torch.arange(T, dtype=torch.float64), "
    "frequencies(d / 2, d))": (
        "d is even (check_size): d / 2 is a whole float, and arange(4.0, dtype=float64) is arange(4)"
    ),
    "layers rope: angle = torch.outer(positions, frequencies(d_head // 2, d_head)) => "
    "angle = torch.outer(positions, frequencies(d_head / 2, d_head))": (
        "d_head is even (check_rope_input): d_head / 2 is a whole float, the same arange"
    ),
    "layers dropout: if not training or p == 0: => if not training or p == -1:": (
        "at p = 0 the mask keeps every entry (rand >= 0) and the scale is 1 / 1: the same values, "
        "in a new tensor, and the contract does not ask for the same object"
    ),
    "layers dropout: keep = torch.rand(x.shape, generator=generator) >= p => "
    "keep = torch.rand(x.shape, generator=generator) > p": (
        "the two differ only where a draw equals p exactly, one draw in 2**24 at most: no share or "
        "mean test can see it"
    ),
}
