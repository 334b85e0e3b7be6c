"""Step 5's curated bugs (step.toml [mutation]): classic broken GPTs, each with the check that names it.

`broken(module, bug)` patches a freshly loaded copy of gpt.py (common.loader.load_fresh): its
classes look each other up by name, so replacing `Block` changes the blocks GPT builds.
"""

from types import ModuleType

import torch
import torch.nn as nn
import torch.nn.functional as F

from common.bugs import Bug, commit

__all__ = ["BUGS", "broken"]  # BUGS: the rows of the handout's symptom table, in its order


def broken(fresh: ModuleType, bug: Bug) -> ModuleType:
    """Make a freshly imported copy of gpt.py commit `bug`."""
    return commit(fresh, bug)


def gpt_bug(name: str, breaks: str, check: str, fix: str, inject, passes=()) -> Bug:
    """A broken GPT as the table below lists it: the check of checks.py that names it, the patch;
    `passes`, tests it leaves passing that another bug failing its check too would fail."""
    return Bug(name, breaks, fix, check=check, inject=inject, passes=passes)


def _block_forward(m, forward):
    """Give the module's Block another forward(self, x)."""
    m.Block = type("Block", (m.Block,), {"forward": forward})


def _no_residual(m):
    def forward(self, x):
        x = self.attn(self.ln1(x))  # (B, T, d) the branch replaces x instead of adding to it
        return self.mlp(self.ln2(x))

    _block_forward(m, forward)


def _post_ln(m):
    def forward(self, x):
        x = self.ln1(x + self.attn(x))  # (B, T, d) normalised after the sum: post-LN
        return self.ln2(x + self.mlp(x))

    _block_forward(m, forward)


def _gpt_forward(m, body):
    """Give the module's GPT a forward whose logits come from body(self, idx) and a flat loss."""

    def forward(self, idx, targets=None):
        m.check_input(idx, targets, self.V, self.T_max)
        logits = body(self, idx)  # (B, T, V)
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.flatten(0, 1), targets.flatten())

    m.GPT = type("GPT", (m.GPT,), {"forward": forward})


def _embed(self, idx):
    return self.tok_emb(idx) + self.pos_emb(torch.arange(idx.shape[1]))  # (B, T, d)


def _no_positions(m):
    _gpt_forward(m, lambda self, idx: self.lm_head(self.ln_f(self.blocks(self.tok_emb(idx)))))


def _blocks_skipped(m):
    _gpt_forward(m, lambda self, idx: self.lm_head(self.ln_f(_embed(self, idx))))


def _loss(m, loss):
    """Give the module's GPT the right logits and another loss(logits, targets)."""

    def forward(self, idx, targets=None):
        m.check_input(idx, targets, self.V, self.T_max)
        logits = self.lm_head(self.ln_f(self.blocks(_embed(self, idx))))  # (B, T, V)
        return logits, None if targets is None else loss(logits, targets)

    m.GPT = type("GPT", (m.GPT,), {"forward": forward})


def _shifted_target(m):
    # the targets are already the next ids; shifting again scores each position on the one after
    _loss(m, lambda logits, y: F.cross_entropy(logits[:, :-1].flatten(0, 1), y[:, 1:].flatten()))


def _summed_loss(m):
    _loss(m, lambda logits, y: F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="sum"))


def _default_init(m):
    m.GPT._init_weights = staticmethod(lambda module: None)  # PyTorch's own init stays


def _shared_block(m):
    base = m.GPT

    class GPT(base):
        def __init__(self, V, T_max, d, h, n_layer):
            super().__init__(V, T_max, d, h, n_layer)
            self.blocks = nn.Sequential(*[m.Block(d, h, T_max)] * n_layer)  # ONE block, n times
            self.blocks.apply(self._init_weights)

    m.GPT = GPT


def _narrow_mlp(m):
    class FeedForward(m.FeedForward):
        def __init__(self, d):
            super().__init__(d)
            self.fc, self.proj = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)  # 2d wide, not 4d

    m.FeedForward = FeedForward


def _sees_the_future(m):
    class Head(m.Head):
        def __init__(self, d, d_head, T_max):
            super().__init__(d, d_head, T_max)
            self.tril.fill_(1)  # the mask keeps every key: no longer causal

    m.Head = Head


def _generate(m, pick, crop=True):
    """Give the module's GPT a generate that draws each id with pick(probs, generator)."""

    def generate(self, idx, max_new_tokens, temperature=1.0, generator=None):
        with torch.no_grad():
            for _ in range(max_new_tokens):
                logits, _ = self(idx[:, -self.T_max :] if crop else idx)  # (B, T, V)
                probs = F.softmax(logits[:, -1, :] / temperature, dim=-1)  # (B, V)
                idx = torch.cat((idx, pick(probs, generator)), dim=1)  # (B, T + 1)
        return idx

    m.GPT = type("GPT", (m.GPT,), {"generate": generate})


def _draw(probs, generator):
    return torch.multinomial(probs, 1, generator=generator)  # (B, 1)


def _greedy(m):
    _generate(m, lambda probs, generator: probs.argmax(dim=-1, keepdim=True))


def _no_crop(m):
    _generate(m, _draw, crop=False)


