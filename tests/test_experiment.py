"""The one step shape (common/run/experiment.py): every step's run is a declaration the runner executes."""

import argparse

import pytest

from common import predictions
from common.course import course
from common.loader import load_file
from common.run import experiment, runnable
from common.run.experiment import (
    Block,
    Context,
    Experiment,
    Figure,
    Run,
    Slot,
    Stop,
    answers,
    compute,
    execute,
    fresh_blocks,
)
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
    fresh = fresh_blocks(tiny_run(calls))  # the full run of what a checked block needs, alone
    assert (
        list(fresh) == ["a-block"] and fresh["a-block"][0] == "a = 3\n" and calls == [True, False]
    )


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


def handout_run(calls: list) -> Run:
    """A run whose checked block holds a machine line, a figure drawn again with more, a docs-only
    experiment and a prompt for a TODO (lab-01's shape)."""

    def predict_first(ctx):
        raise NotImplementedError("TODO(tiny task 2: b): not written")

    def docs_only(ctx):
        calls.append("docs")
        return 5

    return Run(
        "tiny",
        (
            Experiment(
                "a",
                (),
                lambda ctx: 3,
                blocks=(
                    Block(
                        "a-block",
                        lambda r: f"on machine X\n| a | {r} |\n",
                        check=lambda x, y: x == y,
                        compared=lambda r: f"| a | {r} |\n",
                    ),
                ),
                figures=(Figure("fig", lambda r, path: f"{path} from a"),),
            ),
            Experiment(
                "a2", (), lambda ctx: 4, figures=(Figure("fig", lambda r, p: f"{p} from a2"),)
            ),
            Experiment("b", ("tiny task 2: b",), predict_first, waiting="Predict b first."),
            Experiment(
                "c",
                ("tiny task 3: c",),
                lambda ctx: 1 / 0 + ctx.results["b"],
                uses=("b",),
                waiting="Not shown: c waits for b's TODO, not its own.",
            ),
            Experiment("d", (), docs_only, blocks=(Block("d-block", str),), docs=True),
        ),
        threads=None,
    )


def test_a_checked_block_is_compared_on_what_it_reproduces_and_docs_experiments_wait_for_docs():
    calls = []
    fresh = fresh_blocks(handout_run(calls))
    assert fresh["a-block"][0] == "| a | 3 |\n" and calls == [], "no machine line; d not checked"
    with pytest.raises(NotImplementedError, match="tiny task 2: b"):  # what a test's results get
        experiment.results(handout_run(calls))
    assert calls == [], "a test's results skip d"


@pytest.mark.parametrize("write_docs", [False, True])
def test_a_figure_drawn_again_is_drawn_once_and_a_prompt_shows_under_its_own_todo(
    write_docs, tmp_path, capsys, monkeypatch
):
    calls = []
    monkeypatch.setattr(predictions, "report", lambda step, answers: [])
    monkeypatch.setattr(experiment, "record", lambda readme, outcome, run: None)
    args = argparse.Namespace(impl="solution", quick=False, out=tmp_path, write_docs=write_docs)
    args.readme = tmp_path / "README.md"
    assert execute(handout_run(calls), args) == 1
    out = capsys.readouterr().out
    assert out.count("wrote ") == 1 and f"{tmp_path / 'tiny' / 'fig.png'} from a2" in out, out
    assert "skipped b: TODO(tiny task 2: b) not written yet\n  Predict b first.\n" in out
    assert "skipped c: TODO(tiny task 2: b) not written yet\n" in out and "Not shown" not in out
    assert (calls == ["docs"]) == write_docs and ("(d-block)\n5" in out) == write_docs


def test_an_option_leaves_an_experiment_out_and_a_stop_is_one_line(tmp_path, capsys):
    """skip: what uses a left-out experiment is left out too, and its slots say why; Stop: the
    run ends with its line and its code, nothing else computed."""
    args = argparse.Namespace(impl="solution", quick=False, out=tmp_path, write_docs=False)
    run = Run(
        "tiny",
        (
            Experiment("a", (), lambda ctx: 1, skip=lambda ctx: "--skip a"),
            Experiment("b", (), lambda ctx: 2, uses=("a",), slots=(Slot("b", "b", int),)),
            Experiment("c", (), lambda ctx: 3),
        ),
        threads=None,
    )
    outcome = compute(run, Context("tiny"))
    assert outcome.results == {"c": 3} and outcome.skipped == {"a": "--skip a", "b": "--skip a"}
    assert [a.waits for a in answers(run, outcome)] == ["--skip a"]

    def stops(ctx):
        raise Stop("the file is damaged: delete it", 7)

    assert execute(Run("tiny", (Experiment("s", (), stops),), threads=None), args) == 7
    assert capsys.readouterr().out == "the file is damaged: delete it\n"
