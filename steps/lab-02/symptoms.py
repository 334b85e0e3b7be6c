"""lab-02's curated bugs (step.toml [mutation]): the named traps of positions and dropout, each one
line of the reference changed, with the test that catches it first and the fix in words."""

from types import ModuleType

from common.bugs import Bug, commit

__all__ = ["BUGS", "broken"]  # BUGS: the rows of the handout's symptom table, in its order


def broken(fresh: ModuleType, bug: Bug) -> ModuleType:
    """Make a freshly imported copy of layers.py commit `bug`."""
    return commit(fresh, bug)


BUGS = [
    Bug(
        "sin and cos in halves",
        "the trap, sin and cos in halves: every sine in the first d / 2 columns and every cosine in the last: bounded and smooth, "
        "but no column pair is one angle any more",
        "the course's layout interleaves the two: pair i is the columns 2i (sin) and 2i + 1 (cos) "
        "of one angle (task 1.1); look at which columns sinusoidal writes the sines and cosines into",
        old="return pe.to(torch.float32)",
        new="return torch.cat((torch.sin(angle), torch.cos(angle)), dim=1).to(torch.float32)",
        says="the paper's PE",
        passes=("test_sinusoidal_is_T_by_d_and_bounded",),
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
        says="adjacent columns (2i, 2i + 1)",
        passes=("test_rope_keeps_every_rows_norm", "test_rope_scores_depend_on_n_minus_m_only"),
    ),
    Bug(
        "start ignored (position 0 every call)",
        "position 0 every call: right for a whole sequence, wrong for any row that does not start at 0: a token "
        "generated one at a time is always at position 0",
        "row t of x sits at position start + t (task 1.2); look at the positions rope turns by",
        old="positions = torch.arange(start, start + T, dtype=torch.float64)",
        new="positions = torch.arange(0, T, dtype=torch.float64)",
        says="start=7",
        passes=("test_rope_matches_the_complex_number_computation[0]",),
    ),
    Bug(
        "scale forgotten",
        "the trap, the scale forgotten: the right share of zeros, but the kept entries stay as they were: the training mean is "
        "(1 - p) times the eval mean, and a model trained with it sees bigger activations in eval",
        "inverted dropout divides every kept entry by 1 - p so that the mean is kept and eval needs "
        "no scaling (task 2, on paper); look at what dropout returns",
        old="return x * keep / (1 - p)",
        new="return x * keep",
        says="scaled by 1 / (1 - p)",
        passes=("test_dropout_zeros_a_share_p_within_binomial_bounds[0.5]",),
    ),
    Bug(
        "p kept, not dropped",
        "at p = 0.1 nine entries in ten are zero: p read as the share kept",
        "p is the probability of dropping an entry: each one is kept with probability 1 - p "
        "(task 2); look at the comparison that makes the mask",
        old="keep = torch.rand(x.shape, generator=generator, dtype=x.dtype) >= p",
        new="keep = torch.rand(x.shape, generator=generator, dtype=x.dtype) < p",
        says="p is the share dropped",
    ),
    Bug(
        "dropout in eval mode",
        "the validation loss is noisy and one batch gives two numbers: a mask drawn in eval mode",
        "in eval mode (training False) dropout returns x unchanged (task 2); look at when dropout "
        "returns before drawing a mask",
        old="if not training or p == 0:",
        new="if p == 0:",
    ),
    Bug(
        "NaN at p = 1",
        "p = 1 gives NaN instead of zeros: 0 / 0 in the scale",
        "at p = 1 every entry is dropped and 1 / (1 - p) is a division by zero: that case returns "
        "zeros before any scaling (task 2); look at what dropout does when p is 1",
        old="return torch.zeros_like(x)",
        new="pass",
        says="1 / (1 - p) is 1 / 0",
    ),
    Bug(
        "generator ignored",
        "two runs from one seed differ: the mask comes from the global random state",
        "every draw takes the generator it is given, so the same seed gives the same mask "
        "(task 2); look at what draws the mask",
        old="keep = torch.rand(x.shape, generator=generator, dtype=x.dtype) >= p",
        new="keep = torch.rand(x.shape, dtype=x.dtype) >= p",
        says="drawn from the generator passed in",
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
    "layers dropout: keep = torch.rand(x.shape, generator=generator, dtype=x.dtype) >= p => "
    "keep = torch.rand(x.shape, generator=generator, dtype=x.dtype) > p": (
        "the two differ only where a draw equals p exactly, one draw in 2**24 at most: no share or "
        "mean test can see it"
    ),
}
