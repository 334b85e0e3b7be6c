"""Broken attention: the masks and weights of the bugs the handouts warn about, and Step 4's broken heads."""

import torch
import torch.nn.functional as F

from common.bugs import Bug


# masks: boolean (T, T), or (B, T, T) with padding; True = may attend
def triu_mask(seq_len: int) -> torch.Tensor:
    """Upper triangle: query i sees keys j >= i, the future, and none of its past."""
    return torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool))  # (T, T)


def missing_mask(seq_len: int) -> torch.Tensor:
    """No mask at all: every query sees every key."""
    return torch.ones(seq_len, seq_len, dtype=torch.bool)  # (T, T)


def inverted_mask(seq_len: int) -> torch.Tensor:
    """The causal mask negated: True where False was meant, so only the strict future is kept."""
    return ~torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool))  # (T, T)


def no_diagonal_mask(seq_len: int) -> torch.Tensor:
    """Off by one: j < i instead of j <= i, so a token may not attend to itself."""
    return torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool), diagonal=-1)  # (T, T)


def or_padding(causal: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
    """Padding OR-ed with the causal mask: a real key in the future becomes visible."""
    return causal | padding[:, None, :]  # (T, T) | (B, 1, T) -> (B, T, T)


def weights(
    q: torch.Tensor,
    k: torch.Tensor,
    keep: torch.Tensor,
    *,
    scale: bool = True,
    fill: float = float("-inf"),
    dim: int = -1,
    after_softmax: bool = False,
    renormalise: bool = False,
) -> torch.Tensor:
    """Attention weights A (..., T, T) with the chosen mistakes, one knob per bug (defaults: correct)."""
    scores = q @ k.transpose(-2, -1)  # (..., T, d_head) @ (..., d_head, T) -> (..., T, T)
    if scale:
        scores = scores / q.shape[-1] ** 0.5  # (..., T, T)
    if not after_softmax:
        return F.softmax(scores.masked_fill(~keep, fill), dim=dim)  # (..., T, T)
    A = F.softmax(scores, dim=dim) * keep  # (..., T, T) future weights zeroed too late
    return A / A.sum(dim=-1, keepdim=True) if renormalise else A  # (..., T, T)


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


def attention_bug(
    name: str,
    breaks: str,
    hint: str,
    fix: str,
    *,
    mask=None,
    knobs: dict | None = None,
    violates_4_2: bool = True,
    passes: tuple[str, ...] = (),
) -> Bug:
    """One broken variant: what it breaks, what a proof should assert, the fix, and its mistakes:
    `mask` replaces the causal mask builder (T -> (T, T)), `knobs` are mistakes in the weights themselves; `violates_4_2`: does it break the simplex or
    causality property? `passes`: the tests (lab-01's and Step 4's) it leaves passing, besides
    those of the masks made before its mistake (the causal mask, then the padding): a failure
    there is that mask's bug, not this one."""
    upstream = () if mask else MASK_TESTS + PADDING_TESTS  # a mistake after the masks passes theirs
    settings = {
        "mask": mask,
        "knobs": knobs or {},
        "violates_4_2": violates_4_2,
    }
    return Bug(name, breaks, fix, hint=hint, settings=settings, passes=upstream + passes)


# Step 4's catalogue (its symptoms.py BUGS): each bug a broken Head around a Head class, yours
# or the reference's (the scorecard, 4.2's experiments), so not a replacement in one file
HEAD_BUGS = [
    attention_bug(
        "upper-triangular mask",
        "torch.triu instead of torch.tril: each query sees the future and loses its past",
        "assert that the strict upper triangle of every A[b] is exactly zero",
        "the mask keeps the wrong triangle: a query may see itself and the keys before it, the lower "
        "triangle (lesson 5, 1.1); look at which triangle the causal mask is cut from",
        mask=triu_mask,
        passes=ONE_CELL,
    ),
    attention_bug(
        "no mask",
        "every query attends to every key, future included",
        "perturb a later position and require earlier outputs to stay bitwise equal",
        "no mask reaches the scores: the keys after each query must be blocked before the softmax; "
        "look at where the scores meet the mask",
        mask=missing_mask,
        passes=ONE_CELL,
    ),
    attention_bug(
        "inverted mask",
        "~tril keeps only the strict future; the last row has no key left: NaN from F.softmax, "
        "zeros from lab-01's stable_softmax",
        "check that A is finite, non-negative and that every row sums to 1",
        "the polarity is flipped: True means may attend, so the scores to block are where the mask is "
        "False; look at the condition the fill is given",
        mask=inverted_mask,
    ),
    attention_bug(
        "diagonal excluded",
        "tril(diagonal=-1): a token cannot see itself; row 0 is empty: NaN from F.softmax, zeros "
        "from lab-01's stable_softmax",
        "require a non-zero gradient for every j <= i, the diagonal included, and finite rows",
        "the diagonal is gone: a token may attend to itself (lesson 5, 1.1); look at how the lower "
        "triangle is built and which diagonal it starts from",
        mask=no_diagonal_mask,
    ),
    attention_bug(
        "mask after softmax",
        "future weights zeroed after softmax: rows no longer sum to 1",
        "check that every row of A sums to 1",
        "the mask comes too late: blocked keys get minus infinity as their score before the softmax, so "
        "each row is a probability vector over the keys it may see; look at the order of the two",
        knobs={"after_softmax": True},
        passes=(*PADDED_KEYS, "test_unmasked_matches_sdpa"),  # no mask: nothing comes too late
    ),
    attention_bug(
        "mask after softmax, renormalised",
        "equal to the right answer in exact arithmetic, but earlier rows now depend on the "
        "future through rounding of the full-row softmax",
        "compare earlier outputs with torch.equal, not allclose, after perturbing the future",
        "masking the weights and renormalising is right only in exact arithmetic: the rounding of the "
        "full-row softmax carries the future in; look at the order of mask and softmax",
        knobs={"after_softmax": True, "renormalise": True},
        passes=ROW_TESTS,
    ),
    attention_bug(
        "masked with 0 instead of -inf",
        "a zero score is an ordinary score: exp(0) gives the future real weight",
        "assert that the strict upper triangle of every A[b] is exactly zero",
        "a blocked key needs a score whose exponential is exactly 0, minus infinity; look at the value "
        "the mask fills in",
        knobs={"fill": 0.0},
        # its rows still sum to 1, and its small leak lets task 7's diagnostic see a missing mask
        passes=(
            "test_the_shipped_mask_passes_shape_and_row_sum_checks",
            "test_diagnostic_catches_a_missing_mask",
        ),
    ),
    attention_bug(
        "missing 1/sqrt(d_k)",
        "the scores grow with the head's width and the softmax saturates to one-hot rows; each row "
        "still sums to 1 and sees no later key, so only a comparison with the formula shows it",
        "compare the output with the formula softmax(q k^T / sqrt(d_k)) v computed by hand",
        "the scores are not scaled: they are divided by the square root of one head's width "
        "(d_head, never d_model); look at where the scores are made",
        knobs={"scale": False},
        violates_4_2=False,
        passes=ROW_TESTS,
    ),
    attention_bug(
        "softmax over the wrong axis",
        "softmax over queries (dim=-2): columns sum to 1, rows do not",
        "check that every row of A sums to 1",
        "the softmax normalises each column: every row, one query, must sum to 1 over its keys, the "
        "last axis; look at the axis the softmax is given",
        knobs={"dim": -2},
        # a mask applied after the softmax fails it; the wrong axis leaves it passing
        passes=(*PADDED_KEYS, "test_changing_a_padding_token_changes_no_output_row"),
    ),
]


def broken_head(reference: type, bug: Bug) -> type:
    """A subclass of the reference Head whose forward makes `bug`'s mistake."""

    class BrokenHead(reference):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            with torch.no_grad():  # the reference forward only validates x here
                super().forward(x)
            T = x.shape[1]
            causal = torch.ones(T, T, dtype=torch.bool).tril()  # (T, T)
            keep = (
                bug.settings["mask"](T) if bug.settings["mask"] else causal
            )  # (T, T) the bug's mask, if it has one
            q, k, v = self.query(x), self.key(x), self.value(x)  # (B, T, d_head)
            A = weights(q, k, keep, **bug.settings["knobs"])  # (B, T, T)
            self.A = A.detach()
            return A @ v  # (B, T, T) @ (B, T, d_head) -> (B, T, d_head)

    # named like the real thing, so a proof cannot tell them apart by name
    BrokenHead.__name__ = BrokenHead.__qualname__ = reference.__name__
    return BrokenHead


BY_NAME = {bug.name: bug for bug in HEAD_BUGS}
