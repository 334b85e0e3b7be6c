"""Step 6: the training loop. Batches, a loss estimate, one optimiser step, the learning rate.

You write four functions (tasks 1-4). The rest is given: the train/validation split, the fixed
validation batches, the checkpoints (written atomically, checked when read, each recording the
code that trained it) and the loop that calls your functions, with its progress bar, resume,
Ctrl-C handling and a stop at the first loss that is not finite.
"""

from __future__ import annotations  # signatures name TrainConfig, whichever copy is loaded

import errno
import hashlib
import io
import math
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from tqdm import tqdm

CHECKPOINT_FORMAT = 2  # bumped whenever the checkpoint's keys change (2: the code that trained it)


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
    # BEGIN SOLUTION TODO(step-06 task 1: get_batch)
    # CONTRACT: return (x, y), both (B, T) int64. Row b of x holds the T ids of `data` that
    #   begin at a start drawn uniformly, with `generator` and nothing else, from every start
    #   whose window and targets fit; row b of y holds the T ids that begin one later, so each
    #   position's target is the id after it. Handout: task 1. Trap: targets not shifted.
    # HINT 1: A window of T + 1 ids holds both: the inputs are its first T ids, the targets its
    #   last T. Valid starts are the ones whose window fits inside data.
    # HINT 2: torch.randint(high, (B,), generator=generator) draws the starts; the last
    #   valid start is len(data) - T - 1. torch.stack builds the (B, T) batch. Pass the
    #   generator on every draw: the global generator would make resume differ.
    # HINT 3: ix = torch.randint(___, (B,), generator=generator); x = torch.stack([data[i : i +
    #   ___] for i in ix]); y = torch.stack([data[i + ___ : i + ___ + T] for i in ix])
    ix = torch.randint(len(data) - T, (B,), generator=generator)  # (B,) starts
    x = torch.stack([data[i : i + T] for i in ix])  # (B, T)
    y = torch.stack([data[i + 1 : i + 1 + T] for i in ix])  # (B, T) the next id of each
    return x, y
    # END SOLUTION


def fixed_batches(data: torch.Tensor, cfg: TrainConfig, seed: int) -> list:
    """cfg.eval_batches batches of `data` from their own seed: the same ones at every estimate."""
    g = torch.Generator().manual_seed(seed)
    return [get_batch(data, cfg.B, cfg.T, g) for _ in range(cfg.eval_batches)]


# --- task 2: the loss estimate --------------------------------------------------------------------


def estimate_loss(model: torch.nn.Module, batches: list) -> float:
    """The mean loss of `model` over fixed (x, y) batches, in eval mode and without gradients."""
    # BEGIN SOLUTION TODO(step-06 task 2: estimate_loss)
    # CONTRACT: return a Python float, the mean over `batches` of model(x, y)[1]. While measuring,
    #   the model is in eval mode (dropout off) and no autograd graph is built; afterwards the
    #   model is back in the mode it was in (train mode while training), even when a forward
    #   raises (try/finally; the error goes on to the caller), gradient tracking as it was, its
    #   weights and torch's random state untouched. Handout: task 2. Trap: measuring in train
    #   mode, or with gradients.
    # HINT 1: Remember model.training, switch to eval, measure, switch back, even if a forward
    #   raises.
    # HINT 2: model.eval(), model.train(mode), torch.no_grad(), loss.item(); try/finally.
    # HINT 3: was = model.training; model.___(); then in a try: with torch.___(): losses =
    #   [model(x, y)[1].___() for x, y in batches]; and in its finally: model.train(___).
    was_training = model.training
    model.eval()  # dropout (if any) off: the number measures the model, not the noise
    try:
        with torch.no_grad():  # no graph: a measurement must not cost memory or touch .grad
            losses = [model(x, y)[1].item() for x, y in batches]
    finally:
        model.train(was_training)  # the next training step needs train mode again
    return sum(losses) / len(losses)
    # END SOLUTION


# --- task 3: the learning rate --------------------------------------------------------------------


