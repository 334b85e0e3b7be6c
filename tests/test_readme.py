"""The top-level README agrees with the pins and the steps."""

import re

import pytest

from common import REPO_ROOT, STEPS_DIR
from common.course import course, course_step, pixi_tasks
from common.docs import read_block
from common.envreport import pins_table
from tools.course_map import WRITTEN, step_tasks

README = REPO_ROOT / "README.md"


def test_pins_block_is_generated_from_requirements():
    assert read_block(README, "pins") == pins_table()
    assert "| torch | 2.15.0 |" in pins_table()


@pytest.mark.parametrize("written", WRITTEN, ids=[f"{p.name}-{name}" for p, name, _ in WRITTEN])
def test_what_the_step_tomls_say_is_written_where_it_is_read(written):
    """The README's course map, CONTRIBUTING's graph and pixi.toml's step tasks, from step.toml."""
    path, name, text = written
    assert read_block(path, name) == text(), (
        f"{path.name}'s {name} block is not what the step.tomls say: "
        "python -m tools.course_map --write-docs"
    )


def test_readme_gives_the_test_command_ci_runs():
    lines = README.read_text(encoding="utf-8").splitlines()
    # the same command as `pixi run test`
    assert f".venv/bin/{pixi_tasks()['test']['cmd']}" in lines


def test_course_map_lists_every_step_in_order_with_its_tasks():
    steps, rows = course(), read_block(README, "course-map").splitlines()[2:]
    orders = [s.order for s in steps]
    assert len(set(orders)) == len(orders), f"two steps share an order in their step.toml: {orders}"
    assert len(rows) == len(steps), "python -m tools.course_map --write-docs"
    for step, row in zip(steps, rows, strict=True):
        assert f"[{step.name}](" in row and all(f"`pixi run {t}`" in row for t in step_tasks(step))


# The lecture handouts' word counts (shared/seeds, which students do not have): the main path of
# each handout, from its top to the end of its last task, stays within 1.5 times that. Reference
# material and hidden answers sit in <details> blocks, which a reader opens on purpose: not counted.
# Each step.toml's lecture_words holds that count (a step without a lecture handout has none).
LECTURE_WORDS = {s.name: s.lecture_words for s in course() if s.lecture_words}


@pytest.mark.parametrize("step", sorted(LECTURE_WORDS))
def test_each_handouts_main_path_is_short(step):
    text = (STEPS_DIR / step / "README.md").read_text(encoding="utf-8")
    main, marker, _ = text.partition("<!-- end of the main path")
    assert marker, "mark where the main path ends: <!-- end of the main path ... -->"
    shown = re.sub(r"(?s)<details>.*?</details>", "", main)
    words, limit = len(shown.split()), 1.5 * LECTURE_WORDS[step]
    assert words <= limit, (
        f"steps/{step}/README.md: {words} words before the marker, over {limit:.0f}"
    )


def test_the_pip_twins_of_the_student_loop_are_pixis_tasks():
    """README's table of commands without pixi: each twin is its pixi task's own command."""
    section = README.read_text(encoding="utf-8").split("## Without pixi", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(
        r"^\| `pixi run ([\w-]+)((?: [\w-]+)*)` \| `(python -m [^`]+)` \|$", section, re.M
    )
    tasks = pixi_tasks(REPO_ROOT / "pixi.toml")
    assert len(rows) >= 7, section
    for task, args, twin in rows:
        assert twin == tasks[task]["cmd"] + args, f"pixi run {task}{args}: {twin}"


def test_step_6_task_2_says_the_mode_comes_back_even_when_a_forward_raises():
    """Issue 54: test_train.py makes a forward raise and holds estimate_loss to a try/finally that
    neither the handout's task 2 nor its CONTRACT asked for."""
    handout = (STEPS_DIR / "step-06" / "README.md").read_text(encoding="utf-8")
    task = handout.partition("2. **`estimate_loss")[2].partition("\n3. ")[0]
    todo = course_step("step-06").regions()["step-06 task 2: estimate_loss"]
    contract = " ".join(region.parts.get("CONTRACT", "") for region in todo.regions)
    for where, text in (("the handout's task 2", task), ("its CONTRACT", contract)):
        assert "forward raises" in text and "finally" in text, (
            f"expected {where} to say the mode comes back even when a forward raises (finally), "
            f"got {text!r}"
        )
