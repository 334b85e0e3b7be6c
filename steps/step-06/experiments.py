"""Step 6 experiments: train the Step 5 GPT with your loop, time it, and read what its heads learned."""

import math
import os
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch

from common.envreport import machine
from common.loader import load_file, reference
from common.seeding import seed_all
from common.text import encoded, sample
from common.timing import matmul_peak, torch_threads

HERE = Path(__file__).resolve().parent
heads = load_file(HERE / "heads.py")
STEP4_TEXT = 64  # Step 4's 4.3 pictures: the first 64 characters of the corpus


@dataclass(frozen=True)
class ModelConfig:
    """The Step 5 GPT's sizes: GPT(V, T_max, d, h, n_layer)."""

    d: int = 128
    h: int = 4
    n_layer: int = 4
    T_max: int = 64


QUICK_MODEL = ModelConfig(d=32, h=2, n_layer=2, T_max=64)  # --quick: a model trained in seconds


def configs(train, quick: bool):
    """(model config, training config): the default run, or the --quick one for tests and CI."""
    if quick:
        return QUICK_MODEL, train.TrainConfig(
            T=64, B=16, steps=120, warmup=10, eval_every=40, eval_batches=4, checkpoint_every=40
        )
    return ModelConfig(), train.TrainConfig(steps=600, warmup=60, eval_every=50)


def gpt_module():
    """Step 5's reference GPT, through the one route to an earlier step's code."""
    return reference("step-05", "gpt")


def corpus():
    """The Step 3 text as int64 ids (cached: do not modify), its vocabulary size, the data module."""
    data = reference("step-03", "data")
    return *encoded(data), data


def build(mcfg: ModelConfig, V: int, seed: int):
    """A freshly initialised GPT from `seed`."""
    seed_all(seed)
    return gpt_module().GPT(V, mcfg.T_max, mcfg.d, mcfg.h, mcfg.n_layer)


def n_params(model) -> int:
    return sum(p.numel() for p in model.parameters())


def initial_losses(train, quick: bool) -> dict:
    """The untrained model's validation loss against ln V: deterministic, checked by the docs test."""
    mcfg, cfg = configs(train, quick)
    ids, V, _ = corpus()
    model = build(mcfg, V, cfg.seed)
    _, val = train.split(ids, cfg.val_fraction)
    loss = train.estimate_loss(model, train.fixed_batches(val, cfg, seed=cfg.seed + 1))
    return dict(V=V, ln_V=math.log(V), loss=loss, N=n_params(model), model=mcfg, cfg=cfg)


def resume_point(train, checkpoint: Path, config: dict) -> int:
    """The step this run starts from; a checkpoint of other code is kept aside, never resumed.

    Other code is your train.py edited since the checkpoint was saved, or the other
    implementation's file copied here: the file is renamed <name>.old.pt and the run starts from
    step 0 with the code it runs now. Every other refusal stops the run (CheckpointError)."""
    if not checkpoint.exists():
        return 0
    try:
        step = train.load_checkpoint(checkpoint, config)["step"]
    except train.OtherCode as exc:
        kept = checkpoint.with_suffix(".old" + checkpoint.suffix)
        replaced = " (replacing the one kept before)" if kept.exists() else ""
        os.replace(checkpoint, kept)
        why = str(exc).split(";")[0]  # "<file> was trained by ..., not by the code running now"
        print(f"{why}: kept as {kept}{replaced}; training from step 0 with this code")
        return 0
    print(f"resuming {checkpoint} at step {step} (delete it to train from step 0)")
    return step


def shakespeare(
    train, quick: bool, checkpoint: Path, threads: int = 1, progress: bool = True
) -> dict:
    """Train the GPT with your loop (resuming from `checkpoint` if it exists), then sample and time it."""
    mcfg, cfg = configs(train, quick)
    ids, V, data = corpus()
    model = build(mcfg, V, cfg.seed)
    before = sample(model, data)
    resumed_at = resume_point(train, checkpoint, train.run_config(cfg, asdict(mcfg)))
    with torch_threads(threads):  # small matrices: one thread, undisturbed by other programs
        peak = matmul_peak(threads)
        start = time.perf_counter()
        result = train.train(model, asdict(mcfg), cfg, ids, checkpoint, progress=progress)
        wall = time.perf_counter() - start
    tokens = (result["step"] - resumed_at) * cfg.B * cfg.T  # trained by this process
    # None when no step ran (a finished run again): no rate to report, not a NaN to print
    tokens_per_s = tokens / result["seconds"] if tokens else None  # wall clock
    tokens_per_cpu_s = tokens / result["cpu_seconds"] if tokens else None
    N = n_params(model)
    return dict(
        model=model,
        mcfg=mcfg,
        cfg=cfg,
        N=N,
        V=V,
        losses=result["losses"],
        seconds=wall,
        resumed_at=resumed_at,
        steps_run=result["step"] - resumed_at,
        tokens_per_s=tokens_per_s,
        tokens_per_cpu_s=tokens_per_cpu_s,
        cpu_seconds=result["cpu_seconds"],
        peak=peak,
        # both per CPU-second: waiting for a core cancels
        mfu=6 * N * tokens_per_cpu_s / peak if tokens else None,
        threads=threads,
        before=before,
        after=sample(model, data),
        checkpoint=checkpoint,
        machine=machine(threads),
        quick=quick,
    )


def trained_heads(model, mcfg: ModelConfig) -> dict:
    """Every head of the trained model on Step 4's 64 characters: attention, scores and label."""
    _, _, data = corpus()
    text = data.load_text()[:STEP4_TEXT]
    idx = torch.tensor([data.encode(text)])  # (1, 64)
    return dict(text=text, rows=heads.trained_heads(model, idx, mcfg.h))


def untrained_family() -> dict:
    """Step 4's untrained family (its 4.3 table b2), seed 0: Step 4's own code and pattern names."""
    # Step 4's settings, its head on the first 64 characters, and its pattern names
    step4 = reference("step-04", "experiments")
    rows = step4.family(reference("step-04", "head"), seeds=(0,))["rows"]
    return dict(rows=[dict(setting=r["setting"], pattern=r["pattern"], A=r["A"]) for r in rows])


def induction_run(train, seeds=(0,), quick: bool = False) -> list[dict]:
    """The induction experiment for each seed, trained with your train_step (--quick: 200 steps)."""
    induction = load_file(HERE / "induction.py")
    cfg = induction.InductionConfig(steps=200) if quick else induction.InductionConfig()
    runs = [induction.experiment(train.train_step, replace(cfg, seed=s)) for s in seeds]
    return [dict(r, quick=quick) for r in runs]  # a --quick run draws and claims no target
