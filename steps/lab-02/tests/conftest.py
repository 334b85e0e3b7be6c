"""Fixtures for lab-02: the layers under test (per --impl), the run and the curated bugs."""

import pytest
import torch

from common.course import course_step
from common.loader import kept_whole, load, load_file

HERE = course_step("lab-02").folder


@pytest.fixture
def layers(impl):
    """The layers module under test (starter or solution, per --impl, or an override), whose own
    functions its code leaves as they are."""
    with kept_whole(load("lab-02", "layers", impl)) as module:
        yield module


# x in every float dtype: with float32 and float64 alone, code that computes in float32 passes,
# and it turns a bfloat16 or float16 x into float32 (the contracts keep x's dtype)
@pytest.fixture(params=[torch.float32, torch.float64, torch.bfloat16, torch.float16], ids=str)
def dtype(request):
    """The dtype of x in a test of a layer that keeps it."""
    return request.param


@pytest.fixture(scope="session")
def run():
    """steps/lab-02/run.py: the experiments, their tables and the README's blocks."""
    return load_file(HERE / "run.py")
