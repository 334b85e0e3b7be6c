"""The run's tables, verdicts and figures, on small made-up results (the real runs take minutes)."""

import re
import time
from types import SimpleNamespace

import pytest
import torch

from common.course import course_step
from common.docs import read_block
from common.loader import reference
from common.run import options
from common.run.experiment import execute

# the run is course code: these tests pass on the untouched starter
pytestmark = [pytest.mark.course, pytest.mark.whole_run]


def induction_result(repeat=0.3, one=2.8, prefix=0.9, ablated=3.0):
    A = torch.tril(torch.ones(2, 2, 4, 12, 12))  # (n_layer, B, h, T, T)
    A = A / A.sum(-1, keepdim=True)
    curve = [dict(step=s, first=4.2, repeat=4.2 - s / 100) for s in (0, 100, 200)]
    return dict(
        cfg=SimpleNamespace(seed=0, L_min=2, L_max=4, V=64, steps=200),
        curve=curve,
        curve_one=curve,
        seconds=1.0,
        first=4.2,
        repeat=repeat,
        one_layer_repeat=one,
        prefix=torch.tensor([[0.1, 0.2, 0.1, 0.1], [prefix, 0.1, 0.1, 0.1]]),
        prev=torch.tensor([[0.7, 0.1, 0.1, 0.1], [0.0, 0.0, 0.0, 0.0]]),
        prefix_one=torch.tensor([[0.1, 0.1, 0.1, 0.1]]),
        prev_heads=(0,),
        ablate_each=[ablated, 0.4, 0.3, 0.3],
        induction=(1, 0),
        ablated_repeat=ablated,
        A=A,
        s=torch.tensor([1, 2]),
        L=torch.tensor([4, 3]),
        ln_V=4.16,
    )


def test_the_verdicts_fail_each_target_on_its_own(run):
    assert all(ok for _, ok in run.experiments.induction_verdicts(induction_result()))
    for bad in (dict(repeat=0.6), dict(one=1.5), dict(prefix=0.4), dict(ablated=1.0)):
        verdicts = run.experiments.induction_verdicts(induction_result(**bad))
        assert sum(not ok for _, ok in verdicts) == 1, bad


def test_the_induction_table_has_a_row_per_seed(run):
    block = run.experiments.induction_block([induction_result(), induction_result(repeat=0.25)])
    assert block.count("\n| 0 | 4.20 |") == 2 and "0.90 (L1 H0)" in block and "3.00 / 0.40" in block


def test_the_symptom_table_names_a_check_for_every_bug(run):
    block = read_block(
        course_step("step-06").folder / "README.md", "symptoms"
    )  # python -m tools.symptoms --write-docs writes it
    assert block.count("::test_check[check_") == len(course_step("step-06").bugs()) == 8, block


def test_figures_are_written(run, tmp_path):
    r = induction_result()
    for draw in (run.plots.induction_phase, run.plots.induction_heads):
        path = draw(r, tmp_path / f"{draw.__name__}.png")
        assert path.stat().st_size > 10_000


