"""The parameters of `nn.Linear` and `nn.Embedding`, and a buffer that is not one.

Run it whole (`python steps/step-04/background/03_linear.py`) or cell by cell (`# %%`).
"""

import torch
import torch.nn as nn

torch.manual_seed(0)  # the initial weights are random; the facts printed below are not

# %% nn.Linear(in_features, out_features, bias=True) holds a weight of shape
# (out_features, in_features) and computes x @ weight.T + bias on the last axis of x.
proj = nn.Linear(6, 3)
print("weight", tuple(proj.weight.shape), "bias", tuple(proj.bias.shape))
x = torch.randn(2, 5, 6)  # (B, T, d): the layer sees only the last axis
print("output", tuple(proj(x).shape))
print(torch.allclose(proj(x), x @ proj.weight.T + proj.bias))
query = nn.Linear(6, 3, bias=False)  # what the head uses: a matrix and nothing else
print("parameters with bias:", sum(p.numel() for p in proj.parameters()))
print("parameters without:  ", sum(p.numel() for p in query.parameters()))

# %% nn.Embedding(num_embeddings, embedding_dim) is a table with one learned row per id.
# Calling it with integer ids looks rows up; it multiplies nothing.
tok = nn.Embedding(10, 4)  # a vocabulary of 10 ids, each a vector of 4 numbers
idx = torch.tensor([[3, 3, 7]])  # (B, T) = (1, 3): token ids, not vectors
print("table", tuple(tok.weight.shape), "lookup", tuple(tok(idx).shape))
print(torch.equal(tok(idx)[0, 0], tok.weight[3]), torch.equal(tok(idx)[0, 0], tok(idx)[0, 1]))
try:
    tok(torch.tensor([10]))  # ids run from 0 to num_embeddings - 1
except IndexError as err:
    print("IndexError:", err)


# %% A buffer (register_buffer) moves and saves with the module but is never trained.
class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.key = nn.Linear(4, 2, bias=False)
        self.register_buffer("tril", torch.tril(torch.ones(3, 3)))


m = Tiny()
print([name for name, _ in m.named_parameters()], [name for name, _ in m.named_buffers()])
print(m.key.weight.requires_grad, m.tril.requires_grad)
