"""The handout's recorded run (not reproduced by tests: tests/test_docs.py checks the deterministic blocks)."""

import re

import pytest

from common.docs import parse_table, read_block

pytestmark = pytest.mark.whole_run


@pytest.mark.course  # reads the README only
def test_the_recorded_run_fell_below_the_threshold_and_says_where(run):
    block = read_block(run.README, "training")
    rows = parse_table(block)
    assert rows[0][0] == "0" and int(rows[-1][0]) == run.TRAIN["steps"]
    held = [float(r[1]) for r in rows]
    assert held[-1] < run.THRESHOLD and held[-1] < held[0] - 1, held
    bigram = float(parse_table(read_block(run.README, "baselines"))[2][1])
    assert held[-1] < bigram, f"the recorded run should beat the bigram counts' {bigram}"
    assert re.search(r"Recorded on .+, 1 torch thread: 500 steps", block)
    samples = read_block(run.README, "samples")
    texts = re.findall(r"```text\n(.*?)\n```", samples, re.S)
    # trailing spaces of a line are not shown, so a sample may look a few characters short
    assert len(texts) == 2 and all(
        0.9 * run.SAMPLE_TOKENS <= len(t) <= run.SAMPLE_TOKENS for t in texts
    )
    assert "recorded on" in samples
