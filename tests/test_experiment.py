"""The one step shape (common/experiment.py): every step's run is a declaration the runner executes."""

import argparse

import pytest

from common import predictions
from common.course import course
from common.experiment import (
    Block,
    Context,
    Experiment,
    Figure,
    Run,
    Slot,
    compute,
    execute,
    fresh_blocks,
)
from common.loader import load_file
from common.run import runnable
from common.todos import step_regions

RUNS = {name: load_file(path) for name, path in runnable().items()}
DECLARED = {name: run.RUN for name, run in RUNS.items() if hasattr(run, "RUN")}


@pytest.mark.parametrize("step", sorted(DECLARED))
def test_every_todo_an_experiment_names_is_one_of_its_steps(step):
    where = next(s for s in course() if s.name == step)
    ids = set(step_regions(where.solution))
    for e in DECLARED[step].experiments:
        unknown = sorted(set(e.todos) - ids)
        assert not unknown, (
            f"{step}'s experiment {e.name} needs {unknown}: expected one of {sorted(ids)}"
        )


def tiny_run(calls: list) -> Run:
    """Three experiments: one that runs, one that waits for a TODO, one that uses the waiting one."""

    def waits(ctx):
        raise NotImplementedError("TODO(tiny task 2: b): not written")

    def first(ctx):
        calls.append(ctx.quick)
        return 3

    return Run(
        "tiny",
        (
            Experiment(
                "a",
                (),
                first,
                blocks=(Block("a-block", lambda r: f"a = {r}\n", check=lambda x, y: x == y),),
                figures=(Figure("a-figure", lambda r, path: path),),
                slots=(Slot("a_slot", "the value of a", lambda r: r),),
            ),
            Experiment("b", ("tiny task 2: b",), waits, slots=(Slot("b_slot", "b", lambda r: r),)),
            Experiment("c", (), lambda ctx: ctx.results["b"] + 1, uses=("b",)),
        ),
        threads=None,
    )


def test_an_experiment_that_reaches_a_todo_waits_and_what_uses_it_waits_too():
    calls = []
    outcome = compute(tiny_run(calls), Context("tiny", quick=True))
    assert outcome.results == {"a": 3} and calls == [True]
    assert outcome.waiting == {"b": "tiny task 2: b", "c": "tiny task 2: b"}


def test_the_runner_prints_blocks_skips_and_answers_and_fails_on_a_required_todo(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr(
        predictions,
        "report",
        lambda step, answers: [f"{a.key}: {a.measured} {a.waits}" for a in answers],
    )
    args = argparse.Namespace(impl="solution", quick=False, out=tmp_path, write_docs=False)
    assert execute(tiny_run([]), args) == 1
    out = capsys.readouterr().out
    assert "(a-block)\na = 3\n" in out
    assert f"wrote {tmp_path / 'tiny' / 'a-figure.png'}" in out
    assert "a_slot: 3 " in out and "b_slot: None TODO(tiny task 2: b) not written" in out
    assert "skipped b: TODO(tiny task 2: b) not written yet" in out
    assert "2 experiments wait for TODOs" in out


def test_fresh_blocks_run_only_what_a_checked_block_needs():
    calls = []
    fresh = fresh_blocks(tiny_run(calls))
    assert list(fresh) == ["a-block"] and fresh["a-block"][0] == "a = 3\n" and calls == [False]


@pytest.mark.parametrize(
    "experiments, said",
    [
        ((Experiment("x", (), print), Experiment("x", (), print)), "names must be unique"),
        ((Experiment("x", (), print, uses=("y",)),), "expected earlier experiments"),
    ],
)
def test_a_declaration_that_cannot_run_is_a_value_error(experiments, said):
    with pytest.raises(ValueError, match=said):
        Run("tiny", experiments)
