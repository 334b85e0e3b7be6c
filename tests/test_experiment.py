"""The one step shape (common/run/experiment.py): every step's run is a declaration the runner executes."""

import argparse

import pytest

from common.course import course, predictions
from common.course.todos import step_regions
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
from common.run.timing import seconds

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
    """One of each: a checked block holding a machine line, a figure drawn again with more, a
    TODO with its prompt, an experiment that uses it, a docs-only one, and two slots."""

    def first(ctx):
        calls.append(ctx.quick)
        return 3

    def waits(ctx):
        raise NotImplementedError("TODO(tiny task 2: b): not written")

    def docs_only(ctx):
        calls.append("docs")
        return 5

    machine = Block(
        "a-block",
        lambda r: f"on machine X\n| a | {r} |\n",
        check=str.__eq__,
        compared=lambda r: f"| a | {r} |\n",
    )
    prompt = "Not shown: c waits for b's TODO, not its own."
    return Run(
        "tiny",
        (
            Experiment(
                "a",
                (),
                first,
                blocks=(machine,),
                figures=(Figure("fig", lambda r, p: f"{p} from a"),),
                slots=(Slot("a_slot", "a", lambda r: r),),
            ),
            Experiment(
                "a2", (), lambda ctx: 4, figures=(Figure("fig", lambda r, p: f"{p} from a2"),)
            ),
            Experiment(
                "b",
                ("tiny task 2: b",),
                waits,
                waiting="Predict b first.",
                slots=(Slot("b_slot", "b", int),),
            ),
            Experiment(
                "c", ("tiny task 3: c",), lambda ctx: ctx.results["b"], uses=("b",), waiting=prompt
            ),
            Experiment("d", (), docs_only, blocks=(Block("d-block", str),), docs=True),
        ),
        threads=None,
    )


def test_a_todo_waits_what_uses_it_waits_and_a_checked_block_is_compared_on_what_it_reproduces():
    calls = []
    outcome = compute(tiny_run(calls), Context("tiny", quick=True), only=lambda e: not e.docs)
    assert outcome.results == {"a": 3, "a2": 4} and calls == [True]
    assert outcome.waiting == {"b": "tiny task 2: b", "c": "tiny task 2: b"}
    fresh = fresh_blocks(tiny_run(calls))  # the full run of what a checked block needs, alone
    assert list(fresh) == ["a-block"] and fresh["a-block"][0] == "| a | 3 |\n"  # no machine line
    with pytest.raises(NotImplementedError, match="tiny task 2: b"):  # what a test's results get
        experiment.results(tiny_run(calls))
    assert calls == [True, False, True], "d runs for the handout alone"


@pytest.mark.parametrize("write_docs", [False, True])
def test_the_runner_prints_blocks_one_figure_answers_and_prompts_and_fails_on_a_required_todo(
    write_docs, tmp_path, capsys, monkeypatch
):
    calls = []
    monkeypatch.setattr(
        predictions, "report", lambda step, ans: [f"{a.key}: {a.measured} {a.waits}" for a in ans]
    )
    monkeypatch.setattr(experiment, "record", lambda readme, outcome, run: None)
    args = argparse.Namespace(impl="solution", quick=False, out=tmp_path, write_docs=write_docs)
    args.readme = tmp_path / "README.md"
    assert execute(tiny_run(calls), args) == 1
    out = capsys.readouterr().out
    assert "(a-block)\non machine X\n| a | 3 |\n" in out
    assert out.count("wrote ") == 1 and f"{tmp_path / 'tiny' / 'fig.png'} from a2" in out, out
    assert "a_slot: 3 " in out and "b_slot: None TODO(tiny task 2: b) not written" in out
    assert "skipped b: TODO(tiny task 2: b) not written yet\n  Predict b first.\n" in out
    assert "skipped c: TODO(tiny task 2: b) not written yet\n" in out and "Not shown" not in out
    assert "2 experiments wait for TODOs" in out
    assert ("docs" in calls) == write_docs and ("(d-block)\n5" in out) == write_docs


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


def test_a_quick_runs_seconds_are_shown_in_tenths_not_as_zero():
    shown = [seconds(s) for s in (0.042, 0.42, 9.44, 9.96, 10.4, 123.4)]
    expected = ["0.042", "0.42", "9.4", "10", "10", "123"]
    assert shown == expected, f"expected two digits under ten, got {shown}"
