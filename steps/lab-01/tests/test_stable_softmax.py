"""Stable softmax: agrees with torch.softmax, survives huge logits, maps an all -inf row to zeros."""

import pytest
import torch

from common import expect
from common.seeding import randn

NEG_INF = float("-inf")


@pytest.mark.todo("task 1")
@pytest.mark.core  # task 1's parity
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("dim", [-1, 0])
def test_matches_torch_softmax(attention, runner, seed, dim):
    """Ordinary logits (scaled up to +-30): same probabilities as torch.softmax along `dim`."""
    x = 10 * randn(4, 6, seed=seed)  # (4, 6)
    ours = attention.stable_softmax(x, dim=dim)
    # runner.SOFTMAX_TOL = 1e-6: probabilities lie in [0, 1]; see experiments.py for the reason.
    torch.testing.assert_close(ours, torch.softmax(x, dim=dim), rtol=0, atol=runner.SOFTMAX_TOL)


@pytest.mark.todo("task 1")
def test_default_dim_is_the_last(attention):
    """Without dim=, the softmax runs over the last dim (of a 3-D input, where 1 and -1 differ)."""
    x = randn(2, 3, 4, seed=0)  # (2, 3, 4)
    default = attention.stable_softmax(x)
    expect.equal(
        "stable_softmax(x)", default, attention.stable_softmax(x, dim=-1), "dim=-1's result"
    )


@pytest.mark.todo("task 1")
@pytest.mark.core  # task 1's trap: the max shift
def test_large_logits_stay_finite(attention, runner):
    """[1000, 1001, 999, 1002]: exp(1000) overflows float32, the max-shifted version does not."""
    x = torch.tensor([1000.0, 1001.0, 999.0, 1002.0])
    assert torch.isinf(torch.exp(x)).all()  # why the naive formula fails
    p = attention.stable_softmax(x, dim=-1)
    expect.finite("stable_softmax of logits near 1000", p)
    # Softmax ignores a constant shift, so these equal the probabilities of [1, 2, 0, 3].
    expected = torch.softmax(torch.tensor([1.0, 2.0, 0.0, 3.0]), dim=-1)
    torch.testing.assert_close(p, expected, rtol=0, atol=runner.SOFTMAX_TOL)


@pytest.mark.todo("task 1")
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("dim", [-1, 0])
def test_logits_far_apart_match_torch_softmax(attention, runner, seed, dim):
    """Logits hundreds apart (more than 88, where exp overflows float32): torch.softmax's result."""
    x = 300 * randn(5, 6, seed=seed)  # (5, 6) each row and column spans hundreds
    assert (x.amax(dim) - x.amin(dim) > 88).all()  # shifting by anything but the max overflows
    ours = attention.stable_softmax(x, dim=dim)
    torch.testing.assert_close(ours, torch.softmax(x, dim=dim), rtol=0, atol=runner.SOFTMAX_TOL)


@pytest.mark.todo("task 1")
def test_large_logits_beside_blocked_ones_match_torch_softmax(attention, runner):
    """Logits near 1000 next to -inf entries: finite, 0 on the -inf, torch.softmax elsewhere."""
    x = torch.tensor(
        [
            [1000.0, NEG_INF, 1001.0, NEG_INF],
            [NEG_INF, NEG_INF, -500.0, 400.0],
            [NEG_INF, 3000.0, NEG_INF, NEG_INF],
        ]
    )  # (3, 4)
    p = attention.stable_softmax(x, dim=-1)
    expect.finite("stable_softmax of logits near 1000 beside -inf", p)
    torch.testing.assert_close(p, torch.softmax(x, dim=-1), rtol=0, atol=runner.SOFTMAX_TOL)


@pytest.mark.todo("task 1")
@pytest.mark.core  # task 1's trap: -inf - (-inf) and 0 / 0 are NaN
def test_all_neg_inf_row_gives_zeros_not_nan(attention, runner):
    """A row with every entry -inf (a query that may attend nowhere) gives zeros; others are normal."""
    x = torch.tensor([[NEG_INF, NEG_INF, NEG_INF], [0.0, 1.0, 2.0]])  # (2, 3)
    p = attention.stable_softmax(x, dim=-1)
    expect.finite("stable_softmax with an all -inf row", p)
    expect.equal("the all -inf row's probabilities", p[0], torch.zeros(3))
    torch.testing.assert_close(p[1], torch.softmax(x[1], dim=-1), rtol=0, atol=runner.SOFTMAX_TOL)


@pytest.mark.todo("task 1")
def test_neg_inf_entries_get_exactly_zero(attention):
    """A -inf entry (a blocked key) gets probability exactly 0, and the rest still sum to 1."""
    x = torch.tensor([[0.5, NEG_INF, 2.0, NEG_INF]])  # (1, 4)
    p = attention.stable_softmax(x, dim=-1)
    expect.equal("the probabilities of the -inf entries 1 and 3", p[0, [1, 3]], torch.zeros(2))
    # 1e-6: a float32 sum of 2 probabilities, a few rounding units of 2**-23.
    torch.testing.assert_close(p.sum(dim=-1), torch.ones(1), rtol=0, atol=1e-6)


@pytest.mark.todo("task 1")
@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4, 5)])
def test_rows_sum_to_one(attention, shape):
    """Every row of a softmax is a probability distribution: non-negative, summing to 1."""
    p = attention.stable_softmax(randn(*shape, seed=0), dim=-1)
    expect.at_least("stable_softmax's probabilities", p, 0.0)
    # 1e-6: float32 sum of <= 7 terms of size <= 1, a few rounding units of 2**-23.
    torch.testing.assert_close(p.sum(dim=-1), torch.ones(shape[:-1]), rtol=0, atol=1e-6)
