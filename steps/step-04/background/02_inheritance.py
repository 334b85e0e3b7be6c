"""Class inheritance and `super()`: how `class Head(nn.Module)` gets its machinery.

Run it whole (`python steps/step-04/background/02_inheritance.py`) or cell by cell (`# %%`).
"""

import torch.nn as nn


# %% A base class and a subclass. `Scaled(Dot)` inherits every method of `Dot`; it replaces
# (overrides) `score`, and `super()` reaches the parent's version from inside the child.
class Dot:
    def __init__(self, d_head):
        self.d_head = d_head

    def score(self, q, k):
        return sum(a * b for a, b in zip(q, k, strict=True))


class Scaled(Dot):
    def __init__(self, d_head):
        super().__init__(d_head)  # the parent sets self.d_head
        self.scale = d_head**-0.5  # then the child adds its own attribute

    def score(self, q, k):
        return super().score(q, k) * self.scale


q, k = [1, 2, 3, 4], [1, 1, 1, 1]
print(Dot(4).score(q, k), Scaled(4).score(q, k))
print(Scaled(4).d_head, isinstance(Scaled(4), Dot))
print([cls.__name__ for cls in Scaled.__mro__])  # where Python looks for a method, in order


# %% nn.Module's own __init__ sets up the bookkeeping that registers parameters and submodules.
# Skip the super().__init__() call and the first submodule you assign has nowhere to go.
class Forgetful(nn.Module):
    def __init__(self):
        self.query = nn.Linear(4, 2)


try:
    Forgetful()
except AttributeError as err:
    print("AttributeError:", err)
