"""Step 6: the training loop. Batches, a loss estimate, one optimiser step, the learning rate.

You write four functions (tasks 1-4). The rest is given: the train/validation split, the fixed
validation batches, the checkpoints (written atomically, checked when read) and the loop that
calls your functions, with its progress bar, resume and Ctrl-C handling.
"""

from __future__ import annotations  # signatures name TrainConfig, whichever copy is loaded

import math
import os
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from tqdm import tqdm

CHECKPOINT_FORMAT = 1  # bumped whenever the checkpoint's keys change


@dataclass(frozen=True)
class TrainConfig:
    """Everything a run depends on besides the model: a checkpoint records it and resumes only with it."""

    T: int = 64  # characters of context per training example (the model's T_max or less)
    B: int = 32  # examples per step
    steps: int = 2000  # optimiser steps in all
    lr: float = 3e-3  # the peak learning rate, reached after warm-up
    min_lr: float = 3e-4  # the learning rate the cosine decays to (lr / 10)
    warmup: int = 100  # steps of linear warm-up from ~0 to lr
    weight_decay: float = 0.1
    grad_clip: float = 1.0  # the largest gradient norm a step may take
    eval_every: int = 100  # steps between two validation estimates
    eval_batches: int = 8  # fixed validation batches per estimate
    val_fraction: float = 0.1  # the last 10% of the text is held out
    checkpoint_every: int = 100  # steps between two checkpoints
    seed: int = 0