BUGS = [
    gpt_bug(
        "no residual",
        "the branches replace x instead of adding to it; deep models stop training",
        "zeroed_branches_give_the_embedding_back",
        "a residual branch adds to the stream, it does not replace it (pre-LN, task 3); look at what "
        "each line of Block.forward assigns",
        _no_residual,
        passes=("test_positions_matter",),
    ),
    gpt_bug(
        "post-LN",
        "LayerNorm after the sum, ln(x + attn(x)): the residual stream itself is renormalised",
        "zeroed_branches_give_the_embedding_back",
        "pre-LN normalises only the copy a branch reads; the stream itself is never normalised on the "
        "way (task 3); look at where the LayerNorms sit in Block.forward",
        _post_ln,
        passes=("test_positions_matter",),
    ),
    gpt_bug(
        "positions dropped",
        "no positional embedding: a causal model sees each prefix as a bag of characters",
        "positions_matter",
        "the input is a token embedding plus a position embedding (Algorithm 10's first line, task 4); "
        "look at how GPT.forward builds x",
        _no_positions,
    ),
    gpt_bug(
        "target shifted by one",
        "targets shifted again in the loss: each position is scored on the id after its target",
        "loss_is_the_next_token_cross_entropy",
        "the batches already pair each position with the id that follows it, so the loss needs no "
        "further shift (task 4); look at what GPT.forward hands to the cross-entropy",
        _shifted_target,
        passes=("test_init_loss_is_ln_V",),
    ),
    gpt_bug(
        "one block shared",
        "nn.Sequential(*[Block(...)] * n_layer) repeats one block: n_layer - 1 blocks' weights missing",
        "parameter_count",
        "one block object repeated n_layer times is one block: each layer needs its own weights; look "
        "at how GPT.__init__ fills blocks",
        _shared_block,
    ),
    gpt_bug(
        "MLP 2d wide",
        "the hidden layer has 2d units, not 4d: it runs, with fewer parameters than the formula",
        "parameter_count",
        "the hidden layer of the MLP is four times the width, as the parameter formula counts (task 2); "
        "look at the sizes in FeedForward.__init__",
        _narrow_mlp,
    ),
    gpt_bug(
        "loss summed",
        "cross-entropy summed over B * T positions: the loss at init is B * T * ln V",
        "init_loss_is_ln_V",
        "the loss is the mean over the B * T positions, not their sum (task 4); look at the "
        "reduction of the cross-entropy",
        _summed_loss,
    ),
    gpt_bug(
        "PyTorch's default init",
        "the first loss sits well above ln V: lm_head's default weights give logits of std ~0.5",
        "init_loss_is_ln_V",
        "the given GPT._init_weights (N(0, 0.02), biases 0) must reach every submodule once "
        "GPT.__init__ has built them; look at the end of GPT.__init__",
        _default_init,
    ),
    gpt_bug(
        "blocks skipped",
        "forward goes from the embedding straight to ln_f: a bigram model that cannot learn context",
        "overfits_one_batch",
        "the embedding must pass through the blocks before the final LayerNorm (Algorithm 10); look at "
        "the order of the steps in GPT.forward",
        _blocks_skipped,
        passes=("test_init_loss_is_ln_V",),
    ),
    gpt_bug(
        "attention sees the future",
        "a head whose mask keeps every key: training loss drops fast, generated text is garbage",
        "causal_by_perturbation",
        "each head must keep Step 4's causal mask; look at which Head MultiHeadAttention builds and "
        "whether its mask is changed",
        _sees_the_future,
        passes=("test_overfits_one_batch",),
    ),
    gpt_bug(
        "no crop in generate",
        "the context outgrows T_max after a few tokens and forward refuses it",
        "generate_crops_the_context",
        "the model has position embeddings for T_max positions only: it may read only the last T_max "
        "ids (task 5); look at what generate hands the model on each turn",
        _no_crop,
        passes=("test_generate_samples_the_softmax",),
    ),
    gpt_bug(
        "greedy generate",
        "argmax instead of a draw: the same text for every generator, temperature ignored",
        "generate_samples_the_softmax",
        "generate must draw the next id at random from the softmax, with the generator it is given, "
        "not take the most likely one (task 5); look at how the next id is picked",
        _greedy,
    ),
]


# Survivors of python -m tools.mutate that no test can kill (step.toml [mutation] equivalent),
# keyed as its Mutant.key: "<module> <function>: <before> => <after>", with the reason.
EQUIVALENT: dict[str, str] = {
    "gpt check_input: if idx.shape[1] > T_max: => if idx.shape[-1] > T_max:": (
        "check_ids made idx 2-D: dim 1 is dim -1"
    ),
    "gpt MultiHeadAttention.__init__: _check_size(T_max, 'T_max') => pass": (
        "the reference's Step 4 heads refuse the same T_max with the same message (the given check "
        "is for a student's __init__ that builds no head yet)"
    ),
    "gpt Block.__init__: _check_size(T_max, 'T_max') => pass": (
        "the reference's attention (its Step 4 heads) refuses the same T_max with the same message"
    ),
    "gpt GPT.generate: probs = F.softmax(logits, dim=-1) => probs = F.softmax(logits, dim=1)": (
        "logits[:, -1, :] is 2-D (B, V): dim 1 is dim -1"
    ),
    "gpt GPT.generate: idx = torch.cat((idx, nxt), dim=1) => idx = torch.cat((idx, nxt), dim=-1)": (
        "check_ids made idx 2-D (B, T), and nxt is (B, 1): dim -1 is dim 1"
    ),
}
