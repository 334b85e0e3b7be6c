"""The check's recorded screens (tests/screens/, made by `python -m tools.screens --write`): the
model and the screen, replayed in process on each recording's input, draw it byte for byte."""

import pytest

from common import REPO_ROOT
from tools.screens import BUGS, SCREENS, recording, replayed, screen_path

RECORDED = sorted(p.stem for p in SCREENS.glob("*.txt"))


def test_every_injected_bug_has_a_recording():
    assert {screen_path(b[0]).stem for b in BUGS} | {"lab-01"} <= set(RECORDED)


@pytest.mark.parametrize("name", RECORDED)
def test_the_model_draws_the_recorded_screen(name, monkeypatch):
    monkeypatch.setenv("PIXI_PROJECT_ROOT", str(REPO_ROOT))  # recorded as inside a pixi task
    screen, record = recording(name)
    lines = screen.splitlines()
    assert replayed(record) == "\n".join(lines[:-1]) + "\n", (
        "the screen changed: if on purpose, run python -m tools.screens --write"
    )


def test_a_four_column_symptom_table_names_its_rows_under_their_failure():
    """Step 6's table (bug, symptom, the check that fails, fix) gives its row too, by the case."""
    from common.screen import _symptom_lines

    lines = _symptom_lines(
        "step-06", "steps/step-06/tests/test_train.py::test_check[check_zero_grad]"
    )
    assert lines and lines[0].startswith("  Symptom table: no zero_grad: "), lines
    assert not _symptom_lines("step-06", "steps/step-06/tests/test_train.py::test_check[check_lr]")[
        0
    ].startswith("  Symptom table: no zero_grad"), "a row names its own case, not every case"
