"""`pixi run lab-02`: the permutation table and the dropout table, on the layers under test."""

import pytest

from common import expect
from common.run.experiment import results

pytestmark = pytest.mark.whole_run


@pytest.mark.todo("task 1.2")
def test_only_rotary_positions_keep_the_scores_relative(run, layers):
    rows = run.experiments.positions(layers)
    noise = run.experiments.NOISE
    expect.at_most("no positions: equivariance gap", rows["none"]["permuted"], noise)
    for scheme in ("learned", "sinusoidal", "rotary"):
        expect.at_least(f"{scheme}: equivariance gap", rows[scheme]["permuted"], 0.1,
                        "positions tell the reordered tokens apart")  # fmt: skip
    for scheme in ("none", "rotary"):
        expect.at_most(f"{scheme}: scores moved on by 5", rows[scheme]["shifted"], noise)
    for scheme in ("learned", "sinusoidal"):
        expect.at_least(f"{scheme}: scores moved on by 5", rows[scheme]["shifted"], 0.1,
                        "absolute positions change the scores")  # fmt: skip


@pytest.mark.todo("task 2")
def test_dropout_table_keeps_the_mean_and_shows_the_unscaled_one(run, layers):
    for p, row in run.experiments.dropout_means(layers).items():
        expect.close(f"share of zeros at p={p}", row["zeros"], p, atol=0.005)
        expect.close(f"training mean at p={p}", row["mean"], 1.0, atol=0.01)
        expect.close(f"unscaled training mean at p={p}", row["unscaled"], 1 - p, atol=0.005)
        expect.equal(f"eval mean at p={p}", row["eval"], 1.0)


@pytest.mark.todo("task 3c")
def test_the_run_answers_every_prediction(run, request):
    done = results(run.RUN, request.config.getoption("--impl"))
    answers = {s.key: s.value(done[e.name]) for e in run.RUN.experiments for s in e.slots}
    expect.equal("equivariant_schemes", answers["equivariant_schemes"], 1, "no positions only")
    expect.equal("relative_schemes", answers["relative_schemes"], 2, "none and rotary")
    expect.close("eval_mean_unscaled", answers["eval_mean_unscaled"], 2.0, atol=0.02)
