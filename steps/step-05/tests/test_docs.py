"""The handout's recorded run (not reproduced by tests: tests/test_docs.py checks the deterministic
blocks, and the run's verdict refused to record a run that missed its claims)."""

import re
from types import SimpleNamespace

import pytest

from common.course import course_step
from common.docs import read_block

pytestmark = pytest.mark.whole_run
README = course_step("step-05").folder / "README.md"


@pytest.mark.course  # reads the README only: the run's verdict held its numbers when recorded
def test_the_recorded_run_says_where_it_ran(experiments):
    block = read_block(README, "training")
    assert re.search(rf"Recorded on .+, 1 torch thread: {experiments.TRAIN['steps']} steps", block)
    samples = read_block(README, "samples")
    texts = re.findall(r"```text\n(.*?)\n```", samples, re.S)
    # trailing spaces of a line are not shown, so a sample may look a few characters short
    assert len(texts) == 2 and all(
        0.9 * experiments.SAMPLE_TOKENS <= len(t) <= experiments.SAMPLE_TOKENS for t in texts
    )
    assert "recorded on" in samples


@pytest.mark.course  # the verdict alone, on made-up curves
def test_the_runs_verdict_refuses_to_record_a_run_that_misses_a_claim(experiments):
    full = SimpleNamespace(quick=False)
    run = lambda first, last: dict(evals=[(0, first), (500, last)], baselines={"bigram": 2.4})  # noqa: E731
    assert experiments.below_threshold(run(4.2, 2.0), full) is None
    for first, last, says in ((4.2, 2.6, "below 2.5"), (4.2, 2.45, "bigram"), (2.9, 2.0, "a nat")):
        assert says in experiments.below_threshold(run(first, last), full), (first, last)
    assert experiments.below_threshold(run(4.2, 3.0), SimpleNamespace(quick=True)) is None
