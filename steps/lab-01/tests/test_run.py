"""`pixi run lab-01` passes on correct attention and exits non-zero when a figure is over its threshold."""

from pathlib import Path

from common.broken import BY_NAME, broken_module
from common.loader import load_fresh


def test_run_passes_on_the_attention_under_test(attention, wrong_mask, runner, capsys):
    assert runner.run(attention, wrong_mask, False) == 0
    out = capsys.readouterr().out
    assert "FAIL" not in out and out.count("PASS") == 6  # five table rows and the repaired mask


def test_run_fails_when_a_figure_is_over_its_threshold(attention, wrong_mask, runner, capsys):
    """Drop 1/sqrt(d_head) from the attention under test: the table must say FAIL and exit 1."""
    fresh = load_fresh(Path(attention.__file__).parent, "attention")  # a copy we may break
    unscaled = broken_module(fresh, BY_NAME["missing 1/sqrt(d_k)"])
    assert runner.run(unscaled, wrong_mask, False) == 1
    assert "FAIL: a figure is above its threshold" in capsys.readouterr().out
