"""lab-01's curated bugs (step.toml [mutation]): how each is injected into a copy of attention.py."""

from types import ModuleType

import torch

from common.bugs import Bug
from common.loader import reference

catalogue = reference("lab-01", "broken")  # broken.py beside this file, loaded once for every step
weights = catalogue.weights
# the rows of the handout's symptom table, in its order
BUGS = catalogue.BUGS + catalogue.PADDING_BUGS


def broken(fresh: ModuleType, bug: Bug) -> ModuleType:
    """Make a freshly imported copy of attention.py commit `bug` (patches its globals)."""
    mask, padding, knobs = (bug.settings[key] for key in ("mask", "padding", "knobs"))
    if mask is not None:
        fresh.causal_mask = mask
    if padding is not None:
        fresh.combine_causal_and_padding = padding
    if knobs:
        fresh.scaled_dot_product_attention = _broken_sdpa(fresh.scaled_dot_product_attention, bug)
    return fresh


def _broken_sdpa(reference, bug: Bug):
    """scaled_dot_product_attention with the reference's input checks and `bug`'s maths."""

    def scaled_dot_product_attention(q, k, v, mask=None, scale=None):
        reference(q, k, v, mask, scale)  # keeps the reference's ValueErrors for bad input
        keep = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool) if mask is None else mask
        if scale is not None and bug.settings["knobs"].get("scale", True):
            q = q * (scale * q.shape[-1] ** 0.5)  # weights() divides by sqrt(d_head) again
        A = torch.nan_to_num(
            weights(q, k, keep, **bug.settings["knobs"])
        )  # (..., T_q, T_k); no NaN, as lab-01
        return A @ v, A  # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)

    return scaled_dot_product_attention


# Survivors of python -m tools.mutate that no test can kill (step.toml [mutation] equivalent),
# keyed as its Mutant.key: "<module> <function>: <before> => <after>", with the reason.
_ZERO_ROW_MAX = "only an all -inf row's max is replaced, and exp(-inf - c) is 0 for any finite c"
_ZERO_SUM = (
    "only a zero sum is replaced, whose row of e is all 0: 0 / c is 0 (-0.0 == 0) for c != 0"
)
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
}
