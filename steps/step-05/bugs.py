"""Step 5's curated bugs (step.toml [mutation]): classic broken GPTs, each one replacement in gpt.py with the check of gpt_checks.py that names it."""

from common.course.bugs import Bug

# the rows of the handout's symptom table, in its order; `passes`: tests a bug leaves passing that
# another bug failing its check too would fail
BUGS = [
    Bug(
        "no residual",
        "the branches replace x instead of adding to it; deep models stop training",
        "a residual branch adds to the stream, it does not replace it (pre-LN, task 3); look at what "
        "each line of Block.forward assigns",
        old="x + self.attn(self.ln1(x))  # (B, T, d) communicate: positions exchange information\n"
        "        x = x + self.mlp",
        new="self.attn(self.ln1(x))  # (B, T, d) the branch replaces x\n        x = self.mlp",
        check="zeroed_branches_give_the_embedding_back",
        passes=("test_positions_matter",),
        fails="test_checks.py::test_zeroed_branches_give_the_embedding_back",
    ),
    Bug(
        "post-LN",
        "LayerNorm after the sum, ln(x + attn(x)): the residual stream itself is renormalised",
        "pre-LN normalises only the copy a branch reads; the stream itself is never normalised on the "
        "way (task 3); look at where the LayerNorms sit in Block.forward",
        old="x = x + self.attn(self.ln1(x))  # (B, T, d) communicate: positions exchange information\n"
        "        x = x + self.mlp(self.ln2(x))",
        new="x = self.ln1(x + self.attn(x))  # (B, T, d) normalised after the sum\n"
        "        x = self.ln2(x + self.mlp(x))",
        check="zeroed_branches_give_the_embedding_back",
        passes=("test_positions_matter",),
        fails="test_checks.py::test_zeroed_branches_give_the_embedding_back",
    ),
    Bug(
        "positions dropped",
        "no positional embedding: a causal model sees each prefix as a bag of characters",
        "the input is a token embedding plus a position embedding (Algorithm 10's first line, task 4); "
        "look at how GPT.forward builds x",
        old="x = self.tok_emb(idx) + self.pos_emb(pos)",
        new="x = self.tok_emb(idx)",
        check="positions_matter",
        fails="test_checks.py::test_positions_matter",
    ),
    Bug(
        "target shifted by one",
        "targets shifted again in the loss: each position is scored on the id after its target",
        "the batches already pair each position with the id that follows it, so the loss needs no "
        "further shift (task 4); look at what GPT.forward hands to the cross-entropy",
        old="loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())",
        new="loss = F.cross_entropy(logits[:, :-1].flatten(0, 1), targets[:, 1:].flatten())",
        check="loss_is_the_next_token_cross_entropy",
        passes=("test_init_loss_is_ln_V",),
        fails="test_checks.py::test_loss_is_the_next_token_cross_entropy",
    ),
    Bug(
        "one block shared",
        "nn.Sequential(*[Block(...)] * n_layer) repeats one block: n_layer - 1 blocks' weights missing",
        "one block object repeated n_layer times is one block: each layer needs its own weights; look "
        "at how GPT.__init__ fills blocks",
        old="self.blocks = nn.Sequential(*(Block(d, h, T_max) for _ in range(n_layer)))",
        new="self.blocks = nn.Sequential(*[Block(d, h, T_max)] * n_layer)",
        check="parameter_count",
        fails="test_checks.py::test_parameter_count",
    ),
    Bug(
        "MLP 2d wide",
        "the hidden layer has 2d units, not 4d: it runs, with fewer parameters than the formula",
        "the hidden layer of the MLP is four times the width, as the parameter formula counts (task 2); "
        "look at the sizes in FeedForward.__init__",
        old="self.fc = nn.Linear(d, 4 * d)  # (B, T, d) -> (B, T, 4d)\n"
        "        self.proj = nn.Linear(4 * d, d)",
        new="self.fc = nn.Linear(d, 2 * d)  # (B, T, d) -> (B, T, 2d)\n"
        "        self.proj = nn.Linear(2 * d, d)",
        check="parameter_count",
        fails="test_checks.py::test_parameter_count",
    ),
    Bug(
        "loss summed",
        "cross-entropy summed over B * T positions: the loss at init is B * T * ln V",
        "the loss is the mean over the B * T positions, not their sum (task 4); look at the "
        "reduction of the cross-entropy",
        old="loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())",
        new='loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")',
        check="init_loss_is_ln_V",
        fails="test_checks.py::test_init_loss_is_ln_V",
    ),
    Bug(
        "PyTorch's default init",
        "the first loss sits well above ln V: lm_head's default weights give logits of std ~0.5",
        "the given GPT._init_weights (N(0, 0.02), biases 0) must reach every submodule once "
        "GPT.__init__ has built them; look at the end of GPT.__init__",
        old="self.apply(self._init_weights)",
        new="pass",
        check="init_loss_is_ln_V",
        fails="test_checks.py::test_init_loss_is_ln_V",
    ),
    Bug(
        "blocks skipped",
        "forward goes from the embedding straight to ln_f: a bigram model that cannot learn context",
        "the embedding must pass through the blocks before the final LayerNorm (Algorithm 10); look at "
        "the order of the steps in GPT.forward",
        old="x = self.blocks(x)",
        new="pass",
        check="overfits_one_batch",
        passes=("test_init_loss_is_ln_V",),
        fails="test_checks.py::test_overfits_one_batch",
    ),
    Bug(
        "attention sees the future",
        "a head whose mask keeps every key: training loss drops fast, generated text is garbage",
        "each head must keep Step 4's causal mask; look at which Head MultiHeadAttention builds and "
        "whether its mask is changed",
        old="self.proj = nn.Linear(d, d, bias=False)",
        new="for head in self.heads:\n            head.tril.fill_(1)  # the mask keeps every key\n        "
        "self.proj = nn.Linear(d, d, bias=False)",
        check="causal_by_perturbation",
        passes=("test_overfits_one_batch",),
        fails="test_checks.py::test_causal_by_perturbation",
    ),
    Bug(
        "no crop in generate",
        "the context outgrows T_max after a few tokens and forward refuses it",
        "the model has position embeddings for T_max positions only: it may read only the last T_max "
        "ids (task 5); look at what generate hands the model on each turn",
        old="self(idx[:, -self.T_max :])",
        new="self(idx)",
        check="generate_crops_the_context",
        passes=("test_generate_samples_the_softmax",),
        fails="test_checks.py::test_generate_crops_the_context",
    ),
    Bug(
        "greedy generate",
        "argmax instead of a draw: the same text for every generator, temperature ignored",
        "generate must draw the next id at random from the softmax, with the generator it is given, "
        "not take the most likely one (task 5); look at how the next id is picked",
        old="torch.multinomial(probs, num_samples=1, generator=generator)",
        new="probs.argmax(dim=-1, keepdim=True)",
        check="generate_samples_the_softmax",
        fails="test_checks.py::test_generate_samples_the_softmax",
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
