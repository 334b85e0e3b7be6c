"""Fixtures for lab-01: the implementation under test (starter or solution, per --impl) and run.py."""

from pathlib import Path

import pytest

from common.loader import load, load_file

STEP = "lab-01"
RUN_PY = Path(__file__).resolve().parent.parent / "run.py"


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
    """lab-01's run.py: the table's measurements, its thresholds and the README blocks."""
    return load_file(RUN_PY)
