"""Issue 54, point 7: every line the check prints fits 100 columns, wrapped by the course at its
words (continuations indented), and a failure's message comes before any test source. The check
runs in a child on a pristine copy: each step untouched, and a few curated bugs whose screens had
lines of 150 to 311 characters or the test's source above the error."""

import re
import shutil
from pathlib import Path

import pytest

from common import REPO_ROOT
from common.check.screen import WIDTH, fit, typed_lines
from common.course import course_step, step_names
from common.course.bugs import committed
from tools import check_in_a_child, pristine

# (step, curated bug): a torch error under a long test id, long rows and long messages
BUGS = [
    ("lab-01", "view after a transpose"),
    ("lab-01", "inverted polarity"),
    ("lab-02", "RoPE turned the wrong way"),
    ("step-05", "attention sees the future"),
    ("step-06", "no zero_grad"),
]

FRAME = re.compile(r"^  \S+:\d+ in \S+$")  # a frame's place: "  steps/.../x.py:12 in f"
ERROR = re.compile(r"^  [A-Za-z_][\w.]*(Error|Exception|Warning|Interrupt|Exit|TooLong)\b")


@pytest.fixture(scope="module")
def steps(tmp_path_factory) -> Path:
    """One pristine copy of every step (lab-02 and the GPT steps read earlier references)."""
    return pristine(step_names(), tmp_path_factory.mktemp("width"))


def screen_of(steps: Path, step: str, bug: str | None, tmp: Path) -> str:
    """What the check prints on `step` untouched, or caught up with one curated bug in it."""
    if bug:
        steps = Path(shutil.copytree(steps, tmp / "steps"))
        layout = course_step(step)
        chosen = next(b for b in layout.bugs() if b.name == bug)
        starter = steps / step / "starter"
        shutil.rmtree(starter)
        shutil.copytree(steps / step / "solution", starter)
        path = starter / f"{chosen.module or layout.mutation['target']}.py"
        text = committed(path.read_text(encoding="utf-8"), chosen, path.name)
        path.write_text(text, encoding="utf-8")
    pixi = {"PIXI_PROJECT_ROOT": str(REPO_ROOT)}
    done = check_in_a_child(steps, [str(steps / step), "--impl", "starter", "-m", "not slow"], pixi)
    return done.stdout + done.stderr


def failure_blocks(screen: str) -> list[list[str]]:
    """The first failure shown: its test's line, then its indented lines up to its symptom row."""
    if "(shortened; -v shows all):" not in screen:
        return []
    lines = screen.split("(shortened; -v shows all):\n", 1)[1].splitlines()
    lines = lines[1:] if lines and lines[0].startswith("(a warning") else lines
    end = next((i for i, line in enumerate(lines[1:], 1) if not line.startswith(" ")), len(lines))
    block = [line for line in lines[:end] if not line.lstrip().startswith("(TODO(")]
    return [block[: next((i for i, x in enumerate(block) if "Symptom table" in x), len(block))]]


CASES = [(s, None) for s in step_names()] + BUGS


@pytest.mark.process
@pytest.mark.slow  # the check of a step in a child: 3 to 10 s each
@pytest.mark.parametrize(("step", "bug"), CASES, ids=[f"{s}-{b or 'untouched'}" for s, b in CASES])
def test_every_line_fits_and_the_error_comes_before_the_source(steps, step, bug, tmp_path):
    screen = screen_of(steps, step, bug, tmp_path)
    assert f"{step} with your starter" in screen, screen
    wide = [line for line in screen.splitlines() if len(line) > WIDTH]
    assert not wide, f"expected no line over {WIDTH} columns, got {wide}:\n{screen}"
    blocks = failure_blocks(screen)
    assert bool(blocks) == bool(bug), f"expected a failure block only with a bug:\n{screen}"
    for block in blocks:
        error = next((i for i, line in enumerate(block) if ERROR.match(line)), None)
        frame = next((i for i, line in enumerate(block) if FRAME.match(line)), len(block))
        assert error is not None and error < frame, (
            "expected the error line before any source line:\n" + "\n".join(block)
        )


def test_fit_wraps_at_words_and_keeps_a_names_value_whole():
    line = "  Your line x.py:3 ran with " + ", ".join(f"n{i} = {i}" for i in range(40))
    lines = fit([line])
    assert all(len(x) <= WIDTH for x in lines) and len(lines) > 1, lines
    assert all(x.startswith("    ") for x in lines[1:]), "continuations go 2 deeper"
    assert " ".join(x.strip() for x in lines) == line.strip(), "no word lost or cut"
    assert not any(x.rstrip().endswith(" =") for x in lines), "never 'T' and '= 10' apart"
    for n in range(70, 90):  # wherever the wrap falls, an expression's name and value stay one
        lines = fit([f"  ran with {'a' * n} len(data) - T = 44: more words"])
        assert any("len(data) - T = 44" in x for x in lines), lines


def test_fit_breaks_a_test_id_wider_than_the_screen_at_its_parts_not_inside_a_name():
    """Walk 5: `..._uncached_model` / `s (TODO(...))` split a test's name in two."""
    test = "test_logits_at_every_generated_position_equal_the_uncached_models"
    lines = fit([f"steps/lab-02/tests/test_kvcache.py::{test} (TODO(lab-02 task 3d: next_logits))"])
    assert all(len(x) <= WIDTH for x in lines), lines
    assert lines[0].endswith("::") and lines[1].strip() == test, lines


def test_a_long_command_is_cut_where_the_shell_joins_it_again():
    name = '"test_float64_input_to_a_float64_module_is_accepted[MultiHeadSelfAttention]"'
    lines = typed_lines("One test in full: ", f"pixi run check-lab-01 -v -k {name}")
    assert all(len(x) <= WIDTH for x in lines) and len(lines) == 2, lines
    assert lines[0].endswith(" \\") and lines[1].strip() == name, lines
    short = typed_lines("One test in full: ", "pixi run check-lab-01 -v -k x")
    assert short == ["One test in full: pixi run check-lab-01 -v -k x"]
