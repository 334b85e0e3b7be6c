"""The handout's recorded run (not reproduced by tests: tests/test_docs.py checks the deterministic blocks)."""

import re

import pytest

from common.course import course_step
from common.docs import parse_table, read_block

pytestmark = pytest.mark.whole_run
README = course_step("step-05").folder / "README.md"


@pytest.mark.course  # reads the README only
def test_the_recorded_run_fell_below_the_threshold_and_says_where(experiments):
    block = read_block(README, "training")
    rows = parse_table(block)
    assert rows[0][0] == "0" and int(rows[-1][0]) == experiments.TRAIN["steps"]
    held = [float(r[1]) for r in rows]
    assert held[-1] < experiments.THRESHOLD and held[-1] < held[0] - 1, held
    bigram = float(parse_table(read_block(README, "baselines"))[2][1])
    assert held[-1] < bigram, f"the recorded run should beat the bigram counts' {bigram}"
    assert re.search(r"Recorded on .+, 1 torch thread: 500 steps", block)
    samples = read_block(README, "samples")
    texts = re.findall(r"```text\n(.*?)\n```", samples, re.S)
    # trailing spaces of a line are not shown, so a sample may look a few characters short
    assert len(texts) == 2 and all(
        0.9 * experiments.SAMPLE_TOKENS <= len(t) <= experiments.SAMPLE_TOKENS for t in texts
    )
    assert "recorded on" in samples
