"""Fixtures for Step 6: the training module under test, and a tiny model that trains in milliseconds."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from common.course import course_step
from common.loader import kept_whole, load, load_file, reference
from common.seeding import seed_all


@pytest.fixture
def train(impl):
    """The training module under test (starter or solution, per --impl, or an override), whose own
    functions and classes its code leaves as they are."""
    with kept_whole(load("step-06", "train", impl)) as module:
        yield module


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
    """steps/step-06/run.py: the run's declaration, RUN, and the modules it loads."""
    return load_file(course_step("step-06").folder / "run.py")


class Tiny(nn.Module):
    """A stand-in language model: embedding, one linear layer and dropout, (logits, loss) like a GPT."""

    def __init__(self, V: int = 11, d: int = 16, p: float = 0.0):
        super().__init__()
        self.emb = nn.Embedding(V, d)
        self.drop = nn.Dropout(p)
        self.out = nn.Linear(d, V)
        self.seen = []  # (training, grad enabled, min id, max id) per forward: what the checks read
        self.shapes = []  # idx's shape per forward: a batch's axes swapped give the same loss here
        self.dropping = []  # the dropout's own mode per forward: a mode set on submodules alone
        self.frozen = []  # the weights that required no grad, per forward: requires_grad_(False)

    def __setattr__(self, name, value):
        # a GPT takes model.train = False silently and fails at the next model.eval(), far away
        if name in ("train", "eval") and not callable(value):
            raise TypeError(
                f"model.{name} = {value!r} replaces the method that sets the mode; "
                f"model.{name}({value!r}) calls it"
            )
        super().__setattr__(name, value)

    def forward(self, idx, targets=None):
        self.seen.append(
            (self.training, torch.is_grad_enabled(), idx.min().item(), idx.max().item())
        )
        self.shapes.append(tuple(idx.shape))
        self.dropping.append(self.drop.training)
        self.frozen.append(sum(not p.requires_grad for p in self.parameters()))
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


# --- the four TODOs as a test of the given loop has them: Step 5's (closed before Step 6 opens) -----
# Stand-ins, not Step 6's answers: Step 5's batches and its loop's step (no clipping), the mean loss
# without the mode switch, a linear schedule; the given loop runs on them, and none of yours runs.

step5 = reference("step-05", "train")
given_batch = step5.get_batch  # B windows at seeded starts, y one id later


@torch.no_grad()
def given_estimate(model, batches):
    """The mean loss of the batches, as Step 5's estimate_loss takes it (in the mode it finds)."""
    return torch.stack([model(x, y)[1] for x, y in batches]).mean().item()  # (n,) -> their mean


def given_lr(step, cfg):
    """A straight line from cfg.lr at step 0 down to cfg.min_lr at the last step."""
    return cfg.lr + (cfg.min_lr - cfg.lr) * step / max(cfg.steps, 1)


def given_step(model, opt, x, y, grad_clip):
    """Step 5's loop body: forward, zero_grad, backward, step (unclipped); the loss before it."""
    _, loss = model(x, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return loss.item()


GIVEN_TODOS = {
    "get_batch": given_batch,
    "estimate_loss": given_estimate,
    "lr_at": given_lr,
    "train_step": given_step,
}


def with_given_todos(module, monkeypatch):
    """`module` (a train.py) with its four TODOs replaced by the test's own: what runs then is the
    code the starter gives (the loop, the checkpoints), so the test is marked `given`."""
    for name, function in GIVEN_TODOS.items():
        monkeypatch.setattr(module, name, function)
    return module


@pytest.fixture
def given_todos(monkeypatch):
    """given_todos(module): a train.py (the one under test, or a copy of it) on the test's TODOs."""
    return lambda module: with_given_todos(module, monkeypatch)


@pytest.fixture
def loop(train, given_todos):
    """The training module under test with the test's own four TODOs: its given loop alone."""
    return given_todos(train)
