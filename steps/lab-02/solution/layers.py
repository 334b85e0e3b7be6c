"""lab-02: the pieces lab-01 left to another lab: sinusoidal and rotary positions, and dropout."""

import torch

BASE = 10000.0  # Vaswani et al. §3.5: wavelengths from 2π to BASE · 2π


def check_size(value, name: str, even: bool = False) -> None:
    """Refuse a size that is not a positive int (with `even`: an even one)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    if even and value % 2:
        raise ValueError(f"{name} must be even (its columns go in pairs), got {name}={value}")


def check_rope_input(x, start) -> None:
    """Refuse x that is not a float [..., T, d_head] with d_head even, or a negative start."""
    if not isinstance(x, torch.Tensor) or x.dim() < 2 or not x.is_floating_point():
        got = f"{x.dtype} {tuple(x.shape)}" if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"x must be a float tensor [..., T, d_head], got {got}")
    check_size(x.shape[-1], "d_head", even=True)
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise ValueError(f"start must be an int >= 0 (the first position), got {start!r}")


def check_dropout(x, p, generator) -> None:
    """Refuse x that is not a float tensor, a p outside [0, 1], or a missing generator."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        got = x.dtype if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"x must be a float tensor, got {got}")
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
        raise ValueError(f"p must be a number in [0, 1] (the share dropped), got {p!r}")
    if not isinstance(generator, torch.Generator):
        got = type(generator).__name__
        raise ValueError(f"generator must be a torch.Generator (the mask's seed), got {got}")


def frequencies(n_pairs: int, d: int) -> torch.Tensor:
    """(n_pairs,) float64 angles per position of the column pairs: ω_i = BASE^(-2i / d)."""
    return BASE ** (-2 * torch.arange(n_pairs, dtype=torch.float64) / d)  # (n_pairs,)


