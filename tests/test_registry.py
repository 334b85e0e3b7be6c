"""One registry of steps (issue 34): a checkpoint and a copy of a step are Steps where they lie."""

from common import SOLUTIONS_DIR, STEPS_DIR, course, run


def test_a_checkpoint_is_shown_at_its_own_folder():
    """whose() names solutions/step-03/ for the Step 3 checkpoint, not a steps/ folder."""
    checkpoint, step = course.course_step("step-03"), course.course_step("step-04")
    assert checkpoint.checkpoint and checkpoint.solution == SOLUTIONS_DIR / "step-03"
    assert not step.checkpoint and step.solution == STEPS_DIR / "step-04" / "solution"
    assert "(solutions/step-03/)" in run.whose("step-03", "solution")
    assert "(steps/step-04/solution/)" in run.whose("step-04", "solution")


def test_a_copy_of_a_step_is_a_step_where_it_lies(tmp_path):
    """at(folder) gives the Step of a copy (catch-up's tests, a pristine copy): its own layout."""
    folder = tmp_path / "step-97"
    (folder / "tests").mkdir(parents=True)
    copy = course.at(folder)
    assert (copy.name, copy.checkpoint, copy.solution) == ("step-97", False, folder / "solution")
