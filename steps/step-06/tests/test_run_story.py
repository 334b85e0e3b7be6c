"""Step 6's run as a student meets it: whose code it ran, a NaN, a bad checkpoint, Ctrl-C, a rerun.

Each test executes run.py's RUN in process on a tiny GPT and a few steps (the real sizes take
minutes), with the figures and Step 4's family left out: what is tested is what the run prints.
"""

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from common.course import course_step
from common.loader import load, load_fresh
from common.run import experiment, options

SOLUTION = course_step("step-06").solution / "train.py"

# copies of the reference's train.py stand in for the code: these pass on the untouched starter
pytestmark = [pytest.mark.course, pytest.mark.whole_run]  # it runs run.py: a whole run


@pytest.fixture
def tiny_run(run, monkeypatch, tmp_path):
    """main(*argv) -> exit code of `--quick --skip induction *argv` on a tiny GPT, out in tmp_path."""
    ex = run.experiments

    def configs(train, quick):
        model = ex.ModelConfig(d=16, h=2, n_layer=1, T_max=64)  # 64: the heads' text
        return model, train.TrainConfig(
            T=16, B=4, steps=6, warmup=1, eval_every=3, eval_batches=1, checkpoint_every=2
        )

    monkeypatch.setattr(ex, "configs", configs)
    monkeypatch.setattr(ex, "matmul_peak", lambda threads: 1e9)
    monkeypatch.setattr(ex, "untrained_family", lambda: {"rows": []})
    monkeypatch.setattr(ex, "sample", lambda model, data, **kw: "(a sample)")
    undrawn = replace(
        run.RUN, experiments=tuple(replace(e, figures=()) for e in run.RUN.experiments)
    )

    def main(*argv):
        argv = ["--quick", "--skip", "induction", "--out", str(tmp_path), *argv]
        return experiment.execute(undrawn, options("step-06", argv))

    main.out = tmp_path / "step-06"
    return main


def impl_copy(tmp_path: Path, folder: str, old: str = "", new: str = ""):
    """A fresh training module from a copy of the reference in tmp_path/<folder>/, one line changed."""
    (tmp_path / folder).mkdir()
    text = SOLUTION.read_text(encoding="utf-8")
    assert old in text
    (tmp_path / folder / "train.py").write_text(text.replace(old, new), encoding="utf-8")
    return load_fresh(tmp_path / folder, "train")


def as_starter(run, monkeypatch, module):
    """Make --impl starter load `module` (the reference still loads for --impl solution)."""
    monkeypatch.setattr(
        experiment,
        "load",
        lambda step, name, impl: module if impl == "starter" else load(step, name, impl),
    )


def lines(capsys) -> list[str]:
    return [line for line in capsys.readouterr().out.splitlines() if line.strip()]


def test_the_starter_never_resumes_the_reference_checkpoint(
    tiny_run, run, monkeypatch, tmp_path, capsys
):
    assert tiny_run() == 0
    reference = lines(capsys)
    assert (tiny_run.out / "gpt-quick.pt").is_file()
    bug = "y = torch.stack([data[i + 1 : i + 1 + T] for i in ix])"  # targets not shifted
    starter = impl_copy(tmp_path, "starter", bug, "y = torch.stack([data[i : i + T] for i in ix])")
    as_starter(run, monkeypatch, starter)
    assert tiny_run("--impl", "starter") == 0
    mine = lines(capsys)
    resumed = [line for line in mine if line.startswith("resuming")]  # the bug table says "resume"
    assert not resumed, "a file of its own, trained from step 0"
    assert (tiny_run.out / "gpt-quick-starter.pt").is_file()
    assert mine != reference, "the broken starter's tables are its own, not the reference's"
    # the reference's checkpoint copied under the starter's name: still not resumed, still kept
    shutil.copy(tiny_run.out / "gpt-quick.pt", tiny_run.out / "gpt-quick-starter.pt")
    assert tiny_run("--impl", "starter") == 0
    said = [line for line in lines(capsys) if "trained by" in line]
    kept = tiny_run.out / "gpt-quick-starter.old.pt"
    assert said == [
        f"{tiny_run.out / 'gpt-quick-starter.pt'} was trained by the reference solution "
        f"(solution/train.py), not by the code running now: kept as {kept}; training from step "
        "0 with this code"
    ]
    assert torch.load(kept, weights_only=True)["code"]["impl"] == "solution", "nothing lost"


def test_a_rerun_of_a_finished_run_prints_no_nan(tiny_run, capsys):
    assert tiny_run() == 0
    capsys.readouterr()
    assert tiny_run() == 0
    out = lines(capsys)
    assert not any("nan" in line.lower() for line in out), out
    assert any(line.startswith("no steps ran this time:") for line in out)


def test_a_nan_loss_stops_the_run_in_one_line(tiny_run, run, monkeypatch, tmp_path, capsys):
    nan = impl_copy(tmp_path, "starter", "    return loss.item()\n", "    return float('nan')\n")
    as_starter(run, monkeypatch, nan)
    assert tiny_run("--impl", "starter") == 1
    out = lines(capsys)
    assert out[-1] == (
        "step-06: training stopped at step 0: its training loss is nan, not a finite "
        "number. Usual causes: a learning rate too high (lr_at, cfg.lr) or a bug in train_step "
        "(no clipping, the loss of the wrong tensors); no checkpoint was written"
    )
    assert not (tiny_run.out / "gpt-quick-starter.pt").exists(), "no NaN checkpoint"


@pytest.mark.parametrize("damage", [b"", b"\x00 not torch" * 9, "foreign", "old format"])
def test_a_corrupt_or_foreign_checkpoint_is_one_line_with_the_fix(tiny_run, capsys, damage):
    path = tiny_run.out / "gpt-quick.pt"
    path.parent.mkdir(parents=True)
    if damage == "foreign":
        torch.save({"weights": torch.zeros(3)}, path)
    elif damage == "old format":
        torch.save({"format": 1, "model": {}, "step": 3}, path)
    else:
        path.write_bytes(damage)
    assert tiny_run() == 1
    out = lines(capsys)
    assert out[-1].startswith(f"step-06: {path} ") and f"delete {path}" in out[-1], out[-1]
    assert not any("Traceback" in line for line in out)


def test_ctrl_c_ends_in_one_line_naming_the_step_the_next_run_resumes_from(
    tiny_run, run, monkeypatch, tmp_path, capsys
):
    module = impl_copy(tmp_path, "starter")
    calls, real = [], module.train_step

    def step(*args):
        calls.append(1)
        if len(calls) == 4:  # during step 3: the checkpoint holds step 2
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(module, "train_step", step)
    as_starter(run, monkeypatch, module)
    assert tiny_run("--impl", "starter") == 130
    out = lines(capsys)
    path = tiny_run.out / "gpt-quick-starter.pt"
    assert out[-1] == (
        f"stopped at step 3 (Ctrl-C); run the same command again to resume from {path} at step 2: "
        "the 1 step since is trained again"
    )
    monkeypatch.setattr(module, "train_step", real)
    assert tiny_run("--impl", "starter") == 0
    assert f"resuming {path} at step 2 (delete it to train from step 0)" in lines(capsys)
