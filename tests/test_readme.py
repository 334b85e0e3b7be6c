"""The top-level README agrees with the pins and the steps."""

import re

import pytest

from common import REPO_ROOT
from common.docs import read_block
from common.envreport import pins_table
from common.loader import step_names
from tests.contracts import pixi_tasks

README = REPO_ROOT / "README.md"


def test_pins_block_is_generated_from_requirements():
    assert read_block(README, "pins") == pins_table()
    assert "| torch | 2.15.0 |" in pins_table()


def test_course_map_lists_every_step_with_its_tasks():
    text = README.read_text(encoding="utf-8")
    for step in step_names():
        row = next(line for line in text.splitlines() if f"| [{step}](" in line)
        for task in (step, f"test-{step}", f"check-{step}"):
            assert f"`pixi run {task}`" in row


def test_readme_gives_the_test_command_ci_runs():
    lines = README.read_text(encoding="utf-8").splitlines()
    # the same command as `pixi run test`
    assert f".venv/bin/{pixi_tasks()['test']['cmd']}" in lines


def test_course_map_gives_the_order_of_the_steps():
    text = README.read_text(encoding="utf-8")
    order = [
        line.split("|")[1].strip() for line in text.splitlines() if "| [" in line and "](" in line
    ]
    assert order[:3] == ["0", "1", "2"]
    assert "lab-01** comes first" in text


# The lecture handouts' word counts (shared/seeds, which students do not have): the main path of
# each handout, from its top to the end of its last task, stays within 1.5 times that. Reference
# material and hidden answers sit in <details> blocks, which a reader opens on purpose: not counted.
LECTURE_WORDS = {"lab-01": 1267, "step-04": 1800}


@pytest.mark.parametrize("step", sorted(LECTURE_WORDS))
def test_each_handouts_main_path_is_short(step):
    text = (REPO_ROOT / "steps" / step / "README.md").read_text(encoding="utf-8")
    main, marker, _ = text.partition("<!-- end of the main path")
    assert marker, "mark where the main path ends: <!-- end of the main path ... -->"
    shown = re.sub(r"(?s)<details>.*?</details>", "", main)
    assert len(shown.split()) <= 1.5 * LECTURE_WORDS[step]
