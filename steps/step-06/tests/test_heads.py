"""Head scores and labels on hand-built attention patterns, where the right answer is known."""

import math

import pytest
import torch

# heads.py is course code, not a TODO: these tests pass on the untouched starter
pytestmark = pytest.mark.course

T = 16


def rows_from(weights: dict) -> torch.Tensor:
    """A (T, T) causal attention: row i puts weights[key(i)] on each key; the rest spread evenly."""
    A = torch.zeros(T, T)
    for i in range(T):
        for key, w in weights.items():
            A[i, key(i) if key(i) >= 0 else 0] += w
        A[i, : i + 1] += (1 - sum(weights.values())) / (i + 1)
    return A


def test_a_pure_previous_token_head(heads):
    A = torch.zeros(T, T)
    A[0, 0] = 1
    A[torch.arange(1, T), torch.arange(T - 1)] = 1  # row i: all weight on key i - 1
    s = heads.head_scores(A)
    assert s["previous"] == pytest.approx(1) and s["self"] == 0 and s["entropy"] == 0
    assert s["first"] == pytest.approx(1 / (T - 1)), "only row 1's previous token is key 0"
    assert heads.label(s) == "previous-token"


def test_a_first_token_sink(heads):
    A = torch.zeros(T, T)
    A[:, 0] = 1
    s = heads.head_scores(A)
    assert s["first"] == 1 and s["self"] == 0 and s["previous"] == pytest.approx(1 / (T - 1))
    assert heads.label(s) == "first-token/sink"


def test_the_diagonal_is_local(heads):
    s = heads.head_scores(torch.eye(T))
    assert s["self"] == 1 and s["local"] == 1 and s["previous"] == 0 and s["first"] == 0
    assert heads.label(s) == "local/diagonal"


def test_a_uniform_head_is_broad_with_the_entropy_of_its_visible_keys(heads):
    A = torch.tril(torch.ones(T, T))
    A = A / A.sum(dim=-1, keepdim=True)  # row i: 1 / (i + 1) on keys 0..i
    s = heads.head_scores(A)
    assert s["evenness"] == pytest.approx(1, abs=1e-6)
    assert s["entropy"] == pytest.approx(heads.uniform_entropy(T), abs=1e-5)
    assert s["first"] == pytest.approx(sum(1 / (i + 1) for i in range(1, T)) / (T - 1))
    assert heads.label(s) == "broad"


def test_a_mix_takes_the_first_label_whose_score_reaches_its_threshold(heads):
    A = rows_from({lambda i: i - 1: 0.55, lambda i: 0: 0.3})  # mostly previous, some first
    assert heads.label(heads.head_scores(A)) == "previous-token"
    A = rows_from({lambda i: i - 1: 0.3, lambda i: 0: 0.6})
    assert heads.label(heads.head_scores(A)) == "first-token/sink"
    A = rows_from({lambda i: i - 1: 0.3, lambda i: i: 0.3})  # previous + self: local
    s = heads.head_scores(A)
    assert s["previous"] < heads.PREVIOUS and s["local"] >= heads.LOCAL
    assert heads.label(s) == "local/diagonal"


def test_a_peaked_content_head_is_neither(heads):
    A = torch.zeros(T, T)
    for i in range(T):
        A[i, (i // 2) if i > 3 else 0] = 1.0  # half-way back: not local, not first, one-hot
    s = heads.head_scores(A)
    assert heads.label(s) == "content (mixed)" and s["evenness"] == 0


def test_every_head_is_read_from_the_model(heads):
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Module(), torch.nn.Module()

        def forward(self, idx):
            B, T = idx.shape
            self.a.A = torch.eye(T).expand(B, 2, T, T)  # (B, h, T, T): two heads at once
            self.b.A = torch.zeros(B, T, T)  # (B, T, T): one head
            self.b.A[..., 0] = 1

    rows = heads.trained_heads(Model(), torch.zeros(1, 8, dtype=torch.long), h=3)
    assert [(r["layer"], r["head"], r["label"]) for r in rows] == [
        (0, 0, "local/diagonal"),
        (0, 1, "local/diagonal"),
        (0, 2, "first-token/sink"),
    ]


@pytest.mark.parametrize("shape", [(4, 5), (2, 2), (3, 4, 4)])
def test_a_non_square_or_tiny_matrix_is_refused(heads, shape):
    with pytest.raises(ValueError, match="square"):
        heads.head_scores(torch.ones(shape))


def test_uniform_entropy_is_the_mean_log_of_visible_keys(heads):
    assert heads.uniform_entropy(3) == pytest.approx((math.log(2) + math.log(3)) / 2)
