"""Fixtures for the Step 3 checkpoint: its modules, loaded at call time."""

import pytest

from common import SOLUTIONS_DIR
from common.loader import load_file, reference


@pytest.fixture
def data():
    """solutions/step-03/data.py."""
    return reference("step-03", "data")


@pytest.fixture
def run():
    """solutions/step-03/run.py, the `pixi run step-03` entry point."""
    return load_file(SOLUTIONS_DIR / "step-03" / "run.py")
