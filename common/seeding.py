"""Seeding helpers: every random tensor in the course comes from an explicit seed."""

import torch


def seed_all(seed: int) -> None:
    """Seed torch's global generator (used by nn.Module initialisation)."""
    # The course runs on the CPU; torch.manual_seed would also queue a seed, with a recorded
    # Python stack, for every accelerator backend (about 1 ms a call inside pytest)
    torch.default_generator.manual_seed(int(seed))  # as torch.manual_seed: numpy ints too


def generator(seed: int) -> torch.Generator:
    """A fresh CPU generator: pass it to torch.randn(..., generator=g)."""
    return torch.Generator().manual_seed(seed)


def randn(*shape: int, seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Standard-normal tensor of `shape` drawn from its own seeded generator."""
    return torch.randn(*shape, generator=generator(seed), dtype=dtype)
