"""Fixtures for Step 6: the training module under test, and a tiny model that trains in milliseconds."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from common.course import course_step
from common.loader import load, load_file
from common.seeding import seed_all


@pytest.fixture
def train(impl):
    """The training module under test (starter or solution, per --impl, or an override)."""
    return load("step-06", "train", impl)


@pytest.fixture
def induction():
    """steps/step-06/induction.py: the attention-only model, its data and its scores."""
    return load_file(course_step("step-06").folder / "induction.py")


@pytest.fixture
def heads():
    """steps/step-06/heads.py: scores and labels of trained heads."""
    return load_file(course_step("step-06").folder / "heads.py")


@pytest.fixture
def run():
    """steps/step-06/run.py: tables, figures and the README's generated blocks."""
    return load_file(course_step("step-06").folder / "run.py")


class Tiny(nn.Module):
    """A stand-in language model: embedding, one linear layer and dropout, (logits, loss) like a GPT."""

    def __init__(self, V: int = 8, d: int = 16, p: float = 0.0):
        super().__init__()
        self.emb = nn.Embedding(V, d)
        self.drop = nn.Dropout(p)
        self.out = nn.Linear(d, V)
        self.seen = []  # (training, grad enabled, min id, max id) per forward: what the checks read

    def forward(self, idx, targets=None):
        self.seen.append(
            (self.training, torch.is_grad_enabled(), idx.min().item(), idx.max().item())
        )
        logits = self.out(self.drop(self.emb(idx)))  # (B, T, V)
        loss = None if targets is None else F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        return logits, loss


@pytest.fixture
def tiny():
    """A factory of seeded Tiny models: tiny(seed=0, p=0.0)."""

    def make(seed: int = 0, **kw) -> Tiny:
        seed_all(seed)
        return Tiny(**kw)

    return make