def lr_at(step: int, cfg: TrainConfig) -> float:
    """The learning rate of step `step`: linear warm-up to cfg.lr, then a cosine down to cfg.min_lr."""
    # BEGIN SOLUTION TODO(step-06 task 3: lr_at)
    # CONTRACT: return the learning rate of step `step`, a float (the sizes are fields of cfg).
    #   Warm-up: over the first warmup steps the rate rises linearly, step 0 getting one
    #   warmup-th of the peak and the last warm-up step the peak itself. Then half a cosine
    #   takes it from the peak down to the floor min_lr, reached exactly at step = steps: train()
    #   takes steps 0 to steps - 1, so its last step runs a little above the floor. It never
    #   exceeds the peak. Handout: task 3 (nanoGPT's get_lr). Trap: a learning rate off by 10x
    #   (the floor where the peak belongs).
    # HINT 1: After warm-up, let p run from 0 to 1 over the remaining steps; the cosine factor
    #   (1 + cos(pi p)) / 2 runs from 1 to 0 and mixes lr and min_lr.
    # HINT 2: math.cos, math.pi; p = (step - warmup) / (steps - warmup).
    # HINT 3: two returns. In warm-up (if step < cfg.warmup): return cfg.lr * ___ / cfg.warmup.
    #   After it: p = (step - ___) / (cfg.steps - ___), then return cfg.min_lr + (cfg.lr -
    #   cfg.min_lr) * (1 + math.cos(math.pi * ___)) / 2.
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup  # never 0: step 0 already moves the weights
    p = (step - cfg.warmup) / (cfg.steps - cfg.warmup)  # 0 -> 1 over the decay
    return cfg.min_lr + (cfg.lr - cfg.min_lr) * (1 + math.cos(math.pi * p)) / 2
    # END SOLUTION


# --- task 4: one optimiser step -------------------------------------------------------------------


def train_step(model, optimizer, x: torch.Tensor, y: torch.Tensor, grad_clip: float) -> float:
    """One step on the batch (x, y): fresh gradients, clipped to norm grad_clip; the loss before it."""
    # BEGIN SOLUTION TODO(step-06 task 4: train_step)
    # CONTRACT: compute the loss of model(x, y), backpropagate it into gradients that hold this
    #   batch's gradient only, clip their total norm to grad_clip, take one optimizer step and
    #   return the loss as a Python float (loss.item(): torch warns at float() of a tensor that
    #   carries gradients), in the mode the model is given (train), setting no seed (dropout's
    #   masks are the run's next draws). Handout: task 4.
    #   Traps: gradients that accumulate (no zero_grad), clipping after the step.
    # HINT 1: Five moves in a fixed order: forget the old gradients, forward, backward, clip,
    #   then step.
    # HINT 2: optimizer.zero_grad(set_to_none=True), loss.backward(),
    #   torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip), optimizer.step().
    # HINT 3: optimizer.___(set_to_none=True); _, loss = model(___, ___); loss.___();
    #   torch.nn.utils.clip_grad_norm_(model.___(), ___); optimizer.___(); return loss.___()
    optimizer.zero_grad(set_to_none=True)  # .grad accumulates: else every past batch adds in
    _, loss = model(x, y)  # (B, T, V) logits and the mean cross-entropy
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)  # one bad batch cannot blow up
    optimizer.step()
    return loss.item()
    # END SOLUTION


# --- given: checkpoints ---------------------------------------------------------------------------


class CheckpointError(ValueError):
    """A checkpoint that cannot be read, resumed or written: the message names the file and the fix."""

    def __init__(self, message: str):
        super().__init__(message)


class OtherCode(CheckpointError):
    """A checkpoint trained by other code: the other implementation, or this file before an edit."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during training: the message says which step the next run starts from."""

    def __init__(self, message: str):
        super().__init__(message)


def code_identity() -> dict:
    """Whose code trains: this file's folder (solution or starter) and a hash of its text."""
    here = Path(__file__)
    return {"impl": here.parent.name, "sha256": hashlib.sha256(here.read_bytes()).hexdigest()}


def whose(code: dict) -> str:
    """`code` (a code_identity) in words."""
    name = {"solution": "the reference solution", "starter": "your starter"}.get(code["impl"], "")
    return f"{name} ({code['impl']}/train.py)".strip()


def _written(path: Path) -> str:
    return f"{path} is as it was" if path.exists() else "no checkpoint was written"


def _size(n: int) -> str:
    return (
        f"{n / 1e9:.1f} GB"
        if n >= 1e9
        else f"{n / 1e6:.1f} MB"
        if n >= 1e5
        else f"{n / 1e3:.1f} kB"
    )


def write_problem(path: Path, exc: OSError, size: int) -> str:
    """One line for a checkpoint that could not be written: a full disk names the disk and its space."""
    if exc.errno in {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}:
        disk = path.parent.resolve()
        while not os.path.ismount(disk) and disk != disk.parent:
            disk = disk.parent
        try:
            free = f"{_size(shutil.disk_usage(disk).free)} free"
        except OSError:
            free = "free space unknown"
        return (
            f"the disk {disk} is full ({free}; the checkpoint needs {_size(size)}): free some "
            f"space on it, or train into a folder on another disk with --out DIR; {_written(path)}"
        )
    return f"could not write the checkpoint {path}: {exc.strerror or exc}; {_written(path)}"


