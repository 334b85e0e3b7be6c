"""lab-01's curated bugs (step.toml [mutation]): each one replacement in attention.py, the handout's
symptom table, and the check's recorded screens (tools/screens.py) of lab-01 caught up with one;
Step 4's bugs reuse their words (steps/step-04/bugs.py)."""

from common.course.bugs import Bug

# lab-01's tests of the masks alone: a bug elsewhere leaves them passing (Step 4 has none)
MASK_TESTS = ("test_causal_mask_is_the_lower_triangle",)
PADDING_TESTS = ("test_combine_is_causal_and_padding",)
# at T = 1 both triangles, and no mask, are the one cell kept: a failure there is another mask's bug
ONE_CELL = ("test_causal_mask_is_the_lower_triangle[1]",)
# a padded key keeps weight 0 when the mask comes late or the softmax takes the wrong axis; a
# failure there is a bug of the fill (its value, or its polarity)
PADDED_KEYS = ("test_padded_keys_get_zero_weight",)
# lab-01's and Step 4's tests that each row of A sums to 1 over past keys: a bug that keeps that
# leaves them passing (a failure there is another bug: the mask's place, the softmax's axis)
ROW_TESTS = ("test_weights_above_the_diagonal_are_exactly_zero", "test_rows_are_in_the_simplex")
UPSTREAM = MASK_TESTS + PADDING_TESTS  # a bug after the masks leaves their tests
# a bug of the multi-head module leaves one head's attention right: a failure of these is not it
ONE_HEAD = (
    "test_weights_above_the_diagonal_are_exactly_zero",
    "test_unmasked_matches_sdpa",
    "test_changing_a_future_key_or_value_leaves_earlier_outputs_identical",
    "test_modules_with_a_causal_mask_isolate_earlier_tokens[SelfAttention]",
)
# a mistake of the scale, the mask's axes or the output projection keeps the heads causal
CAUSAL_HEADS = ("test_modules_with_a_causal_mask_isolate_earlier_tokens[MultiHeadSelfAttention]",)

