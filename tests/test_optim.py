"""common/optim.py: an optimiser is built, zeroed and saved without importing torch's compiler."""

import torch

from common.optim import build_without_compiler


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
