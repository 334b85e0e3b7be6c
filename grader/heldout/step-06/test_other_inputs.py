"""Step 6's contracts at sizes, seeds and schedules the visible tests never use: the grade runs
these beside an instructor's own held-out tests, so a TODO right only at the visible tests' inputs
(a table of their values pasted in, a branch on B == 4 or on a seed) fails here."""

import math

import pytest
import torch

from common import expect


@pytest.mark.todo("task 1")
@pytest.mark.core  # the contract itself, at other inputs: as core as the visible test of it
def test_batches_are_windows_at_every_start_drawn_from_the_generator(train):
    data = torch.arange(100, 129)  # (29,) id == 100 + position
    g, fresh = torch.Generator().manual_seed(90210), torch.Generator().manual_seed(90210)
    x, y = train.get_batch(data, 3000, 5, g)  # (3000, 5) each: every start many times over
    expect.shape("get_batch(data, B=3000, T=5)'s x", x, (3000, 5))
    starts = x[:, 0] - 100  # (3000,) each row's first position
    expect.equal("each row of x, a window of data", x, starts[:, None] + 100 + torch.arange(5))
    expect.equal("y, x one id later", y, x + 1)
    expect.equal("the starts drawn", sorted(set(starts.tolist())), list(range(29 - 5)))
    expect.differs("the generator's state after get_batch", g.get_state(), fresh.get_state())


@pytest.mark.todo("task 2")
@pytest.mark.core  # the contract itself, at other inputs: as core as the visible test of it
def test_estimate_loss_is_the_eval_mode_mean_on_other_batches(train, tiny):
    model = tiny(17, p=0.5).train()  # dropout on: only eval mode measures without it
    g = torch.Generator().manual_seed(31337)
    batches = [(torch.randint(11, (3, 5), generator=g), torch.randint(11, (3, 5), generator=g))
               for _ in range(3)]  # fmt: skip
    got = train.estimate_loss(model, batches)
    model.eval()
    with torch.no_grad():
        want = sum(model(x, y)[1].item() for x, y in batches) / len(batches)
    expect.close("estimate_loss on three (3, 5) batches", got, want, 1e-6)


@pytest.mark.todo("task 3")
@pytest.mark.core  # the contract itself, at other inputs: as core as the visible test of it
@pytest.mark.parametrize("step", [0, 6, 7, 20, 33, 45])
def test_lr_at_is_the_warm_up_then_cosine_of_another_schedule(train, step):
    steps, warmup, lr, min_lr = 45, 7, 0.02, 0.0015
    cfg = train.TrainConfig(steps=steps, warmup=warmup, lr=lr, min_lr=min_lr)
    done = (step - warmup) / (steps - warmup)  # the share of the decay behind it
    want = (
        lr * (step + 1) / warmup
        if step < warmup
        else min_lr + (lr - min_lr) * (1 + math.cos(math.pi * done)) / 2
    )
    expect.close(f"lr_at({step}) of steps=45, warmup=7, lr=0.02, min_lr=0.0015",
                 train.lr_at(step, cfg), want, 1e-12)  # fmt: skip


@pytest.mark.todo("task 4")
@pytest.mark.core  # the contract itself, at other inputs: as core as the visible test of it
def test_train_step_clips_at_norm_1_on_another_batch(train, tiny):
    model, fresh = tiny(23), tiny(23)
    g = torch.Generator().manual_seed(4242)
    x, y = torch.randint(11, (6, 7), generator=g), torch.randint(11, (6, 7), generator=g)
    with torch.no_grad():  # a gradient far above norm 1, so the clip at 1.0 acts
        for p in (*model.parameters(), *fresh.parameters()):
            p.mul_(30.0)
    train.train_step(model, torch.optim.SGD(model.parameters(), lr=1.0), x, y, 1.0)
    fresh(x, y)[1].backward()
    norm = torch.nn.utils.clip_grad_norm_(fresh.parameters(), 1.0).item()
    assert norm > 1.0, f"the test's batch needs a gradient above norm 1, got {norm}"
    with torch.no_grad():
        for p in fresh.parameters():
            p -= p.grad  # SGD at lr 1: minus the clipped gradient
    got = torch.cat([p.detach().flatten() for p in model.parameters()])  # (n_params,)
    want = torch.cat([p.detach().flatten() for p in fresh.parameters()])  # (n_params,)
    expect.close("the weights after train_step(grad_clip=1.0), B=6", got, want, 1e-5)
