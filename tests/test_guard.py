"""The judges the check keeps: torch replacing its own functions is never blamed on the student."""

import subprocess
import sys

import pytest

from common import REPO_ROOT

PROBE = """
import torch
from common.check.guard import Judges
judges = Judges()
torch.optim.AdamW([torch.nn.Parameter(torch.zeros(2))])  # imports torch._dynamo, which wraps manual_seed
print("after torch's own import:", repr(judges.restore()))
torch.allclose = lambda *a, **k: True
torch.Tensor.__eq__ = lambda *a, **k: True
print("after a student's patch:", repr(judges.restore()))
print("put back:", torch.allclose(torch.zeros(1), torch.ones(1)))
"""


@pytest.mark.process
def test_torchs_lazy_imports_replace_no_judge_and_a_students_patch_is_still_caught():
    """Issue 26's false alarm: building the first optimiser must not read as a replaced judge."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "after torch's own import: ''" in done.stdout, done.stdout
    assert "after a student's patch: 'torch.allclose, torch.Tensor.__eq__'" in done.stdout, (
        done.stdout
    )
    assert "put back: False" in done.stdout, done.stdout
