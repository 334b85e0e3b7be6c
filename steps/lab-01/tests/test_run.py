"""`pixi run lab-01` passes on correct attention, exits non-zero over a threshold, and draws its figures."""

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from common import counted, expect
from common.loader import load_fresh
from common.run import experiment, options
from common.run.experiment import Figure, Run, execute, results

pytestmark = pytest.mark.whole_run

PNG = b"\x89PNG\r\n\x1a\n"


def undrawn(run: Run) -> Run:
    """The run without its figures (matplotlib costs about a second)."""
    return Run(run.step, tuple(replace(e, figures=()) for e in run.experiments))


def run_with(modules: dict, monkeypatch) -> None:
    """Make the run load these modules in place of the code under test (the others as usual)."""
    load = experiment.load
    monkeypatch.setattr(
        experiment, "load", lambda step, name, impl: modules.get(name) or load(step, name, impl)
    )


@pytest.mark.todo("task 7")
def test_run_passes_on_the_attention_under_test(impl, lab, capsys, tmp_path):
    results(lab.RUN, impl)  # every TODO written: else this raises, naming the first one left
    code = execute(undrawn(lab.RUN), options("lab-01", ["--impl", impl, "--out", str(tmp_path)]))
    out = capsys.readouterr().out
    expect.equal(
        "the run's exit code", code, 0, f"every figure within its threshold; it printed\n{out}"
    )
    # five table rows and the repaired mask
    expect.equal("the run's PASS and FAIL counts", (out.count("PASS"), out.count("FAIL")), (6, 0))


@pytest.mark.todo("task 7")
def test_run_fails_when_a_figure_is_over_its_threshold(
    attention, impl, lab, capsys, tmp_path, monkeypatch
):
    """Drop 1/sqrt(d_head) from the attention under test: the table must say FAIL and exit 1."""
    results(lab.RUN, impl)  # every TODO written: else this raises, naming the first one left
    unscaled = load_fresh(Path(attention.__file__).parent, "attention")  # a copy we may break
    sdpa = unscaled.scaled_dot_product_attention
    unscaled.scaled_dot_product_attention = lambda q, k, v, mask=None, scale=None: sdpa(
        q, k, v, mask, scale=1.0
    )
    run_with({"attention": unscaled}, monkeypatch)
    args = options("lab-01", ["--impl", impl, "--out", str(tmp_path)])
    assert execute(undrawn(lab.RUN), args) == 1
    out = capsys.readouterr().out
    assert "FAIL: 4 of the table's figures are above their threshold" in out, out


@pytest.mark.todo("task 7")
@pytest.mark.slow  # about 1 s: matplotlib draws two figures
def test_run_writes_the_mask_and_leak_figures(impl, lab, capsys, tmp_path):
    results(lab.RUN, impl)  # every TODO written: else this raises, naming the first one left
    execute(lab.RUN, options("lab-01", ["--impl", impl, "--out", str(tmp_path)]))
    out = capsys.readouterr().out
    written = sorted((tmp_path / "lab-01").iterdir())
    assert [p.name for p in written] == ["leak.png", "masks.png"]
    for path in written:
        data = path.read_bytes()
        assert data.startswith(PNG) and len(data) > 10_000, path.name
        assert out.count(f"wrote {path}") == 1, out  # leak.png: drawn once, by the diagnosis


@pytest.mark.todo("task 4")
def test_mask_figure_shows_causal_and_padding_combined_with_and(attention, runner):
    masks = runner.mask_pictures(attention)
    B, T = runner.MASK_BATCH
    lower = torch.tril(torch.ones(T, T, dtype=torch.bool))
    expect.equal("the figure's causal mask", masks["causal"], lower)
    real = masks["padding"].sum(dim=-1).tolist()  # 6, 5, 4 real
    expect.equal("the figure's real tokens per sequence", real, [T - b for b in range(B)])
    expected = masks["causal"] & masks["padding"][:, None, :]  # (B, T, T)
    expect.equal("the figure's combined mask", masks["combined"], expected, "causal AND padding")


@pytest.mark.todo("task 7")
def test_leak_figure_data_is_the_exercise_printout(attention, wrong_mask, runner):
    ex = runner.exhibit(wrong_mask) | runner.diagnosis(attention, wrong_mask)
    future = torch.ones(ex["T"], ex["T"], dtype=torch.bool).triu(diagonal=1)  # (T, T) j > i
    leaked = ex["buggy_weights"][future]  # the cells the figure outlines in red
    expect.equal("the exercise's buggy_count", ex["buggy_count"], 6, "T * (T - 1) / 2 at T = 4")
    expect.equal("the figure's leaked cells", (leaked != 0).sum().item(), ex["buggy_count"])
    expect.equal("the figure's largest leak", leaked.max().item(), ex["buggy_largest"])
    expect.equal("the exercise's causal_count", ex["causal_count"], 0)


def todo(todo_id: str):
    """A stand-in for a function whose TODO is not written yet."""

    def unwritten(*args, **kwargs):
        raise NotImplementedError(f"TODO({todo_id}): not written")

    return unwritten


@pytest.mark.course  # runs copies of the reference with TODOs put back: no code of yours
@pytest.mark.parametrize(
    "unwritten, skips, predict",
    [
        ({"attention": ["causal_mask"]}, 4, False),  # the table, masks.png, the exercise's two
        (
            {"exercises.wrong_mask": ["future_leak"]},
            1,
            True,
        ),  # only the diagnostic waits: predict first
    ],
    ids=["task 3 left", "task 7 left"],
)
def test_run_does_what_the_written_todos_allow(
    lab, capsys, tmp_path, monkeypatch, unwritten, skips, predict
):
    """Every part whose TODOs are written runs and draws; each other part is one 'skipped' line."""

    def drawn(result, path: Path) -> Path:
        path.write_bytes(b"")  # which figures a run draws, not their pixels: rendering them
        return path  # (test_run_writes_the_mask_and_leak_figures) outweighed the whole check

    run = replace(  # the run's figures hold plots' functions: swapped where it keeps them
        lab.RUN,
        experiments=tuple(
            replace(e, figures=tuple(Figure(f.name, drawn) for f in e.figures))
            for e in lab.RUN.experiments
        ),
    )
    solution = Path(lab.__file__).parent / "solution"
    modules = {"attention": load_fresh(solution, "attention")}
    modules["exercises.wrong_mask"] = load_fresh(solution, "exercises.wrong_mask")
    for module, names in unwritten.items():
        for name in names:
            todo_id = next(t for t in lab.TODO.values() if t.endswith(f": {name}"))
            setattr(modules[module], name, todo(todo_id))
    modules["exercises.wrong_mask"].causal_mask = modules["attention"].causal_mask  # its import
    run_with(modules, monkeypatch)
    assert execute(run, options("lab-01", ["--out", str(tmp_path)])) == 1
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("skipped ")]
    assert len(lines) == skips and all("not written yet" in line for line in lines), out
    assert f"{counted(skips, 'experiment', 'wait for TODOs')}" in out and "FAIL" not in out
    assert ("Predict: which cells of leak.png" in out) == predict
    assert (tmp_path / "lab-01" / "leak.png").is_file() == predict