# the rows of the handout's symptom table, in its order
BUGS = [
    Bug(
        "triu",
        "torch.triu instead of torch.tril: each query sees the future and loses its past",
        "the mask keeps the wrong triangle: a query may see itself and the keys before it, the lower "
        "triangle (lesson 5, 1.1); look at which triangle the causal mask is cut from",
        old="return torch.tril(torch.ones(",
        new="return torch.triu(torch.ones(",
        passes=ONE_CELL,
        fails="test_causal_isolation.py::test_causal_mask_is_the_lower_triangle[4]",
    ),
    Bug(
        "no mask",
        "every query attends to every key, future included",
        "no mask reaches the scores: the keys after each query must be blocked before the softmax; "
        "look at where the scores meet the mask",
        old="return torch.tril(torch.ones(seq_len, seq_len)).bool()",
        new="return torch.ones(seq_len, seq_len).bool()",
        passes=ONE_CELL,
        fails="test_causal_isolation.py::test_causal_mask_is_the_lower_triangle[4]",
    ),
    Bug(
        "inverted polarity",
        "~tril keeps only the strict future; the last row has no key left: NaN from F.softmax, "
        "zeros from lab-01's stable_softmax",
        "the polarity is flipped: True means may attend, so the scores to block are where the mask is "
        "False; look at the condition the fill is given",
        old='scores = scores.masked_fill(~mask, float("-inf"))',
        new='scores = scores.masked_fill(mask, float("-inf"))',
        passes=UPSTREAM,  # the masks are built right and read backwards
        fails="test_causal_isolation.py::test_weights_above_the_diagonal_are_exactly_zero[1-0]",
    ),
    Bug(
        "no diagonal",
        "tril(diagonal=-1): a token cannot see itself; row 0 is empty: NaN from F.softmax, zeros "
        "from lab-01's stable_softmax",
        "the diagonal is gone: a token may attend to itself (lesson 5, 1.1); look at how the lower "
        "triangle is built and which diagonal it starts from",
        old="torch.tril(torch.ones(seq_len, seq_len))",
        new="torch.tril(torch.ones(seq_len, seq_len), diagonal=-1)",
        fails="test_causal_isolation.py::test_causal_mask_is_the_lower_triangle[1]",
    ),
    Bug(
        "mask after softmax",
        "future weights zeroed after softmax: rows no longer sum to 1",
        "the mask comes too late: blocked keys get minus infinity as their score before the softmax, so "
        "each row is a probability vector over the keys it may see; look at the order of the two",
        old="weights = stable_softmax(scores, dim=-1)",
        new="weights = stable_softmax(q @ k.transpose(-2, -1) * scale, dim=-1)"
        " * (1.0 if mask is None else mask)",
        passes=(*UPSTREAM, *PADDED_KEYS, "test_unmasked_matches_sdpa"),
        fails="test_causal_isolation.py::test_weights_above_the_diagonal_are_exactly_zero[4-1]",
    ),
    Bug(
        "mask after softmax, renormalised",
        "equal to the right answer in exact arithmetic, but earlier rows now depend on the "
        "future through rounding of the full-row softmax",
        "masking the weights and renormalising is right only in exact arithmetic: the rounding of the "
        "full-row softmax carries the future in; look at the order of mask and softmax",
        old="weights = stable_softmax(scores, dim=-1)",
        new="weights = stable_softmax(q @ k.transpose(-2, -1) * scale, dim=-1)"
        " * (1.0 if mask is None else mask)\n"
        "    weights = weights / weights.sum(dim=-1, keepdim=True)",
        passes=UPSTREAM + ROW_TESTS,
        fails="test_causal_isolation.py::test_changing_a_future_key_or_value_leaves_earlier_outputs_identical[4-k]",
    ),
    Bug(
        "masked with 0 instead of -inf",
        "a zero score is an ordinary score: exp(0) gives the future real weight",
        "a blocked key needs a score whose exponential is exactly 0, minus infinity; look at the value "
        "the mask fills in",
        old='scores = scores.masked_fill(~mask, float("-inf"))',
        new="scores = scores.masked_fill(~mask, 0.0)",
        # its rows still sum to 1, and its small leak lets task 7's diagnostic see a missing mask
        passes=(
            *UPSTREAM,
            "test_the_shipped_mask_passes_shape_and_row_sum_checks",
            "test_diagnostic_catches_a_missing_mask",
        ),
        fails="test_causal_isolation.py::test_weights_above_the_diagonal_are_exactly_zero[4-1]",
    ),
    Bug(
        "no scale",
        "the scores grow with the head's width and the softmax saturates to one-hot rows; each row "
        "still sums to 1 and sees no later key, so only a comparison with the formula shows it",
        "the scores are not scaled: they are divided by the square root of one head's width "
        "(d_head, never d_model); look at where the scores are made",
        old="scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale",
        new="scale = 1.0 if scale is None else scale",
        passes=UPSTREAM + ROW_TESTS,
        fails="test_parity_torch.py::test_unmasked_matches_sdpa[B2-T8-0]",
    ),
    Bug(
        "softmax over the wrong axis",
        "softmax over queries (dim=-2): columns sum to 1, rows do not",
        "the softmax normalises each column: every row, one query, must sum to 1 over its keys, the "
        "last axis; look at the axis the softmax is given",
        old="weights = stable_softmax(scores, dim=-1)",
        new="weights = stable_softmax(scores, dim=-2)",
        # a mask applied after the softmax fails it; the wrong axis leaves it passing
        passes=(
            *UPSTREAM,
            *PADDED_KEYS,
            "test_changing_a_padding_token_changes_no_output_row",
        ),
        fails="test_causal_isolation.py::test_weights_above_the_diagonal_are_exactly_zero[4-1]",
    ),
    Bug(
        "| for &",
        "causal | padding lets a query see every real key, future ones included",
        "the masks are joined so that either one is enough: a key must be allowed by both, the causal "
        "mask and the padding; look at how the two are combined",
        old="return causal & padding",
        new="return causal | padding",
        passes=MASK_TESTS,
        fails="test_causal_isolation.py::test_combine_is_causal_and_padding",
    ),
    Bug(
        "padding inverted",
        "True read as 'pad': queries attend to padding and ignore real tokens",
        "the padding mask is read backwards: True marks a real token, a key to keep (lesson 5); look "
        "at how the padding enters the combination, and that it gets a query axis",
        old="causal & padding[:, None, :]",
        new="causal & ~padding[:, None, :]",
        passes=MASK_TESTS,
        fails="test_causal_isolation.py::test_combine_is_causal_and_padding",
    ),
    Bug(
        "no max shift",
        "large scores overflow exp: inf / inf gives NaN rows where the reference gives finite weights",
        "the softmax subtracts each row's largest entry before the exponential, so no entry exceeds 1 "
        "(task 1); look at what stable_softmax exponentiates",
        old="e = torch.exp(x - m)",
        new="e = torch.exp(x)",
        fails="test_stable_softmax.py::test_large_logits_stay_finite",
    ),
    Bug(
        "NaN on an all -inf row",
        "a row whose every score is -inf gives NaN (-inf minus -inf) instead of a row of zeros",
        "a fully blocked row has the maximum -inf, and subtracting it gives NaN: such a row's maximum "
        "must be replaced before the subtraction (task 1); look at the row maximum in stable_softmax",
        old='m = m.masked_fill(m == float("-inf"), 0.0)',
        new="m = m + 0.0",
        passes=(*UPSTREAM, ONE_HEAD[0], ONE_HEAD[2]),  # a causal row keeps its diagonal
        fails="test_causal_isolation.py::test_fully_masked_row_is_zero_not_nan[function]",
    ),
    Bug(
        "scale by d_model",
        "the heads' scores are divided by the square root of d_model, not d_head: too flat a softmax",
        "each head scales its scores by the square root of its own width, d_head, which the default "
        "scale already uses (task 6); look at the scale MultiHeadSelfAttention.forward passes",
        old="out, weights = scaled_dot_product_attention(q, k, v, mask)  #",
        new="out, weights = scaled_dot_product_attention(q, k, v, mask, 1 / math.sqrt(self.d_model))  #",
        passes=UPSTREAM + ONE_HEAD + CAUSAL_HEADS,
        fails="test_parity_torch.py::test_multi_head_matches_nn_multihead_attention[16-4-no-mask]",
    ),
    Bug(
        "split without a transpose",
        "a reshape straight to [B, h, T, d_head] mixes positions and columns: each head reads "
        "scrambled tokens",
        "the split first cuts each position's width into h pieces, then moves the head axis in front "
        "of the positions (task 6); look at the axis order split_heads returns",
        old="return x.transpose(1, 2)  # (B, T, h, d_head) -> (B, h, T, d_head)",
        new="return x.reshape(B, self.n_heads, T, self.d_head)",
        says="once token",
        passes=UPSTREAM + ONE_HEAD,
        fails="test_causal_isolation.py::test_modules_with_a_causal_mask_isolate_earlier_tokens[MultiHeadSelfAttention]",
    ),
    Bug(
        "view after a transpose",
        "merge_heads raises a RuntimeError: view cannot merge the axes of a transposed tensor",
        "after a transpose the tensor is no longer contiguous in memory, so merging its last two axes "
        "needs a call that copies when it must (task 6); look at the last line of merge_heads",
        old="return x.reshape(B, T, h * d_head)",
        new="return x.view(B, T, h * d_head)",
        says="view size is not compatible",
        passes=UPSTREAM + ONE_HEAD,
        fails="test_causal_isolation.py::test_modules_with_a_causal_mask_isolate_earlier_tokens[MultiHeadSelfAttention]",
    ),
    Bug(
        "merge with view",
        "the heads are merged without moving their axis beside d_head: outputs mix positions",
        "the head axis must sit next to d_head before the two are merged into d_model (task 6); look "
        "at the axis order merge_heads reshapes",
        old="x = x.transpose(1, 2)  # (B, h, T, d_head) -> (B, T, h, d_head), no longer contiguous",
        new="x = x.contiguous()",
        says="once token",
        passes=UPSTREAM + ONE_HEAD,
        fails="test_causal_isolation.py::test_modules_with_a_causal_mask_isolate_earlier_tokens[MultiHeadSelfAttention]",
    ),
    Bug(
        "no head axis",
        "a [B, T, T] mask meets [B, h, T, T] scores: it broadcasts over the wrong axis, or refuses to",
        "every head needs its batch's mask: the mask gets an axis for the heads (task 6); look at how "
        "MultiHeadSelfAttention.forward shapes the mask",
        old="mask = mask.expand(B, T, T).unsqueeze(1)",
        new="mask = mask.expand(B, T, T)",
        passes=UPSTREAM + ONE_HEAD + CAUSAL_HEADS,
        fails="test_parity_torch.py::test_multi_head_matches_nn_multihead_attention[16-4-causal]",
    ),
    Bug(
        "no out_proj",
        "the heads' outputs are merged but never mixed: out_proj is trained for nothing",
        "multi-head attention ends with its output projection, W_O, over the merged heads (task 6); "
        "look at what forward returns",
        old="return self.out_proj(self.merge_heads(out)), weights",
        new="return self.merge_heads(out), weights",
        passes=UPSTREAM + ONE_HEAD + CAUSAL_HEADS,
        fails="test_parity_torch.py::test_multi_head_matches_nn_multihead_attention[16-4-no-mask]",
    ),
]


