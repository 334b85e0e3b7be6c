"""Fixtures for lab-01: the implementation under test (starter or solution, per --impl), its
experiments.py and its run.py."""

from pathlib import Path

import pytest

from common.loader import load, load_file

STEP = "lab-01"
HERE = Path(__file__).resolve().parent.parent  # steps/lab-01/


@pytest.fixture
def attention(impl):
    """The attention module under test (starter or solution, per --impl)."""
    return load(STEP, "attention", impl)


@pytest.fixture
def wrong_mask(impl):
    """The exercise module exercises/wrong_mask.py under test (starter or solution, per --impl)."""
    return load(STEP, "exercises.wrong_mask", impl)


@pytest.fixture
def runner():
    """lab-01's experiments.py: the table's measurements, its thresholds and the README blocks."""
    return load_file(HERE / "experiments.py")


@pytest.fixture
def lab():
    """lab-01's run.py: its RUN and the ids of its TODOs."""
    return load_file(HERE / "run.py")
