"""The timing protocol's setup (common/run/timing.py): what a step that times something shows."""

import logging

from common.run import timing


def test_torchs_cuda_home_warning_is_dropped_once_something_is_timed():
    """torch.utils.benchmark imports cpp_extension, which warns of CUDA_HOME on a CPU-only machine
    (Step 6 printed it above its MFU): nothing is compiled, so its warnings are noise."""
    timing._benchmark()
    logger = logging.getLogger("torch.utils.cpp_extension")
    assert not logger.isEnabledFor(logging.WARNING), "its warnings are dropped"
    assert logger.isEnabledFor(logging.ERROR), "its errors are not"