def sinusoidal(T: int, d: int) -> torch.Tensor:
    """[T, d] float32: row pos is the sinusoidal encoding of position pos (Vaswani et al. §3.5)."""
    check_size(T, "T")
    check_size(d, "d", even=True)
    # BEGIN SOLUTION TODO(lab-02 task 1.1: sinusoidal)
    # CONTRACT: returns [T, d] float32. Column pair i is (sin(pos·ω_i), cos(pos·ω_i)) with
    #   ω_i = frequencies(d // 2, d)[i]; the course's layout interleaves them: sin in the even
    #   column 2i, cos in the odd column 2i + 1, as the paper's PE(pos, 2i) and PE(pos, 2i + 1).
    #   Property: the pair at pos + k is the pair at pos rotated by the angle k·ω_i, whatever pos
    #   (README, on paper). The trap: sin in the first half of the columns and cos in the second.
    # HINT 1: one angle per (position, pair): an outer product of the positions and the ω_i;
    #   then the sines go to the even columns and the cosines to the odd ones.
    # HINT 2: torch.outer(torch.arange(T), frequencies(...)) is [T, d / 2]; write into a zero
    #   [T, d] tensor with the slices [:, 0::2] and [:, 1::2]; compute in float64, return float32.
    # HINT 3: angle = torch.outer(torch.arange(T, dtype=torch.float64), ___);
    #   pe = torch.zeros(T, d, dtype=torch.float64); pe[:, 0::2] = ___; pe[:, 1::2] = ___;
    #   return pe.to(___)
    angle = torch.outer(torch.arange(T, dtype=torch.float64), frequencies(d // 2, d))  # (T, d/2)
    pe = torch.zeros(T, d, dtype=torch.float64)  # float64: pos·ω up to 1e4 keeps its digits
    pe[:, 0::2] = torch.sin(angle)  # (T, d/2) the even columns
    pe[:, 1::2] = torch.cos(angle)  # (T, d/2) the odd columns, each beside its sine
    return pe.to(torch.float32)  # (T, d)
    # END SOLUTION


def rope(x: torch.Tensor, start: int = 0) -> torch.Tensor:
    """[..., T, d_head] -> the same shape: row t rotated for position start + t (Su et al. 2021)."""
    check_rope_input(x, start)
    # BEGIN SOLUTION TODO(lab-02 task 1.2: rope)
    # CONTRACT: returns x's shape and dtype. Row t is at position m = start + t; its columns
    #   (2i, 2i + 1), adjacent pairs as in the paper, are turned as one 2-D vector by the angle
    #   m·ω_i, ω_i = frequencies(d_head // 2, d_head)[i]. Properties: every row keeps its norm;
    #   position 0 is the identity; a query at m and a key at n score by n - m only (on paper:
    #   R(m)ᵀ R(n) = R(n - m)). The trap: the halves pairing of GPT-NeoX and Llama (column i with
    #   column i + d_head / 2), which keeps every property but is another model's convention.
    # HINT 1: a pair (a, b) turned by θ is (a·cos θ - b·sin θ, a·sin θ + b·cos θ): take the even
    #   columns as a, the odd ones as b, and put the turned pairs back in place.
    # HINT 2: the angles are torch.outer of the positions start .. start + T - 1 and the ω_i, in
    #   float64 then cast to x's dtype; x[..., 0::2] and x[..., 1::2] are a and b; torch.stack on
    #   a new last axis and .flatten(-2) interleaves them back.
    # HINT 3: T = x.shape[-2]; angle = torch.outer(torch.arange(start, ___, dtype=torch.float64),
    #   frequencies(___, ___)); cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype);
    #   a, b = x[..., 0::2], x[..., 1::2]; return torch.stack((___, ___), dim=-1).flatten(-2)
    T, d_head = x.shape[-2], x.shape[-1]
    positions = torch.arange(start, start + T, dtype=torch.float64)  # (T,) where each row sits
    angle = torch.outer(positions, frequencies(d_head // 2, d_head))  # (T, d_head/2)
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)  # (T, d_head/2) each
    a, b = x[..., 0::2], x[..., 1::2]  # (..., T, d_head/2) each: the pairs' two coordinates
    turned = torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1)  # (..., T, d_head/2, 2)
    return turned.flatten(-2)  # (..., T, d_head): each pair back in its two adjacent columns
    # END SOLUTION


def dropout(x: torch.Tensor, p: float, training: bool, generator: torch.Generator) -> torch.Tensor:
    """Inverted dropout: in training, zero each entry with probability p and scale the rest by 1 / (1 - p)."""
    check_dropout(x, p, generator)
    # BEGIN SOLUTION TODO(lab-02 task 2: dropout)
    # CONTRACT: returns x's shape and dtype. In eval mode (training False), and at p = 0, x
    #   itself, unchanged, no mask drawn. In training, each entry is kept with probability 1 - p,
    #   drawn from `generator` (the same seed gives the same mask), and every kept entry is
    #   divided by 1 - p, so the mean is kept and eval needs no scaling (README, on paper); at
    #   p = 1 every entry is 0, never NaN. The gradient reaches x through the kept entries. The
    #   trap: the 1 / (1 - p) scale forgotten.
    # HINT 1: a mask of the shape of x that is True with probability 1 - p; the output is x
    #   where the mask holds, 0 elsewhere, scaled up so the expected value stays x.
    # HINT 2: torch.rand(x.shape, generator=generator) >= p is the kept mask;
    #   handle p = 1 first, where 1 / (1 - p) would divide by zero (0 · inf is NaN).
    # HINT 3: if not training or p == 0: return ___; if p == 1: return torch.zeros_like(___);
    #   keep = torch.rand(___, generator=___) >= p; return x * keep / (___)
    if not training or p == 0:
        return x  # the same tensor: eval mode costs nothing
    if p == 1:
        return torch.zeros_like(x)  # every entry dropped; x / 0 would give NaN and inf
    # drawn in float32 whatever x's dtype: bfloat16 holds about 2,000 values in [0, 1), too few
    # for a share of exactly p
    keep = torch.rand(x.shape, generator=generator) >= p  # (x.shape) bool, P = 1 - p
    return x * keep / (1 - p)  # (x.shape) kept entries scaled: E[out] = x
    # END SOLUTION