def _positive(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


def check_config(cfg: TrainConfig) -> None:
    """ValueError for a config that cannot train."""
    for name in ("T", "B", "steps", "eval_every", "eval_batches"):
        _positive(name, getattr(cfg, name))
    _positive("checkpoint_every", cfg.checkpoint_every)
    if not 0 < cfg.val_fraction < 1:
        raise ValueError(f"val_fraction must be between 0 and 1, got {cfg.val_fraction}")
    if not 0 <= cfg.warmup < cfg.steps:
        raise ValueError(f"warmup must be in [0, steps) = [0, {cfg.steps}), got {cfg.warmup}")
    if not 0 < cfg.min_lr <= cfg.lr:
        raise ValueError(f"need 0 < min_lr <= lr, got min_lr = {cfg.min_lr}, lr = {cfg.lr}")


def split(data: torch.Tensor, val_fraction: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The first 1 - val_fraction of the token ids for training, the rest for validation."""
    n = int(len(data) * (1 - val_fraction))
    return data[:n], data[n:]  # (N_train,), (N_val,)


def check_batch_args(data: torch.Tensor, B: int, T: int) -> None:
    """ValueError unless `data` is a 1-D id tensor with more than T ids, and B, T >= 1."""
    _positive("B (the batch size)", B)
    _positive("T (the context)", T)
    if data.ndim != 1 or data.dtype != torch.long:
        raise ValueError(
            f"data must be a 1-D tensor of int64 token ids, got {tuple(data.shape)} {data.dtype}"
        )
    if len(data) <= T:
        raise ValueError(
            f"the context T = {T} is longer than the corpus split: its {len(data)} ids give no "
            f"window of {T} inputs and {T} targets"
        )


# --- task 1: batches ------------------------------------------------------------------------------


def get_batch(data: torch.Tensor, B: int, T: int, generator: torch.Generator):
    """x, y (B, T) int64: B windows of `data` at random starts, y the same windows one id later."""
    check_batch_args(data, B, T)
    raise NotImplementedError(
        "TODO(step-06 task 1: get_batch): return (x, y), both (B, T) int64. Row b of x holds the T ids of `data` that begin at a start drawn uniformly, with `generator` and nothing else, from every start whose window and targets fit; row b of y holds the T ids that begin one later, so each position's target is the id after it. Handout: task 1. Trap: targets not shifted."
    )


def fixed_batches(data: torch.Tensor, cfg: TrainConfig, seed: int) -> list:
    """cfg.eval_batches batches of `data` from their own seed: the same ones at every estimate."""
    g = torch.Generator().manual_seed(seed)
    return [get_batch(data, cfg.B, cfg.T, g) for _ in range(cfg.eval_batches)]


# --- task 2: the loss estimate --------------------------------------------------------------------


def estimate_loss(model: torch.nn.Module, batches: list) -> float:
    """The mean loss of `model` over fixed (x, y) batches, in eval mode and without gradients."""
    raise NotImplementedError(
        "TODO(step-06 task 2: estimate_loss): return a Python float, the mean over `batches` of model(x, y)[1]. While measuring, the model is in eval mode (dropout off) and no autograd graph is built; afterwards the model is back in the mode it was in (train mode while training), its weights untouched. Handout: task 2. Trap: measuring in train mode, or with gradients."
    )


# --- task 3: the learning rate --------------------------------------------------------------------


def lr_at(step: int, cfg: TrainConfig) -> float:
    """The learning rate of step `step`: linear warm-up to cfg.lr, then a cosine down to cfg.min_lr."""
    raise NotImplementedError(
        "TODO(step-06 task 3: lr_at): return the learning rate of step `step`, a float (the sizes are fields of cfg). Warm-up: over the first warmup steps the rate rises linearly, step 0 getting one warmup-th of the peak and the last warm-up step the peak itself. Then half a cosine takes it from the peak down to the floor min_lr, reached exactly at step = steps: train() takes steps 0 to steps - 1, so its last step runs a little above the floor. It never exceeds the peak. Handout: task 3 (nanoGPT's get_lr). Trap: a learning rate off by 10x (the floor where the peak belongs)."
    )


# --- task 4: one optimiser step -------------------------------------------------------------------


def train_step(model, optimizer, x: torch.Tensor, y: torch.Tensor, grad_clip: float) -> float:
    """One step on the batch (x, y): fresh gradients, clipped to norm grad_clip; the loss before it."""
    raise NotImplementedError(
        "TODO(step-06 task 4: train_step): compute the loss of model(x, y), backpropagate it into gradients that hold this batch's gradient only, clip their total norm to grad_clip, take one optimizer step and return the loss as a float. Handout: task 4. Traps: gradients that accumulate (no zero_grad), clipping after the step."
    )


# --- given: checkpoints ---------------------------------------------------------------------------


def save_checkpoint(path: Path, state: dict) -> Path:
    """Write `state` to `path` atomically: a temporary file in the same folder, then os.replace."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())  # the bytes are on disk before the name points at them
        os.replace(tmp, path)  # atomic: readers see the old checkpoint or the new one, never half
    except BaseException:  # Ctrl-C included: the old checkpoint stays, the partial file goes
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


KEYS = {"format", "config", "model", "optimizer", "generator", "rng", "step", "losses"}


def load_checkpoint(path: Path, config: dict) -> dict:
    """The state saved at `path`, refused with a ValueError if corrupt, partial, or of another config."""
    try:
        state = torch.load(path, weights_only=True)  # plain tensors and containers: no code runs
    except Exception as exc:  # truncated, not a checkpoint at all, unreadable
        raise ValueError(
            f"{path} is not a readable checkpoint ({type(exc).__name__}: {str(exc)[:80]}); "
            "it was not used: delete it to start afresh"
        ) from None
    if (
        not isinstance(state, dict)
        or state.get("format") != CHECKPOINT_FORMAT
        or KEYS - state.keys()
    ):
        missing = sorted(KEYS - state.keys()) if isinstance(state, dict) else "everything"
        raise ValueError(f"{path} is not a step-06 checkpoint (missing {missing}); it was not used")
    if state["config"] != config:
        diff = {
            k: (state["config"].get(k), v) for k, v in config.items() if state["config"].get(k) != v
        }
        raise ValueError(
            f"{path} was saved by another config; (saved, now) differ at {diff}. "
            "Resume with the same settings, or delete it to start afresh"
        )
    return state


# --- given: the loop ------------------------------------------------------------------------------


def run_config(cfg: TrainConfig, model_config: dict) -> dict:
    """What a checkpoint must match to be resumed: the training and the model settings."""
    return {
        **{f"train.{k}": v for k, v in asdict(cfg).items()},
        **{f"model.{k}": v for k, v in model_config.items()},
    }


def train(
    model: torch.nn.Module,
    model_config: dict,
    cfg: TrainConfig,
    data: torch.Tensor,
    checkpoint: Path | None = None,
    progress: bool = True,
    on_step=None,
) -> dict:
    """Train `model` on the ids `data` with AdamW; resume from `checkpoint` when it exists.

    Returns the losses: every step's training loss and (step, loss) pairs of validation estimates.
    Ctrl-C stops at once; the last checkpoint stays valid, and the next run resumes from it.
    `on_step(step)` is called after each step (the tests stop a run with it).
    """
    check_config(cfg)
    train_data, val_data = split(data, cfg.val_fraction)
    check_batch_args(val_data, cfg.B, cfg.T)  # both splits must hold a window
    check_batch_args(train_data, cfg.B, cfg.T)
    config = run_config(cfg, model_config)
    # lr is set before every step from lr_at
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=cfg.lr, betas=(0.9, 0.99), weight_decay=cfg.weight_decay
    )
    g = torch.Generator().manual_seed(cfg.seed)  # the training batches: its state is checkpointed
    val_batches = fixed_batches(val_data, cfg, seed=cfg.seed + 1)  # drawn from validation data only
    step, losses = 0, {"train": [], "val": []}
    if checkpoint is not None and checkpoint.exists():
        state = load_checkpoint(checkpoint, config)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])  # Adam's moments: a fresh one would jolt
        g.set_state(state["generator"])
        torch.set_rng_state(state["rng"])  # the global generator: dropout masks, if any
        step, losses = state["step"], state["losses"]

    def snapshot():
        return dict(
            format=CHECKPOINT_FORMAT,
            config=config,
            model=model.state_dict(),
            optimizer=optimizer.state_dict(),
            generator=g.get_state(),
            rng=torch.get_rng_state(),
            step=step,
            losses=losses,
        )

    model.train()
    bar = tqdm(total=cfg.steps, initial=step, desc="training", unit="step", disable=not progress)
    start, cpu = time.perf_counter(), time.process_time()
    try:
        while step < cfg.steps:
            if step % cfg.eval_every == 0:
                losses["val"].append((step, estimate_loss(model, val_batches)))
            for group in optimizer.param_groups:
                group["lr"] = lr_at(step, cfg)
            x, y = get_batch(train_data, cfg.B, cfg.T, g)
            losses["train"].append(train_step(model, optimizer, x, y, cfg.grad_clip))
            step += 1
            bar.update(1)
            bar.set_postfix(loss=f"{losses['train'][-1]:.3f}", val=f"{losses['val'][-1][1]:.3f}")
            if checkpoint is not None and (step % cfg.checkpoint_every == 0 or step == cfg.steps):
                save_checkpoint(checkpoint, snapshot())
            if on_step:
                on_step(step)
        if not losses["val"] or losses["val"][-1][0] != step:
            losses["val"].append((step, estimate_loss(model, val_batches)))
            if checkpoint is not None:
                save_checkpoint(checkpoint, snapshot())
    except KeyboardInterrupt:
        bar.close()
        saved = ""
        if checkpoint is not None and checkpoint.exists():
            saved = f"; the checkpoint {checkpoint} is valid: run again to resume"
        elif checkpoint is not None:
            saved = "; no checkpoint written yet: the next run starts from step 0"
        print(f"\nstopped at step {step}{saved}")
        raise
    bar.close()
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    return dict(losses=losses, seconds=seconds, cpu_seconds=cpu_seconds, step=step)
