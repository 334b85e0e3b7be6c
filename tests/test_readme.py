"""The top-level README agrees with the pins and the steps."""

from common import REPO_ROOT
from common.docs import read_block
from common.envreport import pins_table
from common.loader import step_names

README = REPO_ROOT / "README.md"


def test_pins_block_is_generated_from_requirements():
    assert read_block(README, "pins") == pins_table()
    assert "| torch | 2.15.0 |" in pins_table()


def test_course_map_lists_every_step_with_its_tasks():
    text = README.read_text(encoding="utf-8")
    for step in step_names():
        row = next(line for line in text.splitlines() if line.startswith(f"| [{step}]"))
        for task in (step, f"test-{step}", f"check-{step}"):
            assert f"`pixi run {task}`" in row


def test_readme_gives_the_test_command_ci_runs():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert ".venv/bin/python -m pytest" in lines
