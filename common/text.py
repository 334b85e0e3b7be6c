"""The character-level text the GPT steps train on, and sampling from a model, written once."""

import functools

import torch

from common.seeding import generator


@functools.cache
def encoded(data) -> tuple[torch.Tensor, int]:
    """A data module's text as one 1-D tensor of int64 ids (cached: do not modify) and its V."""
    return torch.tensor(data.encode(data.load_text())), len(data.vocab())  # (N,), V


def sample(model, data, prompt: str = "\n", n: int = 200, seed: int = 0) -> str:
    """n characters the model writes after `prompt`, from a fresh generator of `seed`."""
    idx = torch.tensor([data.encode(prompt)])  # (1, len(prompt))
    out = model.generate(idx, n, generator=generator(seed))  # (1, len(prompt) + n)
    return data.decode(out[0, len(prompt) :].tolist())
