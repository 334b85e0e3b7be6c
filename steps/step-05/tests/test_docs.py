"""The numbers in README.md are those a fresh run prints; the recorded ones say where they came from."""

import re
from decimal import Decimal

import pytest

from common.docs import parse_table, read_block


def _agree(readme: str, fresh: str) -> bool:
    """Equal text, or numbers at most one unit apart in the README's last printed digit."""
    try:
        a, b = Decimal(readme.replace(",", "")), Decimal(fresh.replace(",", ""))
    except ArithmeticError:
        return readme == fresh
    return abs(a - b) <= Decimal(1).scaleb(a.as_tuple().exponent)


def test_deterministic_blocks_match_a_fresh_run(run, gpt):
    ids, V, _ = run.corpus()
    fresh = {
        "params": run.params_block(run.parameter_rows(gpt, V)),
        "init-loss": run.init_block(run.init_loss(gpt, ids, V, run.MODEL, run.TRAIN)),
    }
    assert set(fresh) == {n for n, (_, _, checked) in run.BLOCKS.items() if checked}
    # counts are integers: exact, the lines under the table included
    assert read_block(run.README, "params") == fresh["params"]
    # the loss at init is a sum of float32 logs: another CPU may round the last digit differently
    assert _agree("4.141", "4.142") and not _agree("4.141", "4.143")
    rows, fresh_rows = (
        parse_table(read_block(run.README, "init-loss")),
        parse_table(fresh["init-loss"]),
    )
    assert len(rows) == len(fresh_rows) == 1
    assert all(map(_agree, rows[0], fresh_rows[0])), f"README {rows[0]}, this run {fresh_rows[0]}"


@pytest.mark.given  # reads the README only
def test_the_recorded_run_fell_below_the_threshold_and_says_where(run):
    block = read_block(run.README, "training")
    rows = parse_table(block)
    assert rows[0][0] == "0" and int(rows[-1][0]) == run.TRAIN["steps"]
    held = [float(r[1]) for r in rows]
    assert held[-1] < run.THRESHOLD and held[-1] < held[0] - 1, held
    assert re.search(r"Recorded on .+, 1 torch thread: 500 steps", block)
    samples = read_block(run.README, "samples")
    texts = re.findall(r"```text\n(.*?)\n```", samples, re.S)
    # trailing spaces of a line are not shown, so a sample may look a few characters short
    assert len(texts) == 2 and all(
        0.9 * run.SAMPLE_TOKENS <= len(t) <= run.SAMPLE_TOKENS for t in texts
    )
    assert "recorded on" in samples
