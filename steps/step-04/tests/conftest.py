"""Fixtures for Step 4: the modules under test, loaded when a test asks for them."""

import pytest

from common.course import course_step
from common.loader import load, load_file

SCORECARD = pytest.StashKey[str]()


@pytest.fixture
def head(impl):
    """The head module under test (starter or solution, per --impl, or an override)."""
    return load("step-04", "head", impl)


@pytest.fixture
def experiments():
    """steps/step-04/experiments.py: the measurements, given a head module."""
    return load_file(course_step("step-04").folder / "experiments.py")


@pytest.fixture
def run():
    """steps/step-04/run.py: tables, figures and the README's generated blocks."""
    return load_file(course_step("step-04").folder / "run.py")


@pytest.fixture(scope="session")
def leave_scorecard(request):
    """Keep the graded proofs' scorecard to print after the tests."""
    return lambda text: request.config.stash.__setitem__(SCORECARD, text)


def pytest_terminal_summary(terminalreporter, config):
    """After the tests: the proofs' scorecard against every broken head, once they are written.
    Not under --progress, whose one line a step is all it prints."""
    if config.getoption("--progress", False):
        return
    if card := config.stash.get(SCORECARD, None):
        terminalreporter.write_line(card)