# Survivors of python -m tools.mutate that no test can kill (step.toml [mutation] equivalent),
# keyed as its Mutant.key: "<module> <function>: <before> => <after>", with the reason.
_ZERO_ROW_MAX = "only an all -inf row's max is replaced, and exp(-inf - c) is 0 for any finite c"
_ZERO_SUM = (
    "only a zero sum is replaced, whose row of e is all 0: 0 / c is 0 (-0.0 == 0) for c != 0"
)
_DEF = "def attention_weights(mask: torch.Tensor, d_head: int={}, seed: int={}):"
_QKV = "q, k, v = (randn(1, T, d_head, seed=seed {} i) for i in range(3))"
EQUIVALENT: dict[str, str] = {
    "attention combine_causal_and_padding: if causal.shape[0] != causal.shape[1]: => "
    "if causal.shape[0] != causal.shape[-1]:": "check_rank made causal 2-D: dim 1 is dim -1",
    "attention combine_causal_and_padding: check_mask(padding, (padding.shape[0], causal.shape[1]), "
    "'padding') => check_mask(padding, (padding.shape[0], causal.shape[0]), 'padding')": (
        "the line above made causal square: its dims 0 and 1 are equal"
    ),
    "attention combine_causal_and_padding: check_mask(padding, (padding.shape[0], causal.shape[1]), "
    "'padding') => check_mask(padding, (padding.shape[0], causal.shape[-1]), 'padding')": (
        "check_rank made causal 2-D: dim 1 is dim -1"
    ),
    "attention check_mask: fits = fits and all((m in (1, s) for m, s in zip(dims, shape, "
    "strict=True))) => fits = fits and all((m in (1, s) for m, s in zip(dims, shape, "
    "strict=False)))": "the line above pads dims to len(shape) whenever fits is still true",
    "attention SelfAttention.forward: check_input(x, self) => pass": (
        "the reference's forward calls project, which checks the same x first (the given check in "
        "forward is for a student's forward that does not call project)"
    ),
    "attention check_heads: if x.shape[1] != layer.n_heads or x.shape[3] != layer.d_head: => "
    "if x.shape[1] != layer.n_heads or x.shape[-1] != layer.d_head:": (
        "check_rank made x 4-D: dim 3 is dim -1"
    ),
    "attention stable_softmax: m = m.masked_fill(m == float('-inf'), 0.0) => "
    "m = m.masked_fill(m == float('-inf'), 1.0)": _ZERO_ROW_MAX,
    "attention stable_softmax: m = m.masked_fill(m == float('-inf'), 0.0) => "
    "m = m.masked_fill(m == float('-inf'), -1.0)": _ZERO_ROW_MAX,
    "attention stable_softmax: return e / s.masked_fill(s == 0, 1.0) => "
    "return e / s.masked_fill(s == 0, 2.0)": _ZERO_SUM,
    "attention stable_softmax: return e / s.masked_fill(s == 0, 1.0) => "
    "return e / s.masked_fill(s == 0, -1.0)": _ZERO_SUM,
    **{
        f"exercises.wrong_mask attention_weights: T = mask.shape[-1] => T = mask.shape[{i}]": (
            "the mask is [T, T], square and 2-D: every one of its dims is T"
        )
        for i in (0, 1, -2)
    },
    **{  # given code: the diagnostic's q, k, v are any seeded draws; a leak shows in all of them
        f"exercises.wrong_mask attention_weights: {before} => {after}": (
            "the diagnostic reads where weights are non-zero, which no seed or width changes"
        )
        for before, after in [
            *((_DEF.format(8, 0), _DEF.format(d, 0)) for d in (9, 7, 1)),
            *((_DEF.format(8, 0), _DEF.format(8, s)) for s in (1, -1)),
            (_QKV.format("+"), _QKV.format("-")),
        ]
    },
}
