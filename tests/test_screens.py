"""The check's recorded screens (tests/screens/, made by `python -m tools.screens --write`): the
model and the screen, replayed in process on each recording's input, draw it byte for byte."""

import pytest

from common import REPO_ROOT
from tools.screens import SCREENS, bugs, recording, replayed, screen_path

RECORDED = sorted(p.stem for p in SCREENS.glob("*.txt"))


def test_every_injected_bug_has_a_recording():
    """Each bug of lab-01's catalogue has its screen: the catalogue is the one list of them."""
    assert {screen_path(name).stem for name in bugs()} | {"lab-01"} <= set(RECORDED)


@pytest.mark.parametrize("name", RECORDED)
def test_the_model_draws_the_recorded_screen(name, monkeypatch):
    monkeypatch.setenv("PIXI_PROJECT_ROOT", str(REPO_ROOT))  # recorded as inside a pixi task
    screen, record = recording(name)
    lines = screen.splitlines()
    assert replayed(record) == "\n".join(lines[:-1]) + "\n", (
        "the screen changed: if on purpose, run python -m tools.screens --write"
    )


def test_a_row_of_a_case_is_named_under_its_failure():
    """Step 6's rows name a case of one test (test_check[check_...]): a row is given by the case and
    the words of its failure."""
    from common.check.screen import symptom_lines

    case = "steps/step-06/tests/test_train.py::test_check[{}]"
    said = "  AssertionError: weight.grad is not this batch's gradient: old gradients accumulated"
    lines = symptom_lines("step-06", {case.format("check_zero_grad"): said})
    assert lines and lines[0].startswith("  Symptom table: the loss falls, then wobbles"), lines
    assert symptom_lines("step-06", {case.format("check_lr"): said}) == [], (
        "a row names its own case, not every case"
    )


def test_softmax_over_the_wrong_axis_shows_no_foreign_row():
    """Issue 33: lab-01 with the softmax over dim=-2 (the scale right) showed the missing scale's
    row, in Step 4's words."""
    screen, _ = recording("softmax over the wrong axis")
    rows = [
        line for line in screen.splitlines() if "Symptom table" in line or line.startswith("  - ")
    ]
    assert not any("scaled" in line or "d_k" in line for line in rows), (
        f"expected no row of the missing scale, got:\n{screen}"
    )
