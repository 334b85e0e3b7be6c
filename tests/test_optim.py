"""common/optim.py: an optimiser is built, zeroed, stepped and saved without importing torch's
compiler, and steps to the very numbers torch's own step gives."""

import subprocess
import sys

import pytest
import torch

from common import REPO_ROOT
from common.optim import build_without_compiler

STEPS = """
import sys, torch
from common.optim import build_without_compiler
if sys.argv[1] == "eager":
    build_without_compiler()
torch.manual_seed(0)
model = torch.nn.Linear(3, 2)
optimiser = torch.optim.AdamW(model.parameters(), lr=0.1)
for _ in range(3):
    optimiser.zero_grad()
    model(torch.ones(4, 3)).square().sum().backward()
    optimiser.step()
print("torch._dynamo" in sys.modules, torch.is_grad_enabled(), model.weight.flatten().tolist())
"""


def test_the_methods_that_would_import_the_compiler_are_marked_and_still_work():
    marked = build_without_compiler()
    # if torch stops wrapping these, the list shrinks and this says the saving is gone
    assert {"add_param_group", "zero_grad", "state_dict", "load_state_dict"} <= set(marked)
    model = torch.nn.Linear(3, 2)
    optimiser = torch.optim.AdamW(model.parameters(), lr=0.1)
    model(torch.ones(1, 3)).sum().backward()
    optimiser.step()
    optimiser.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    saved = optimiser.state_dict()
    again = torch.optim.AdamW(model.parameters(), lr=0.1)
    again.load_state_dict(saved)
    assert again.state_dict()["state"][0]["step"] == 1


@pytest.mark.process
def test_an_eager_step_imports_no_compiler_and_gives_torchs_numbers():
    """Three AdamW steps in a fresh Python, torch's own and the eager one: the same weights to the
    last bit, and only torch's imported torch._dynamo (a second of every check that trains)."""
    runs = {}
    for how in ("torch", "eager"):
        done = subprocess.run(
            [sys.executable, "-c", STEPS, how], cwd=REPO_ROOT, capture_output=True, text=True,
            timeout=120, check=True,
        )  # fmt: skip
        runs[how] = done.stdout.split(" ", 2)
    assert runs["torch"][0] == "True" and runs["eager"][0] == "False", runs
    assert runs["eager"][1:] == runs["torch"][1:], "the eager step moved the weights otherwise"
