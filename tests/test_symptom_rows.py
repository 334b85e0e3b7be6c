"""Issue 33: a symptom row is shown only when the failure is that bug. Bugs no row describes are
recognised as none (each curated bug recognised as its own row: tests/test_curated_bugs.py)."""

import pytest

from common.check.screen import recognised, symptom_lines, symptom_rows
from common.course import course_step
from common.course.bugs import Bug, broken_copy
from tests.test_curated_bugs import named_tests
from tools.symptoms import failures


def injected(step: str, module: str, bug: Bug) -> dict[str, str]:
    """The failures of the tests a step's symptom table names, with `bug` in a copy of `module`."""
    copy = broken_copy(course_step(step).solution, module, bug)
    return failures(step, module, copy, named_tests(symptom_rows(step)))


# Wrong programs no row describes, each once shown a row: (step, module, a test it fails, the
# reference's code, what it has instead). Issue 33: the warm-up; issue 54: the clipping, the join.
UNDESCRIBED = {
    "warm-up one step short": (  # showed 'learning rate 10x too small'
        "step-06", "train", "check_lr",
        "return cfg.lr * (step + 1) / cfg.warmup", "return cfg.lr * step / cfg.warmup",
    ),
    "clip_grad_value_ for clip_grad_norm_": (  # showed 'look at the order of the calls'
        "step-06", "train", "check_clipping",
        "torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)",
        "torch.nn.utils.clip_grad_value_(model.parameters(), grad_clip)",
    ),
    "clip_grad_norm_ of the gradients": (  # showed 'look at the order of the calls'
        "step-06", "train", "check_clipping",
        "torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)",
        "torch.nn.utils.clip_grad_norm_([p.grad for p in model.parameters()], grad_clip)",
    ),
    "no clipping": (  # the step unclipped, .grad too: the order of the calls is not the bug
        "step-06", "train", "check_clipping",
        "torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)", "pass",
    ),
    "new keys joined along the heads": (  # showed 'new keys are joined along d_head'
        "lab-02", "kvcache", "test_append_joins_the_new_positions_after_the_held_ones",
        "torch.cat((self.keys[layer], k), 2)", "torch.cat((self.keys[layer], k), 1)",
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", UNDESCRIBED)
def test_a_bug_no_row_describes_shows_no_row(name):
    step, module, test, old, new = UNDESCRIBED[name]
    found = injected(step, module, Bug(name, "", "", old=old, new=new))
    assert any(test in n for n in found), f"expected {test} to fail, got {sorted(found)}"
    shown = [r.breaks for r in recognised(symptom_rows(step), found)]
    assert shown == [], f"expected no row for {name}, got {shown}"


def test_no_row_follows_a_test_out_of_time():
    """Issue 33: a loop in estimate_loss was followed by the rows of check_eval_mode."""
    timed_out = "\n".join(
        [
            "  steps/step-06/starter/train.py:60 in estimate_loss",
            "      while True:",
            "  TookTooLong: 10 s of CPU time",
        ]
    )
    case = "steps/step-06/tests/test_train.py::test_check[check_eval_mode]"
    assert symptom_lines("step-06", {case: timed_out}) == []


def test_a_failure_that_says_another_thing_is_not_the_row():
    """check_eval_mode fails for both estimate bugs; each row is recognised by its own words."""
    case = "steps/step-06/tests/test_train.py::test_check[check_eval_mode]"
    graph = "  AssertionError: estimate_loss built a graph: torch.no_grad()"
    shown = [r.breaks for r in recognised(symptom_rows("step-06"), {case: graph})]
    graphs = next(b for b in course_step("step-06").bugs() if b.name == "evaluated with gradients")
    assert shown == [graphs.breaks], f"expected the row {graphs.breaks!r} alone, got {shown}"


def test_several_rows_are_one_of_these():
    """Bugs that share a failure are listed as 'one of these', the count first."""
    lines = symptom_lines(
        "step-05",
        {"steps/step-05/tests/test_checks.py::test_parameter_count": "  AssertionError: count"},
    )
    assert lines[0] == "  Symptom table, one of these 2 bugs:", (
        f"expected the two parameter_count rows as one of these, got {lines}"
    )
    assert sum(line.startswith("  - ") for line in lines) == 2, lines
