"""The 4.2 proofs, executed: each takes a Head class and raises AssertionError if its property fails."""

import torch

from common.seeding import generator, seed_all

B, T, d, d_head = 4, 8, 32, 16  # the handout's sizes: x = randn(4, 8, 32), Head(32, 16, T_max=8)
T_CHANGED = 5  # the position 4.2.2 perturbs
I_GRAD = 3  # the output row 4.2.3 differentiates


def head_and_input(Head, seed=0):
    """A freshly seeded Head(32, 16, T_max=8) and a seeded x of shape (4, 8, 32)."""
    seed_all(seed)
    head = Head(d, d_head, T_max=T)
    x = torch.randn(B, T, d, generator=generator(seed))  # (B, T, d)
    return head, x


def prove_simplex(Head):
    """Every row of A is a probability vector with exactly zero weight on the future."""
    raise NotImplementedError(
        "TODO(step-04 4.2.1): head, x = head_and_input(Head); head(x); assert head.A is finite, >= 0, rows sum to 1 (which tolerance, and why?), and the strict upper triangle is 0"
    )


def prove_causality_by_perturbation(Head):
    """Changing x at position 5 leaves outputs 0-4 bitwise equal and changes outputs 5-7."""
    raise NotImplementedError(
        "TODO(step-04 4.2.2): head, x = head_and_input(Head); out = head(x); change x[:, 5, :] (on a clone), rerun; assert positions 0-4 are torch.equal (bitwise, not allclose) and each of positions 5-7 changed"
    )


def prove_causality_by_gradient(Head):
    """d out[0, 3] / d x[b, j] is zero for j > 3 or b != 0, and non-zero for every j <= 3."""
    raise NotImplementedError(
        "TODO(step-04 4.2.3): head, x = head_and_input(Head); x.requires_grad_(); head(x)[0, 3].sum().backward(); assert x.grad is zero after position 3 and outside batch element 0, non-zero at every j <= 3"
    )
