"""Step 4's curated bugs (step.toml [mutation]): each one replacement in head.py's Head.forward,
lab-01's mistakes (its bugs.py, in attention.py there) told in lab-01's words under Step 4's names."""

from dataclasses import replace

from common.loader import reference

lab = reference("lab-01", "bugs")  # the words of each bug (breaks, fix) are written there once
WORDS = {bug.name: bug for bug in lab.BUGS}
MASK = "self.tril[:T, :T] == 0,"  # Head.forward's mask: True where a key comes after its query
SOFTMAX = "A = F.softmax(scores, dim=-1)"  # ... and its softmax over the keys
UNMASKED = "F.softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5, dim=-1) * self.tril[:T, :T]"
SIMPLEX = "test_head.py::test_rows_are_in_the_simplex"  # the first test most of them fail

# the rows of the handout's symptom table, in its order; `hint`: what a 4.2 proof should assert
BUGS = [
    replace(
        WORDS["triu"],
        name="upper-triangular mask",
        old=MASK,
        new="self.tril[:T, :T].T == 0,",  # the transpose of the lower triangle: torch.triu
        hint="assert that the strict upper triangle of every A[b] is exactly zero",
        fails=SIMPLEX,
    ),
    replace(
        WORDS["no mask"],
        old='scores = scores.masked_fill(self.tril[:T, :T] == 0, float("-inf"))  # (B, T, T), j > i',
        new="scores = scores  # (B, T, T), no key blocked",
        hint="perturb a later position and require earlier outputs to stay bitwise equal",
        fails=SIMPLEX,
    ),
    replace(
        WORDS["inverted polarity"],
        name="inverted mask",
        old=MASK,
        new="self.tril[:T, :T] == 1,",
        hint="check that A is finite, non-negative and that every row sums to 1",
        passes=(),  # Head.forward builds no mask a test checks alone: no upstream test passes
        fails=SIMPLEX,
    ),
    replace(
        WORDS["no diagonal"],
        name="diagonal excluded",
        old=MASK,
        new="self.tril[:T, :T].tril(diagonal=-1) == 0,",
        hint="require a non-zero gradient for every j <= i, the diagonal included, and finite rows",
        fails=SIMPLEX,
    ),
    replace(
        WORDS["mask after softmax"],
        old=SOFTMAX,
        new=f"A = {UNMASKED}",
        hint="check that every row of A sums to 1",
        fails=SIMPLEX,
    ),
    replace(
        WORDS["mask after softmax, renormalised"],
        old=SOFTMAX,
        new=f"A = {UNMASKED}\n        A = A / A.sum(dim=-1, keepdim=True)",
        hint="compare earlier outputs with torch.equal, not allclose, after perturbing the future",
        fails="test_head.py::test_causality_by_perturbation",
    ),
    replace(
        WORDS["masked with 0 instead of -inf"],
        old='self.tril[:T, :T] == 0, float("-inf")',
        new="self.tril[:T, :T] == 0, 0.0",
        hint="assert that the strict upper triangle of every A[b] is exactly zero",
        fails=SIMPLEX,
    ),
    replace(
        WORDS["no scale"],
        name="missing 1/sqrt(d_k)",
        old="scores = scores / k.shape[-1] ** 0.5  # (B, T, T), variance d_head -> 1",
        new="scores = scores  # (B, T, T), variance d_head: never scaled",
        hint="compare the output with the formula softmax(q k^T / sqrt(d_k)) v computed by hand",
        fails="test_head.py::test_attention_matches_the_formula",
    ),
    replace(
        WORDS["softmax over the wrong axis"],
        old=SOFTMAX,
        new="A = F.softmax(scores, dim=-2)",
        hint="check that every row of A sums to 1",
        fails=SIMPLEX,
    ),
]


# Survivors of python -m tools.mutate that no test can kill (step.toml [mutation] equivalent),
# keyed as its Mutant.key: "<module> <function>: <before> => <after>", with the reason.
_SCALAR_START = (
    "a 0-dim start broadcasts to (...,) at key 0, which always exists (T >= 1 is checked)"
)
EQUIVALENT: dict[str, str] = {
    "proofs prove_causality_by_perturbation: x2[:, T_CHANGED, :] += torch.randn(B, d, "
    "generator=generator(1)) => x2[:, T_CHANGED, :] += torch.randn(B, d, generator=generator(2))": (
        "any other seeded perturbation of position T_CHANGED proves the same: the earlier rows stay "
        "put and the later ones move for every draw the tests' heads see"
    ),
    "head smoothing_weights: return F.softmax(scores, dim=-1) => return F.softmax(scores, dim=1)": (
        "scores is (T, T): dim 1 is dim -1"
    ),
    "head online_softmax: m = scores.new_full(scores.shape[:-1], float('-inf')) => "
    "m = scores.new_full(scores.shape[:0], float('-inf'))": _SCALAR_START,
    "head online_softmax: s = scores.new_zeros(scores.shape[:-1]) => "
    "s = scores.new_zeros(scores.shape[:0])": _SCALAR_START,
    "head Head.forward: scores = q @ k.transpose(-2, -1) => scores = q @ k.transpose(1, -1)": (
        "check_input made x, so k, 3-D (B, T, d_head): dim 1 is dim -2"
    ),
    "head attention_scores: scores = q @ k.transpose(-2, -1) => "
    "scores = q @ k.transpose(1, -1)": "k is (B, T, d_k), as documented: dim 1 is dim -2",
    "head online_attention: score = (q @ k[:, j, :, None])[..., 0] / d_k ** 0.5 => "
    "score = (q @ k[:, j, :, None])[..., -1] / d_k ** 0.5": "that last dim has size 1: 0 is -1",
}
