"""Fixtures for Step 5: the GPT under test (per --impl), its checks, its experiments and run.py."""

import pytest

from common.course import course_step
from common.loader import load, load_file

HERE = course_step("step-05").folder


@pytest.fixture
def gpt(impl):
    """The gpt module under test (starter or solution, per --impl, or an override)."""
    return load("step-05", "gpt", impl)


@pytest.fixture(scope="session")
def checks():
    """steps/step-05/gpt_checks.py: the classic-bug checks, each given a gpt module."""
    return load_file(HERE / "gpt_checks.py")


@pytest.fixture(scope="session")
def run():
    """steps/step-05/run.py: the run's declaration, RUN."""
    return load_file(HERE / "run.py")


@pytest.fixture(scope="session")
def experiments():
    """steps/step-05/experiments.py: the tables, the training run and the README blocks."""
    return load_file(HERE / "experiments.py")


@pytest.fixture(scope="session")
def train():
    """steps/step-05/train.py: batches and the training loop."""
    return load_file(HERE / "train.py")
