"""Boolean masks and `-inf`: how the head hides the future from each query.

Run it whole (`python steps/step-04/background/05_masks.py`) or cell by cell (`# %%`).
"""

import torch
import torch.nn.functional as F

# %% A comparison on a tensor compares every entry and gives a tensor of True/False.
tril = torch.tril(torch.ones(4, 4))  # 1 on and below the diagonal: the keys a query may see
future = tril == 0  # True exactly where key j comes after query i
print(future)
print(future.sum().item(), "of 16 entries are in the future")

# %% masked_fill(mask, value) returns a copy with `value` wherever the mask is True.
scores = torch.zeros(4, 4)  # equal scores: each query likes every key the same
masked = scores.masked_fill(future, float("-inf"))
print(masked)
# exp(-inf) is exactly 0, so a -inf score gets exactly zero weight, and each row's weights
# are shared evenly among the keys it may see: 1, 1/2, 1/3, 1/4.
print(F.softmax(masked, dim=-1))

# %% Why -inf and not 0: a score of 0 is an ordinary score, so the future still gets weight.
leaky = F.softmax(scores.masked_fill(future, 0.0), dim=-1)
print("weight on the future, masked with 0:   ", leaky[future].sum().item())
print("weight on the future, masked with -inf:", F.softmax(masked, dim=-1)[future].sum().item())

# %% A row with no visible key at all has nothing to share: softmax of all -inf is nan.
print(F.softmax(torch.full((3,), float("-inf")), dim=-1))

# %% A mask also works as an index: it picks the entries where it is True (as a flat tensor,
# row by row), and assigning through it changes them in place, like masked_fill without a copy.
s = torch.arange(16.0).reshape(4, 4)
print(s[~future])  # ~ flips True and False: the 10 scores the queries may see
t = s.clone()
t[future] = float("-inf")
print(torch.equal(t, s.masked_fill(future, float("-inf"))))
