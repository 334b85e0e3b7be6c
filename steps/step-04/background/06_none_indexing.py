"""`None` in an index adds an axis of size 1, so tensors of different shapes can broadcast.

Run it whole (`python steps/step-04/background/06_none_indexing.py`) or cell by cell (`# %%`).
"""

import torch

# %% One new axis, in front or behind.
pos = torch.zeros(5, 3)  # (T, d): one position vector per position
print(tuple(pos[None].shape), tuple(pos[None, :, :].shape), tuple(pos.unsqueeze(0).shape))
i = torch.arange(4)  # (T,) = positions 0, 1, 2, 3
print(tuple(i[:, None].shape), tuple(i[None, :].shape))  # a column, and a row

# %% Broadcasting: an axis of size 1 is repeated to match the other tensor's size there.
# (B, T, d) + (1, T, d): every sequence of the batch gets the same position vectors.
tok = torch.ones(2, 5, 3)
print(tuple((tok + pos[None]).shape))
# A column minus a row is a table: entry [i, j] is i - j, query position minus key position.
# It is what the smoother of 4.4 squares, and `>= 0` turns it into the causal mask.
gap = i[:, None] - i[None, :]
print(gap)
print((gap >= 0).long())