def save_checkpoint(path: Path, state: dict) -> Path:
    """Write `state` to `path` atomically: a temporary file in the same folder, then os.replace."""
    buffer = io.BytesIO()
    torch.save(state, buffer)  # in memory first: a full disk then fails in write(), with its errno
    data, tmp = buffer.getvalue(), None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())  # the bytes are on disk before the name points at them
        os.replace(tmp, path)  # atomic: readers see the old checkpoint or the new one, never half
    except BaseException as exc:  # Ctrl-C included: the old checkpoint stays, the partial file goes
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise CheckpointError(write_problem(path, exc, len(data))) from None
        raise
    return path


def remove_stale_temporaries(path: Path) -> None:
    """Delete the temporary files of `path` that a run killed while saving it left behind."""
    for tmp in path.parent.glob(f".{path.name}.*.tmp"):
        try:
            tmp.unlink()
        except OSError:  # open in another program (Windows): the next run tries again
            pass


KEYS = {"format", "code", "config", "model", "optimizer", "generator", "rng", "step", "losses"}


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:80]}" if text else type(exc).__name__


def _not_finite(state: dict) -> str | None:
    """What in a checkpoint is NaN or infinite (None when all is finite)."""
    weights = [name for name, t in state["model"].items() if not torch.isfinite(t).all()]
    if weights:
        return f"weights ({weights[0]}, ...) that are"
    values = list(state["losses"]["train"]) + [v for _, v in state["losses"]["val"]]
    return None if all(math.isfinite(v) for v in values) else "losses that are"


def load_checkpoint(path: Path, config: dict) -> dict:
    """The state saved at `path`, or a CheckpointError naming the file and the fix (one line)."""
    fix = f"it was not used: delete {path} to train from step 0"
    try:
        state = torch.load(path, weights_only=True)  # plain tensors and containers: no code runs
    except Exception as exc:  # truncated, not a checkpoint at all, unreadable
        raise CheckpointError(
            f"{path} is not a readable checkpoint ({_first_line(exc)}); {fix}"
        ) from None
    if not isinstance(state, dict) or "format" not in state:
        raise CheckpointError(
            f"{path} is not a step-06 checkpoint (no format key); {fix} (or move it away if you need it)"
        )
    if state["format"] != CHECKPOINT_FORMAT or KEYS - state.keys():
        missing = sorted(KEYS - state.keys())
        lacks = f", it lacks {', '.join(missing)}" if missing else ""
        raise CheckpointError(
            f"{path} is a checkpoint of format {state['format']!r}{lacks} (this code reads format "
            f"{CHECKPOINT_FORMAT}, written by an older version of the course); {fix}"
        )
    if (then := state["code"]) != (now := code_identity()):
        edited = then["impl"] == now["impl"]  # the same file, changed since it was saved
        then = f"an earlier version of {then['impl']}/train.py" if edited else whose(then)
        raise OtherCode(
            f"{path} was trained by {then}, not by the code running now; {fix} with this code"
        )
    if state["config"] != config:
        diff = {
            k: (state["config"].get(k), v) for k, v in config.items() if state["config"].get(k) != v
        }
        raise CheckpointError(
            f"{path} was saved by another config; (saved, now) differ at {diff}. "
            f"Resume with the same settings, or delete {path} to train from step 0"
        )
    if what := _not_finite(state):
        raise CheckpointError(f"{path} holds {what} not finite (a run that diverged); {fix}")
    return state


# --- given: the loop ------------------------------------------------------------------------------


def run_config(cfg: TrainConfig, model_config: dict) -> dict:
    """What a checkpoint must match to be resumed: the training and the model settings."""
    return {
        **{f"train.{k}": v for k, v in asdict(cfg).items()},
        **{f"model.{k}": v for k, v in model_config.items()},
    }


def diverged(step: int, what: str, checkpoint: Path | None, saved_at: int | None) -> str:
    """One line for a run stopped by a number that is not finite: the step, the usual causes."""
    kept = ""
    if checkpoint is not None:
        kept = (
            f"; {checkpoint} keeps step {saved_at}" if saved_at else "; no checkpoint was written"
        )
    return (
        f"training stopped at step {step}: {what}. Usual causes: a learning "
        f"rate too high (lr_at, cfg.lr) or a bug in train_step (no clipping, the loss of the wrong "
        f"tensors){kept}"
    )


