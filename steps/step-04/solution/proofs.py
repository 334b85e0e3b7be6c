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
    # BEGIN SOLUTION TODO(step-04 4.2.1: prove_simplex)
    # CONTRACT: return nothing when every row of the head's attention matrix A (B, T, T) is a
    #   probability vector with exactly zero weight on the future, and raise AssertionError
    #   otherwise. Build the head and x with head_and_input(Head). Lecture 4, rows in the simplex
    #   (4.2 test 1). The trap: the tolerance: a float32 row sum misses 1 by a few 1e-7, while the
    #   future must be exactly 0. Graded: it must catch a mask after the softmax, a fill with 0,
    #   the wrong axis, triu and an inverted mask.
    # HINT 1: Four properties of A: finite, no negative entry, each row sums to 1 within float32
    #   rounding, and nothing above the diagonal. Call the head once; it keeps A.
    # HINT 2: torch.isfinite, (A >= 0).all(), torch.allclose(..., rtol=0, atol=...) on
    #   A.sum(dim=-1), A.triu(diagonal=1). The trap: allclose's default rtol, and a NaN row,
    #   which fails every comparison silently unless you test for it.
    # HINT 3: head, x = head_and_input(Head); head(x); A = head.A;
    #   assert torch.isfinite(A).all(); assert (A >= ___).all();
    #   assert torch.allclose(A.sum(dim=-1), torch.ones(B, T), rtol=0, atol=___);
    #   assert (A.triu(diagonal=___) == 0).all()
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
    # BEGIN SOLUTION TODO(step-04 4.2.2: prove_causality_by_perturbation)
    # CONTRACT: return nothing when changing the input at position 5 (T_CHANGED) leaves outputs
    #   0 to 4 bitwise equal and changes each of outputs 5 to 7; raise AssertionError otherwise.
    #   Build the head and x with head_and_input(Head). Lecture 4, causality (4.2 test 2). The
    #   trap: bitwise: a renormalised mask after the softmax agrees to 1e-7 and still lets the
    #   future in. Graded: it must catch a missing mask and that renormalised variant.
    # HINT 1: Run the head, change one position of a copy of x, run it again and compare the
    #   two outputs position by position: exact equality before the change, a difference from
    #   the change on.
    # HINT 2: x.clone(), torch.randn(..., generator=generator(1)) for the new numbers,
    #   torch.equal for the bitwise comparison. The trap: allclose, and changing x in place.
    # HINT 3: out = head(x); x2 = x.clone(); x2[:, T_CHANGED, :] += ___; out2 = head(x2);
    #   assert torch.equal(out[:, :___], out2[:, :___]);
    #   for t in range(T_CHANGED, T): assert not torch.equal(___, ___)
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
    # BEGIN SOLUTION TODO(step-04 4.2.3: prove_causality_by_gradient)
    # CONTRACT: return nothing when the gradient of the sum of output row 3 (I_GRAD) of batch
    #   element 0 with respect to x is exactly zero at every later position and in every other
    #   batch element, and non-zero at every position j <= 3; raise AssertionError otherwise.
    #   Build the head and x with head_and_input(Head). Lecture 4, causality as a derivative (4.2
    #   test 3). The trap: the diagonal: j == 3 itself must get a gradient. Graded: it must
    #   catch a missing mask, triu, an inverted mask and a mask without the diagonal.
    # HINT 1: Ask autograd which inputs one output row depends on: make x require a gradient,
    #   reduce that row to one number, backpropagate, and read x.grad position by position.
    # HINT 2: x.requires_grad_(True); head(x)[0, I_GRAD].sum().backward(); x.grad.abs().sum(-1)
    #   is (B, T). The trap: a NaN gradient compares as neither zero nor non-zero.
    # HINT 3: x.requires_grad_(True); head(x)[0, ___].sum().backward(); g = x.grad.abs().sum(-1);
    #   assert torch.isfinite(g).all(); assert (g[0, I_GRAD + 1 :] == ___).all();
    #   assert (g[1:] == 0).all(); assert (g[0, : I_GRAD + 1] > ___).all()
    head, x = head_and_input(Head)
    x.requires_grad_(True)
    head(x)[0, I_GRAD].sum().backward()  # a scalar: the sum of output row 3 of batch element 0
    g = x.grad.abs().sum(dim=-1)  # (B, T) size of the gradient at each input position
    assert torch.isfinite(g).all(), "the gradient has NaN or infinite entries"
    assert (g[0, I_GRAD + 1 :] == 0).all(), "out[0, 3] depends on a later position"
    assert (g[1:] == 0).all(), "out[0, 3] depends on another batch element"
    assert (g[0, : I_GRAD + 1] > 0).all(), "out[0, 3] ignores a position j <= 3"
    # END SOLUTION
