"""`**` is a power; `@` is a matrix product, which `*` (elementwise) is not.

Run it whole (`python steps/step-04/background/04_power_matmul.py`) or cell by cell (`# %%`).
"""

import torch

# %% `**` raises to a power; a fractional or negative exponent works too.
d_head = 64
print(d_head**0.5, d_head**-0.5, 3**2)
# `**` binds tighter than a leading minus: -3**2 is -(3**2). (fmt: skip keeps ruff from adding
# the parentheses that would give the answer away.)
print(-3**2, (-3) ** 2)  # fmt: skip

# %% Two queries and two keys, one per row, each of width 3.
q = torch.tensor([[1.0, 0.0, 2.0], [0.0, 1.0, 1.0]])
k = torch.tensor([[1.0, 1.0, 1.0], [2.0, 0.0, 0.0]])
# q @ k.T multiplies rows of q with columns of k.T (the rows of k): entry [i, j] is q_i . k_j,
# every query against every key, (2, 3) @ (3, 2) -> (2, 2).
print(q @ k.T)
# q * k multiplies matching entries and keeps the shape (2, 3); no sums, no pairs (i, j).
print(q * k)
# Summing q * k along a row gives only the diagonal of q @ k.T: query i against key i.
print((q * k).sum(dim=-1), torch.diagonal(q @ k.T))

# %% With a batch axis in front, `@` multiplies the last two axes and keeps the rest:
# (B, T, d) @ (B, d, T) -> (B, T, T), one score matrix per sequence.
qb, kb = torch.ones(4, 5, 3), torch.ones(4, 5, 3)
print(tuple((qb @ kb.transpose(-2, -1)).shape))
try:
    qb @ kb  # (5, 3) @ (5, 3): the inner sizes 3 and 5 do not match
except RuntimeError:
    print("qb @ kb fails: (5, 3) @ (5, 3) has no inner size in common")