def interrupted(step: int, checkpoint: Path | None, saved_at: int | None, every: int) -> str:
    """One line for Ctrl-C: the step reached, and the step the next run starts from."""
    if checkpoint is None:
        return f"stopped at step {step} (Ctrl-C); this run keeps no checkpoint"
    if not saved_at:
        return (
            f"stopped at step {step} (Ctrl-C), before the first checkpoint (every {every} steps): "
            "the next run starts from step 0"
        )
    n = step - saved_at  # steps done since the checkpoint: the next run does them again
    redo = f"the {n} steps since are trained again" if n > 1 else "no step is redone"
    redo = "the 1 step since is trained again" if n == 1 else redo
    return (
        f"stopped at step {step} (Ctrl-C); run the same command again to resume from "
        f"{checkpoint} at step {saved_at}: {redo}"
    )


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
    Ctrl-C stops at once (Interrupted); the last checkpoint stays valid, and the next run resumes
    from it. A loss or weight that is not finite stops the run (FloatingPointError) before any
    checkpoint holds it. `on_step(step)` is called after each step (the tests stop a run with it).
    """
    check_config(cfg)
    train_data, val_data = split(data, cfg.val_fraction)
    check_batch_args(val_data, cfg.B, cfg.T)  # both splits must hold a window
    check_batch_args(train_data, cfg.B, cfg.T)
    config, code = run_config(cfg, model_config), code_identity()
    # lr is set before every step from lr_at
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=cfg.lr, betas=(0.9, 0.99), weight_decay=cfg.weight_decay
    )
    g = torch.Generator().manual_seed(cfg.seed)  # the training batches: its state is checkpointed
    val_batches = fixed_batches(val_data, cfg, seed=cfg.seed + 1)  # drawn from validation data only
    step, losses, saved_at = 0, {"train": [], "val": []}, None  # saved_at: the step on disk
    if checkpoint is not None:
        remove_stale_temporaries(checkpoint)  # a run killed mid-save leaves its temporary file
    if checkpoint is not None and checkpoint.exists():
        state = load_checkpoint(checkpoint, config)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])  # Adam's moments: a fresh one would jolt
        g.set_state(state["generator"])
        torch.set_rng_state(state["rng"])  # the global generator: dropout masks, if any
        step, losses = state["step"], state["losses"]
        saved_at = step

    def snapshot():
        return dict(
            format=CHECKPOINT_FORMAT,
            code=code,
            config=config,
            model=model.state_dict(),
            optimizer=optimizer.state_dict(),
            generator=g.get_state(),
            rng=torch.get_rng_state(),
            step=step,
            losses=losses,
        )

    def measure() -> None:
        loss = estimate_loss(model, val_batches)
        if not math.isfinite(loss):
            what = f"the validation loss is {loss}, not a finite number"
            raise FloatingPointError(diverged(step, what, checkpoint, saved_at))
        losses["val"].append((step, loss))

    def save() -> None:
        nonlocal saved_at
        if not all(torch.isfinite(p).all() for p in model.parameters()):
            what = "the weights hold NaN or inf after it"
            raise FloatingPointError(diverged(step, what, checkpoint, saved_at))
        save_checkpoint(checkpoint, snapshot())
        saved_at = step

    model.train()
    bar = tqdm(total=cfg.steps, initial=step, desc="training", unit="step", disable=not progress)
    start, cpu = time.perf_counter(), time.process_time()
    try:
        while step < cfg.steps:
            if step % cfg.eval_every == 0:
                measure()
            for group in optimizer.param_groups:
                group["lr"] = lr_at(step, cfg)
            x, y = get_batch(train_data, cfg.B, cfg.T, g)
            loss = train_step(model, optimizer, x, y, cfg.grad_clip)
            if not math.isfinite(loss):  # stop at once: every later step would be NaN as well
                raise FloatingPointError(
                    diverged(
                        step,
                        f"its training loss is {loss}, not a finite number",
                        checkpoint,
                        saved_at,
                    )
                )
            losses["train"].append(loss)
            step += 1
            bar.update(1)
            bar.set_postfix(loss=f"{losses['train'][-1]:.3f}", val=f"{losses['val'][-1][1]:.3f}")
            if checkpoint is not None and (step % cfg.checkpoint_every == 0 or step == cfg.steps):
                save()
            if on_step:
                on_step(step)
        if not losses["val"] or losses["val"][-1][0] != step:
            measure()
            if checkpoint is not None:
                save()
    except KeyboardInterrupt:
        raise Interrupted(interrupted(step, checkpoint, saved_at, cfg.checkpoint_every)) from None
    finally:
        bar.close()
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    return dict(losses=losses, seconds=seconds, cpu_seconds=cpu_seconds, step=step)
