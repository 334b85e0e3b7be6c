"""The course's held-out tests (grader/heldout/<step>/): each names a TODO of its step, passes on the
reference and fails on the starter as shipped, and a grade runs them, so an answer keyed on the
visible tests' inputs loses what it took."""

import ast
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from common.course import course_step, step_names
from grader.engine import COURSE_HELD, HELD, held_out
from grader.grade import grade
from tools import check_in_a_child, pristine

STEPS = sorted(p.name for p in COURSE_HELD.iterdir() if p.is_dir())


def outcomes(step: str, impl: str, tmp: Path) -> dict[str, str]:
    """Each course held-out test of `step` -> passed or failed, on `impl`, in a pristine copy."""
    steps = pristine(step_names(), tmp)  # lab-02 reads Step 5's reference
    for name, text in held_out(step, None).items():
        (steps / step / "tests" / name).write_text(text, encoding="utf-8")
    xml = tmp / "held.xml"
    files = [str(steps / step / "tests" / name) for name in held_out(step, None)]
    check_in_a_child(steps, [*files, "--impl", impl, f"--junitxml={xml}"])
    return {
        case.get("name"): "failed" if len(case) else "passed"
        for case in ET.parse(xml).getroot().iter("testcase")
    }


@pytest.mark.process
@pytest.mark.parametrize("step", STEPS)
def test_each_held_out_test_passes_on_the_reference_and_fails_on_the_starter(step, tmp_path):
    todos = {t.split(" ", 1)[1].split(":")[0] for t in course_step(step).regions()}
    for name, text in held_out(step, None).items():
        assert name.startswith(f"{HELD}course_"), name
        marked = {m.split('"')[1] for m in text.split("@pytest.mark.todo(")[1:]}
        assert marked and marked <= todos, f"{name}: marks {marked}, the step's TODOs {todos}"
    reference = outcomes(step, "solution", tmp_path / "ref")
    assert reference and set(reference.values()) == {"passed"}, reference
    shutil.rmtree(tmp_path / "ref")
    starter = outcomes(step, "starter", tmp_path / "starter")
    assert starter.keys() == reference.keys() and set(starter.values()) == {"failed"}, starter


def keyed_lr_at() -> str:
    """Lines for the top of lr_at: the visible tests' recorded schedules (LR_AT) and the sizes
    test's four rates, pasted in and looked up by the config (red team 25's, as a student can)."""
    tests = (course_step("step-06").folder / "tests" / "test_train.py").read_text(encoding="utf-8")
    node = next(
        n for n in ast.parse(tests).body if isinstance(n, ast.Assign) and "LR_AT" in ast.unparse(n)
    )
    seen = ast.literal_eval(node.value) | {(10, 2, 0.5, 0.05): {0: 0.25, 1: 0.5, 2: 0.5, 10: 0.05}}
    return (
        f"    _SEEN = {seen!r}\n"
        "    _key = (cfg.steps, cfg.warmup, cfg.lr, cfg.min_lr)\n"
        "    if step in _SEEN.get(_key, {}):\n"
        "        return _SEEN[_key][step]\n"
    )


@pytest.mark.slow
@pytest.mark.process
def test_an_answer_keyed_on_the_visible_tests_inputs_loses_what_it_took(tmp_path):
    """Red team 25: lr_at a straight line, but a table of the visible tests' values where they ask:
    it passed them all; the course's held-out schedule fails it."""
    sub = shutil.copytree(course_step("step-06").solution, tmp_path / "sub")
    train = sub / "train.py"
    code = train.read_text(encoding="utf-8")
    cosine = "    p = (step - cfg.warmup) / (cfg.steps - cfg.warmup)"
    assert code.count(cosine) == 1 and code.count("    if step < cfg.warmup:") == 1
    line = (
        "    return cfg.lr + (cfg.min_lr - cfg.lr) * (step - cfg.warmup) / (cfg.steps - cfg.warmup)"
    )
    code = code.replace(cosine, f"{line}\n{cosine}")  # a straight line down, after the warm-up
    code = code.replace("    if step < cfg.warmup:", keyed_lr_at() + "    if step < cfg.warmup:")
    train.write_text(code, encoding="utf-8")
    g = grade("step-06", sub)
    graded = next(n for n in g.lines if "task 3" in n.todo)
    held = "first failure: test_lr_at_is_the_warm_up_then_cosine_of_another_schedule"
    assert held in graded.reason, graded  # the course's held-out test: every visible one passed
    assert graded.score <= 0.5, graded  # a core test failed: what a plain straight line earns
