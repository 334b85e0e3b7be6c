"""Fixtures for lab-02: the layers under test (per --impl), the run and the curated bugs."""

import pytest

from common.course import course_step
from common.loader import load, load_file

HERE = course_step("lab-02").folder


@pytest.fixture
def layers(impl):
    """The layers module under test (starter or solution, per --impl, or an override)."""
    return load("lab-02", "layers", impl)


@pytest.fixture(scope="session")
def run():
    """steps/lab-02/run.py: the experiments, their tables and the README's blocks."""
    return load_file(HERE / "run.py")
