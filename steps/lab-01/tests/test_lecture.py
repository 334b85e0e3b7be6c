"""The appendix's lecture figures come back: the lecture's leak from its draw, its parity as noise.

(That the handout's blocks are what a fresh run prints is tests/test_docs.py's job, for every step.)"""

import pytest

from common import expect

pytestmark = pytest.mark.whole_run


@pytest.mark.todo("task 7")
def test_readme_lecture_leak_reproduces_the_lecture_and_this_lab(attention, wrong_mask, runner):
    """The lecture's 0.740962 comes back from its draw of q, k, v; this lab's draw gives its own."""
    rows = runner.lecture_leak(attention, wrong_mask)
    (_, _, lecture), (_, count, ours) = rows
    expect.equal("the lecture's leak, to 6 places", round(lecture, 6), runner.LECTURE_LEAK)
    exercise = runner.diagnosis(attention, wrong_mask)  # the lab's own figure, as printed
    expect.equal("this lab's leak count", count, exercise["buggy_count"], "the exercise's")
    expect.equal("this lab's largest leak", ours, exercise["buggy_largest"], "the exercise's")


@pytest.mark.todo("task 6")
def test_readme_lecture_parity_is_rounding_noise_both_ways(attention, runner):
    """The lecture's last bits and this lab's lie within the same seed-to-seed spread of units."""
    fresh = runner.parity_spread(attention)
    for (
        label,
        lecture,
        _,
        _,
        largest,
    ) in fresh:  # the lecture's figure is a few units too, like ours
        expect.at_most(
            f"{label}: the lecture's difference in rounding units", float(lecture) / runner.ULP, 4
        )
        expect.at_most(f"{label}: this lab's largest, in rounding units", largest / runner.ULP, 4)
