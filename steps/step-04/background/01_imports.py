"""Import aliases: `import torch.nn as nn` gives a module a second, shorter name.

Run it whole (`python steps/step-04/background/01_imports.py`) or cell by cell (`# %%`).
"""

# %% An alias is another name for the very same module object, not a copy.
import torch
import torch.nn as nn
import torch.nn.functional as F

print(nn is torch.nn, F is torch.nn.functional)
print(F.softmax is torch.nn.functional.softmax)

# %% `import a.b as c` binds only `c`. The handout's head writes `import torch, torch.nn as nn`
# because it needs both names. Here each import runs in an empty namespace to show what it binds.
for line in ["import torch.nn as nn", "import torch", "from torch import nn"]:
    names = {}
    exec(line, names)
    print(f"{line:24} binds", sorted(n for n in names if n != "__builtins__"))

# %% `from ... import ... as ...` renames a single function.
from math import sqrt as root  # noqa: E402 (imports inside a cell are the point here)

d_head = 64
print("scores are divided by", root(d_head))
