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
    # BEGIN SOLUTION TODO(step-04 4.2.1)
    # head, x = head_and_input(Head); head(x); assert head.A is finite, >= 0, rows sum to 1
    # (which tolerance, and why?), and the strict upper triangle is 0
    head, x = head_and_input(Head)
    head(x)
    A = head.A  # (B, T, T)
    assert torch.isfinite(A).all(), "A has NaN or infinite entries"
    assert (A >= 0).all(), "A has negative entries"
    # float32 sums of 8 terms in [0, 1] round to within a few ulps of 1 (ulp ~ 1.2e-7)
    assert torch.allclose(A.sum(dim=-1), torch.ones(B, T), rtol=0, atol=1e-6), (
        "rows of A do not sum to 1"
    )
    assert (A.triu(diagonal=1) == 0).all(), "A puts weight on future positions (j > i)"
    # END SOLUTION


def prove_causality_by_perturbation(Head):
    """Changing x at position 5 leaves outputs 0-4 bitwise equal and changes outputs 5-7."""
    # BEGIN SOLUTION TODO(step-04 4.2.2)
    # head, x = head_and_input(Head); out = head(x); change x[:, 5, :] (on a clone), rerun; assert
    # positions 0-4 are torch.equal (bitwise, not allclose) and each of positions 5-7 changed
    head, x = head_and_input(Head)
    out = head(x)  # (B, T, d_head)
    x2 = x.clone()
    x2[:, T_CHANGED, :] += torch.randn(B, d, generator=generator(1))  # (B, d)
    out2 = head(x2)  # (B, T, d_head)
    assert torch.equal(out[:, :T_CHANGED], out2[:, :T_CHANGED]), "an earlier output saw the change"
    for t in range(T_CHANGED, T):
        assert not torch.equal(out[:, t], out2[:, t]), f"output {t} ignored a change at {T_CHANGED}"
    # END SOLUTION


def prove_causality_by_gradient(Head):
    """d out[0, 3] / d x[b, j] is zero for j > 3 or b != 0, and non-zero for every j <= 3."""
    # BEGIN SOLUTION TODO(step-04 4.2.3)
    # head, x = head_and_input(Head); x.requires_grad_(); head(x)[0, 3].sum().backward(); assert
    # x.grad is zero after position 3 and outside batch element 0, non-zero at every j <= 3
    head, x = head_and_input(Head)
    x.requires_grad_(True)
    head(x)[0, I_GRAD].sum().backward()  # a scalar: the sum of output row 3 of batch element 0
    g = x.grad.abs().sum(dim=-1)  # (B, T) size of the gradient at each input position
    assert torch.isfinite(g).all(), "the gradient has NaN or infinite entries"
    assert (g[0, I_GRAD + 1 :] == 0).all(), "out[0, 3] depends on a later position"
    assert (g[1:] == 0).all(), "out[0, 3] depends on another batch element"
    assert (g[0, : I_GRAD + 1] > 0).all(), "out[0, 3] ignores a position j <= 3"
    # END SOLUTION