def test_bad_run_options_are_refused(run, capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(run.experiments, "initial_losses", lambda train, quick: None)  # seconds
    trained = []
    monkeypatch.setattr(run.experiments, "shakespeare", lambda *a, **kw: trained.append(a))
    args = options("step-06", ["--seeds", "0,x", "--out", str(tmp_path)])
    assert execute(run.RUN, args) == 2
    assert capsys.readouterr().out.splitlines()[-1] == (
        "--seeds takes integers separated by commas, got '0,x'"
    )
    args = options("step-06", ["--skip", "mlp", "--out", str(tmp_path)])
    assert execute(run.RUN, args) == 2
    assert capsys.readouterr().out.splitlines()[-1] == "--skip takes gpt and induction, got mlp"
    assert trained == [], "a bad option stops the run before it trains"


def test_the_rebuilt_untrained_family_is_step_4s(run, heads):
    """Step 4's family (its 4.3 table b2, seed 0), measured by Step 4's own code: the heads Step 6
    shows are its matrices, and Step 6's evenness score is Step 4's."""
    family = run.experiments.untrained_family()["rows"]
    step4 = reference("step-04", "experiments").family(reference("step-04", "head"), seeds=(0,))
    assert [r["setting"] for r in family] == [r["setting"] for r in step4["rows"]]
    for mine, theirs in zip(family, step4["rows"], strict=True):
        assert torch.equal(mine["A"], theirs["A"]) and mine["pattern"] == theirs["pattern"]
        evenness = heads.head_scores(mine["A"])["evenness"]
        assert f"{evenness:.2f}" == f"{theirs['evenness']:.2f}", mine["setting"]


def gpt_result(quick=True, val=(4.1, 2.6), steps_run=120):
    """A made-up shakespeare() result: the fields training_block and loss_curve read."""
    cfg = SimpleNamespace(steps=120, eval_batches=4, T=64, B=16)
    return dict(
        losses={
            "train": [4.0 - i / 100 for i in range(120)],
            "val": list(zip((0, 120), val, strict=True)),
        },
        cfg=cfg,
        mcfg=SimpleNamespace(d=32, h=2, n_layer=2),
        N=31232,
        V=62,
        quick=quick,
        machine="a test",
        threads=1,
        steps_run=steps_run,
        resumed_at=120 - steps_run,
        seconds=2.0,
        set_up_seconds=0.5,
        cpu_seconds=1.0,
        tokens_per_s=9e4 if steps_run else None,
        tokens_per_cpu_s=1e5 if steps_run else None,
        peak=1e11,
        mfu=0.2 if steps_run else None,
        checkpoint="out/step-06/gpt-quick.pt",
    )


def test_a_quick_run_claims_no_target_and_a_rerun_no_nan(run):
    quick = run.experiments.training_block(gpt_result())
    assert "--quick: 120 steps of a small model, no target to meet" in quick
    assert not any(word in quick for word in ("PASS", "FAIL", "None", "target <=", "first <="))
    full = run.experiments.training_block(gpt_result(quick=False))
    assert "(target <= 2.0: FAIL), never <= 2.0" in full and "None" not in full
    assert "(target <= 2.0: PASS), first <= 2.0 at step 120" in run.experiments.training_block(
        gpt_result(quick=False, val=(4.1, 1.9))
    )
    again = run.experiments.training_block(gpt_result(steps_run=0))
    assert "nan" not in again.lower() and "no steps ran this time" in again


def test_the_speed_line_gives_its_rate_over_the_wall_time_it_prints(run, monkeypatch, tmp_path):
    """Issue 54: --quick printed "wall time 7.2 s" (train() with its set-up) beside tokens per
    second over its loop alone (3.3 s): the time printed and the rate's time are one."""

    def train_loop(model, model_config, cfg, data, checkpoint, progress):
        time.sleep(0.3)  # the set-up before the loop: the optimiser, the validation batches
        losses = {"train": [4.0] * cfg.steps, "val": [(0, 4.1), (cfg.steps, 2.6)]}
        return dict(losses=losses, seconds=0.1, cpu_seconds=0.1, step=cfg.steps)

    config = lambda **sizes: SimpleNamespace(seed=0, **sizes)  # noqa: E731 (TrainConfig's fields)
    given = SimpleNamespace(TrainConfig=config, run_config=lambda *a: {}, train=train_loop)
    monkeypatch.setattr(run.experiments, "matmul_peak", lambda threads: 1e11)  # half a second
    monkeypatch.setattr(run.experiments, "sample", lambda model, data: "")
    r = run.experiments.shakespeare(given, True, tmp_path / "gpt.pt", progress=False)
    line = run.experiments.speed_line(r)
    printed = float(re.search(r"wall time ([\d.]+) s", line)[1])
    rate = float(re.search(r"([\d,]+) tokens per wall second", line)[1].replace(",", ""))
    tokens = r["cfg"].steps * r["cfg"].B * r["cfg"].T
    assert abs(printed * rate / tokens - 1) < 0.05, (
        f"expected the rate over the wall time printed ({tokens} tokens), got: {line}"
    )


def test_a_quick_induction_run_prints_its_numbers_without_a_verdict(run):
    quick = [dict(induction_result(repeat=4.14), quick=True)]
    (line,) = run.experiments.targets_block(quick).splitlines()
    assert line.startswith("seed 0 (--quick, 200 steps, too few for the circuit: no targets")
    assert "repeat loss 4.14" in line and not any(c in line for c in "<>") and "PASS" not in line
    assert run.experiments.induction_failures(quick, None) is None, "--quick fails no target"
    full = [dict(induction_result(repeat=0.6), quick=False)]
    assert (
        run.experiments.targets_block(full).splitlines()[0] == "seed 0: FAIL repeat loss 0.60 < 0.5"
    )
    assert run.experiments.induction_failures(full, None) == "seed 0: repeat loss 0.60 < 0.5"


def drawn(run, monkeypatch, draw, result, tmp_path):
    """The figure `draw` makes of `result`, kept open: its titles and legend texts."""
    figures = []
    monkeypatch.setattr(run.plots, "save", lambda fig, path: figures.append(fig) or path)
    draw(result, tmp_path / "figure.png")
    (fig,) = figures
    titles = [ax.get_title() for ax in fig.axes]
    legends = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().texts]
    run.plots.plt.close(fig)
    return titles, legends


def test_heads_are_named_for_a_pattern_only_when_their_scores_show_it(run, monkeypatch, tmp_path):
    learned = induction_result()  # prefix 0.9, a layer-0 previous-token head
    titles, _ = drawn(run, monkeypatch, run.plots.induction_heads, learned, tmp_path)
    assert any(
        t.startswith("layer 1 head 0: induction head\nprefix-matching score 0.90") for t in titles
    )
    assert any(t.startswith("layer 0 head 0: previous-token head") for t in titles)
    nothing = dict(induction_result(prefix=0.06), prev_heads=())  # what --quick ends with
    nothing["prefix"][0, 0] = 0.05
    titles, _ = drawn(run, monkeypatch, run.plots.induction_heads, nothing, tmp_path)
    assert not any("induction head\n" in t or "previous-token head\n" in t for t in titles)
    assert sum("learned yet" in t for t in titles) == 2, titles


def test_quick_figures_draw_no_target_line(run, monkeypatch, tmp_path):
    for quick in (False, True):
        _, legends = drawn(run, monkeypatch, run.plots.loss_curve, gpt_result(quick), tmp_path)
        assert ("2.0: the target" in legends) is not quick
        phase = dict(induction_result(), quick=quick)
        _, legends = drawn(run, monkeypatch, run.plots.induction_phase, phase, tmp_path)
        assert ("0.5 (target, repeat)" in legends) is not quick
