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
