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
        "TODO(step-04 4.2.1: prove_simplex): return nothing when every row of the head's attention matrix A (B, T, T) is a probability vector with exactly zero weight on the future, and raise AssertionError otherwise. Build the head and x with head_and_input(Head). Lecture 4, rows in the simplex (4.2 test 1). The trap: the tolerance: a float32 row sum misses 1 by a few 1e-7, while the future must be exactly 0. Graded: it must catch a mask after the softmax, a fill with 0, the wrong axis, triu and an inverted mask."
    )


def prove_causality_by_perturbation(Head):
    """Changing x at position 5 leaves outputs 0-4 bitwise equal and changes outputs 5-7."""
    raise NotImplementedError(
        "TODO(step-04 4.2.2: prove_causality_by_perturbation): return nothing when changing the input at position 5 (T_CHANGED) leaves outputs 0 to 4 bitwise equal and changes each of outputs 5 to 7; raise AssertionError otherwise. Build the head and x with head_and_input(Head). Lecture 4, causality (4.2 test 2). The trap: bitwise: a renormalised mask after the softmax agrees to 1e-7 and still lets the future in. Graded: it must catch a missing mask and that renormalised variant."
    )


def prove_causality_by_gradient(Head):
    """d out[0, 3] / d x[b, j] is zero for j > 3 or b != 0, and non-zero for every j <= 3."""
    raise NotImplementedError(
        "TODO(step-04 4.2.3: prove_causality_by_gradient): return nothing when the gradient of the sum of output row 3 (I_GRAD) of batch element 0 with respect to x is exactly zero at every later position and in every other batch element, and non-zero at every position j <= 3; raise AssertionError otherwise. Build the head and x with head_and_input(Head). Lecture 4, causality as a derivative (4.2 test 3). The trap: the diagonal: j == 3 itself must get a gradient. Graded: it must catch a missing mask, triu, an inverted mask and a mask without the diagonal."
    )
