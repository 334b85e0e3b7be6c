"""Step 4's curated bugs (step.toml [mutation]): each one's Head replaces head.py's (not replacements
in head.py: the scorecard and 4.2's experiments build each broken Head around a given Head class)."""

from types import ModuleType

from common.bugs import Bug
from common.loader import reference

catalogue = reference("lab-01", "broken")  # steps/lab-01/broken.py: the broken heads
BUGS = catalogue.HEAD_BUGS  # the rows of the handout's symptom table, in its order

__all__ = ["BUGS", "broken"]


def broken(fresh: ModuleType, bug: Bug) -> ModuleType:
    """Make a freshly imported copy of head.py commit `bug`: its Head is the broken one."""
    fresh.Head = catalogue.broken_head(fresh.Head, bug)
    return fresh


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
