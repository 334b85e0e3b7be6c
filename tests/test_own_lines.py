"""Issue 54: a step caught up, then one mistake a student made, and the check's first screen in a
child on a pristine copy: the mistake's TODO, Next at the student's own line (the one the first
failure shown names), its most telling failure first, and no other TODO's row."""

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from common import REPO_ROOT
from common.course import course_step, step_names
from common.course.bugs import Bug, committed
from tools import check_in_a_child, pristine


@dataclass(frozen=True)
class Mistake:
    """One replacement in a caught-up step's module, and what its first screen must say."""

    name: str
    step: str
    module: str
    old: str
    new: str
    task: str  # the TODO the screen names: its task
    at: str  # the code of the line Next names (in the file with the mistake)
    first: str = ""  # words of the first failure's error line
    row: str = ""  # the words of its own symptom row, if the mistake is a curated bug
    words: str = ""  # the course's words above torch's: the values the raising line ran with
    given: tuple[str, ...] = ()  # code of the lines the course gives that refuse the mistake


MISTAKES = [
    Mistake(  # walk 5: green; torch.where's dropped branch sends 0 / 0 back at p = 1
        "dropout by torch.where, no p = 1 branch",
        "lab-02",
        "layers",
        "    if p == 1:\n        return torch.zeros_like(x)  # every entry dropped; x / 0 would give "
        "NaN and inf\n    # drawn in float32 whatever x's dtype: bfloat16 holds about 2,000 values in "
        "[0, 1), too few\n    # for a share of exactly p\n"
        "    keep = torch.rand(x.shape, generator=generator) >= p  # "
        "(x.shape) bool, P = 1 - p\n    return x * keep / (1 - p)  #",
        "    keep = torch.rand(x.shape, generator=generator) >= p\n"
        "    return torch.where(keep, x / (1 - p), torch.zeros_like(x))  #",
        "task 2",
        "return torch.where(keep, x / (1 - p)",
        "expected finite entries",
    ),
    Mistake(  # walk 5: "(within T_max)" in the message named the prefill's T_max line
        "the first position's logits",
        "lab-02",
        "kvcache",
        "forward_cached(model, new, cache)[:, -1, :], cache",
        "forward_cached(model, new, cache)[:, 0, :], cache",
        "task 3d",
        "forward_cached(model, new, cache)[:, 0, :]",
    ),
    Mistake(  # walk 5: no zeros at all was told "a mask of x's whole shape" and "the share kept"
        "the scale's parentheses left out",
        "lab-02",
        "layers",
        "    return x * keep / (1 - p)  #",
        "    return x * keep / 1 - p  #",
        "task 2",
        "return x * keep / 1 - p",
        "each kept entry is scaled by 1 / (1 - p)",
    ),
    Mistake(  # walk 4: its type, not "dropout on, or randomness" (another bug's words)
        "estimate_loss returns a tensor",
        "step-06",
        "train",
        "    return sum(losses) / len(losses)",
        "    return torch.tensor(losses).mean()",
        "task 2",
        "return torch.tensor(losses).mean()",
        "the type estimate_loss returns: expected float, got Tensor",
    ),
    Mistake(  # walk 4: 44 starts for 64 rows: the shape, before "each row is one window"
        "starts drawn without repeats",
        "step-06",
        "train",
        "ix = torch.randint(len(data) - T, (B,), generator=generator)",
        "ix = torch.randperm(len(data) - T, generator=generator)[:B]",
        "task 1",
        "ix = torch.randperm(",
        "expected (64, 6), got (44, 6)",
    ),
    Mistake(  # walk 4: the tuple model(x, y) gives, described in the course's words
        "the loss not unpacked",
        "step-06",
        "train",
        "_, loss = model(x, y)",
        "loss = model(x, y)",
        "task 4",
        "loss.backward()",
        "'tuple' object has no attribute 'backward'",
        words="loss = a tuple of 2",
    ),
    Mistake(  # walk 4: a method handed on uncalled: said so, not only "not iterable"
        "parameters not called",
        "step-06",
        "train",
        "clip_grad_norm_(model.parameters(), grad_clip)  # one bad",
        "clip_grad_norm_(model.parameters, grad_clip)  # one bad",
        "task 4",
        "clip_grad_norm_(model.parameters, grad_clip)",
        "'method' object is not iterable",
        words="model.parameters = a method, not called",
    ),
    Mistake(  # a tuple handed on (`return x, y`): Next at the line of the generator the message names
        "a fresh generator each call",
        "step-06",
        "train",
        "(B,), generator=generator)",
        "(B,), generator=torch.Generator().manual_seed(0))",
        "task 1",
        "ix = torch.randint(len(data) - T, (B,), generator=torch.Generator()",
        "the next batch drawn with the same generator",
    ),
    Mistake(  # the prefill past T_max from the first ids: its line, not the return's
        "prefill from the first T_max ids",
        "lab-02",
        "kvcache",
        "new = idx[:, -model.T_max :]",
        "new = idx[:, : model.T_max]",
        "task 3d",
        "new = idx[:, : model.T_max]",
        "T_max",
    ),
    Mistake(  # an assertion on values: Next at the line that made them, not pe.to(float32)'s return
        "positions start at 1",
        "lab-02",
        "layers",
        "angle = torch.outer(torch.arange(T, dtype=torch.float64)",
        "angle = torch.outer(torch.arange(1, T + 1, dtype=torch.float64)",
        "task 1.1",
        "angle = torch.outer(torch.arange(1, T + 1",
    ),
    Mistake(  # the second rotated coordinate's sign: the stack, not turned.flatten(-2)'s return
        "second rotated sign",
        "lab-02",
        "layers",
        "a * sin + b * cos), dim=-1)",
        "a * sin - b * cos), dim=-1)",
        "task 1.2",
        "turned = torch.stack(",
    ),
    Mistake(  # the pairs stacked on the wrong axis: the same shape, the columns out of place
        "stacked on dim=-2",
        "lab-02",
        "layers",
        "a * sin + b * cos), dim=-1)",
        "a * sin + b * cos), dim=-2)",
        "task 1.2",
        "turned = torch.stack(",
    ),
    Mistake(  # raises on one test (start > T), breaks shapes on a later line in the others
        "arange(start, T)",
        "lab-02",
        "layers",
        "positions = torch.arange(start, start + T, dtype=torch.float64)",
        "positions = torch.arange(start, T, dtype=torch.float64)",
        "task 1.2",
        "positions = torch.arange(start, T",
        words="Your line steps/lab-02/starter/layers.py:87 ran with start = 10000, T = 10;",
    ),
    Mistake(  # torch's broadcasting words, under the shapes of the line's tensors
        "odd columns every third",
        "lab-02",
        "layers",
        "a, b = x[..., 0::2], x[..., 1::2]",
        "a, b = x[..., 0::2], x[..., 1::3]",
        "task 1.2",
        "turned = torch.stack(",
        words="ran with a (2, 3, 10, 8) float32, cos (10, 8) float32, b (2, 3, 10, 5) float32",
    ),
    Mistake(  # a cast to the wrong dtype: a failure of the dtype stays at the return, its cast
        "sinusoidal returns float64",
        "lab-02",
        "layers",
        "return pe.to(torch.float32)",
        "return pe.to(torch.float64)",
        "task 1.1",
        "return pe.to(torch.float64)",
        first="its dtype: expected torch.float32, got torch.float64",
    ),
    Mistake(  # d pairs of angles, not d / 2: torch refuses the first write, under their shapes
        "frequencies(d, d)",
        "lab-02",
        "layers",
        "frequencies(d // 2, d))  # (T, d/2)",
        "frequencies(d, d))  # (T, d/2)",
        "task 1.1",
        "pe[:, 0::2] = torch.sin(angle)",
        words="ran with pe (40, 12) float64, angle (40, 12) float64;",
    ),
    Mistake(  # an assertion: Next at the line the returned value came from, not the def's first
        "train_step returns the loss tensor",
        "step-06",
        "train",
        "    return loss.item()",
        "    return loss",
        "task 4",
        "return loss",
        first="the type train_step returns: expected",
    ),
    Mistake(  # the student walk: check_zero_grad said 'old gradients accumulated' (a foreign row)
        "zero_grad after backward",
        "step-06",
        "train",
        "    loss.backward()\n    torch.nn.utils.clip_grad_norm_",
        "    loss.backward()\n    optimizer.zero_grad(set_to_none=True)\n"
        "    torch.nn.utils.clip_grad_norm_",
        "task 4",
        "    optimizer.zero_grad(set_to_none=True)",  # the call its message names, moved
    ),
    Mistake(  # the foreign row 'look at the order of the calls': the call it names
        "clip_grad_value_ for clip_grad_norm_",
        "step-06",
        "train",
        "torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)",
        "torch.nn.utils.clip_grad_value_(model.parameters(), grad_clip)",
        "task 4",
        "torch.nn.utils.clip_grad_value_(",
        first="with each entry cut to within grad_clip (clip_grad_value_)",
    ),
    Mistake(  # starts up to the end: a short last window, which torch's stack refuses
        "randint(len(data))",
        "step-06",
        "train",
        "ix = torch.randint(len(data) - T,",
        "ix = torch.randint(len(data),",
        "task 1",
        "x = torch.stack([data[i : i + T] for i in ix])",
        words="ran with data (50,) int64, T = 6, ix (64,) int64;",
    ),
    Mistake(  # the mode is not given back when a forward raises: the block it was left in
        "estimate_loss without try/finally",
        "step-06",
        "train",
        "    try:\n        with torch.no_grad():  # no graph: a measurement must not cost memory or "
        "touch .grad\n            losses = [model(x, y)[1].item() for x, y in batches]\n"
        "    finally:\n        model.train(was_training)",
        "    with torch.no_grad():\n        losses = [model(x, y)[1].item() for x, y in batches]\n"
        "    model.train(was_training)",
        "task 2",
        "with torch.no_grad():",
        first="model.training after a forward raised: expected True, got False: try/finally",
    ),
    Mistake(  # an assertion in eval mode: Next at the return of the training branch it took
        "dropout in eval mode",
        "lab-02",
        "layers",
        "if not training or p == 0:",
        "if p == 0:",
        "task 2",
        "return x * keep / (1 - p)",
        row="a mask drawn in eval mode",
    ),
    Mistake(  # the foreign row 'new keys are joined along d_head' is gone: its own words
        "keys joined on the heads axis",
        "lab-02",
        "kvcache",
        "torch.cat((self.keys[layer], k), 2)",
        "torch.cat((self.keys[layer], k), 1)",
        "task 3a",
        "self.keys[layer] = k if self.keys[layer] is None",
        first="joined along axis 1 (h), not along the positions",
    ),
    Mistake(  # the 'mask slice wrong': Next named the reshape where a later test crashed
        "the mask cut to the new positions",
        "lab-02",
        "kvcache",
        "mask = attn.heads[0].tril[T - t : T, :T]",
        "mask = attn.heads[0].tril[:t, :t]",
        "task 3b",
        "scores = scores.masked_fill(mask == 0",  # the line torch refused the (t, t) mask on
        first="masked by (2, 6): rows P to P + t - 1 of the causal mask",
        row="then torch refuses the mask",
    ),
    Mistake(  # the sliding trap's test (task 3d's) crashed first, the test of positions third
        "cached positions off by one",
        "lab-02",
        "kvcache",
        "x = model.tok_emb(idx) + model.pos_emb(torch.arange(P, P + t))",
        "x = model.tok_emb(idx) + model.pos_emb(torch.arange(P + 1, P + 1 + t))",
        "task 3c",
        "return model.lm_head(model.ln_f(x))",  # the logits its positions went into
        first="the positions of three calls: expected",
    ),
]

# the second student walk's mistakes whose screens misled (issue 54): each its own words, no row
MISTAKES += [
    Mistake(  # the wrapper said 'masked by': torch refused the projection, under out's shape
        "merged without the transpose",
        "lab-02",
        "kvcache",
        "out = (A @ V).transpose(1, 2).flatten(2)",
        "out = (A @ V).flatten(2)",
        "task 3b",
        "return attn.proj(out)",
        words="ran with out (2, 4, 16) float32; torch refused it:",
    ),
    Mistake(  # blamed task 3b, which raised on the layer it was handed: 3c's call names it
        "layer 0 for every block",
        "lab-02",
        "kvcache",
        "cached_attention(block.attn, block.ln1(x), cache, layer)",
        "cached_attention(block.attn, block.ln1(x), cache, 0)",
        "task 3c",
        "cached_attention(block.attn, block.ln1(x), cache, 0)",
        first="cache.length after a forward of positions 0 to 3",
        words="each block appends to its own layer",  # walk 5: not "runs through cached_attention"
    ),
    Mistake(  # the targets row ('look at how get_batch cuts y') showed under x's crash
        "x cut at range(B)",
        "step-06",
        "train",
        "x = torch.stack([data[i : i + T] for i in ix])",
        "x = torch.stack([data[i : i + T] for i in range(B)])",
        "task 1",
        "x = torch.stack([data[i : i + T] for i in range(B)])",
    ),
    Mistake(  # the row 'a mask drawn in eval mode' showed: eval scaled, no mask drawn
        "eval mode scales by 1 - p",
        "lab-02",
        "layers",
        "    if not training or p == 0:\n        return x",
        "    if not training:\n        return x * (1 - p)\n    if p == 0:\n        return x",
        "task 2",
        "return x * (1 - p)",
        first="scaled by 1 - p",
    ),
    Mistake(  # walk 3: the check was green; no test had the gradient flow through dropout
        "dropout's output detached",
        "lab-02",
        "layers",
        "    return x * keep / (1 - p)  #",
        "    return (x * keep / (1 - p)).detach()  #",
        "task 2",
        "return (x * keep / (1 - p)).detach()",
        first="no .detach()",
    ),
    Mistake(  # walk 2: Next at the angle line; the wrong entry's column is the odd slice's write
        "sin in both columns",
        "lab-02",
        "layers",
        "    pe[:, 1::2] = torch.cos(angle)",
        "    pe[:, 1::2] = torch.sin(angle)",
        "task 1.1",
        "pe[:, 1::2] = torch.sin(angle)",
    ),
    Mistake(  # walk 3: a typo writes the even columns twice, the odd ones stay 0
        "cos written over the even columns",
        "lab-02",
        "layers",
        "    pe[:, 1::2] = torch.cos(angle)",
        "    pe[:, 0::2] = torch.cos(angle)",
        "task 1.1",
        "pe[:, 0::2] = torch.cos(angle)",
    ),
    Mistake(  # walk 3: next_logits, right, was blamed for indexing the 2-D value it was handed
        "forward_cached returns the last row only",
        "lab-02",
        "kvcache",
        "    return model.lm_head(model.ln_f(x))  #",
        "    return model.lm_head(model.ln_f(x))[:, -1]  #",
        "task 3c",
        "return model.lm_head(model.ln_f(x))[:, -1]",
    ),
    Mistake(  # walk 3: the zero_grad row and Next at the correct zero_grad line
        "the model called with y and x swapped",
        "step-06",
        "train",
        "_, loss = model(x, y)  #",
        "_, loss = model(y, x)  #",
        "task 4",
        "_, loss = model(y, x)",
        first="is not the gradient of this batch's loss",
    ),
    # walk 5: a crash in correct code whose cause is above it; Next named the line that raised
    Mistake(  # a start one too far: the y window one id short, and torch.stack refuses it
        "the starts' bound one too high",
        "step-06",
        "train",
        "ix = torch.randint(len(data) - T, ",
        "ix = torch.randint(len(data) - T + 1, ",
        "task 1",
        "ix = torch.randint(len(data) - T + 1, ",
        "stack expects each tensor to be equal size",
        words="Your line",
    ),
    Mistake(  # the forward under no_grad: backward raises on the next line (walk 9: in the
        # course's words above torch's)
        "the loss made without gradients",
        "step-06",
        "train",
        "    _, loss = model(x, y)  #",
        "    with torch.no_grad():\n        _, loss = model(x, y)  #",
        "task 4",
        "with torch.no_grad():",
        "does not require grad",
        words="the loss was computed without gradients",
    ),
    Mistake(  # warm-up's test one step too long: a warm-up of 0 divides by it in its body
        "warm-up up to and with its last step",
        "step-06",
        "train",
        "if step < cfg.warmup:",
        "if step <= cfg.warmup:",
        "task 3",
        "if step <= cfg.warmup:",
    ),
    # walk 5: cached attention's failures listed every cause; each now names its own mistake
    Mistake(
        "cached scores scaled by the keys' count",
        "lab-02",
        "kvcache",
        "    scores = scores / K.shape[-1] ** 0.5  #",
        "    scores = scores / K.shape[-2] ** 0.5  #",
        "task 3b",
        "scores = scores / K.shape[-2] ** 0.5",
        "one mistake: scaled by sqrt(T), the keys' count",
    ),
    Mistake(
        "cached softmax over the queries",
        "lab-02",
        "kvcache",
        "    A = F.softmax(scores, dim=-1)  #",
        "    A = F.softmax(scores, dim=-2)  #",
        "task 3b",
        "A = F.softmax(scores, dim=-2)",
        "one mistake: the softmax over the queries (dim=-2)",
    ),
    # walk 6: a green LayerNorm mix-up, a foreign row, and Next on the line after the mistake
    Mistake(  # fresh layer norms were all one function: ln1 for ln2 passed
        "the MLP's input normed by ln1",
        "lab-02",
        "kvcache",
        "x = x + block.mlp(block.ln2(x))",
        "x = x + block.mlp(block.ln1(x))",
        "task 3c",
        "x = x + block.mlp(block.ln1(x))",
    ),
    Mistake(  # the mask's rows one too early: Next named the masked_fill below it
        "the cached mask's rows one too early",
        "lab-02",
        "kvcache",
        "mask = attn.heads[0].tril[T - t : T, :T]",
        "mask = attn.heads[0].tril[T - t - 1 : T - 1, :T]",
        "task 3b",
        "mask = attn.heads[0].tril[T - t - 1 : T - 1, :T]",
    ),
    Mistake(  # values stacked on the positions' axis: Next named the append call below it
        "cached values stacked on axis 2",
        "lab-02",
        "kvcache",
        "v = torch.stack([head.value(x) for head in attn.heads], dim=1)",
        "v = torch.stack([head.value(x) for head in attn.heads], dim=2)",
        "task 3b",
        "v = torch.stack([head.value(x) for head in attn.heads], dim=2)",
    ),
    Mistake(  # the angles' table transposed: the rotation's product refuses its shape below
        "positions and frequencies swapped in the outer product",
        "lab-02",
        "layers",
        "angle = torch.outer(positions, frequencies(d_head // 2, d_head))",
        "angle = torch.outer(frequencies(d_head // 2, d_head), positions)",
        "task 1.2",
        "angle = torch.outer(frequencies(d_head // 2, d_head), positions)",
        "must match the size of tensor b",
    ),
    Mistake(  # walk 8: "yours kept only the new" and the only-new row, though the cache held all
        "append returns the new keys only",
        "lab-02",
        "kvcache",
        "return self.keys[layer], self.values[layer]  #",
        "return k, v  #",
        "task 3a",
        "return k, v",
        words="yours returns the 1 new, the cache holds all",
    ),
    Mistake(  # walk 8: torch's NoneType words, the None entry of the list not named
        "the values' first call tested on the keys",
        "lab-02",
        "kvcache",
        "v if self.values[layer] is None else",
        "v if self.keys[layer] is None else",
        "task 3a",
        "v if self.keys[layer] is None else",
        words="self.values[layer] = None",
    ),
    Mistake(  # walk 8: a list of the places attention may go wrong, none of them this
        "every head's keys by head 0's map",
        "lab-02",
        "kvcache",
        "k = torch.stack([head.key(x) for head in attn.heads], dim=1)",
        "k = torch.stack([attn.heads[0].key(x) for head in attn.heads], dim=1)",
        "task 3b",
        "scores = q @ K.transpose(-2, -1)",
        words="cached keys of head 1, 2, 3 are not that head's own key(x)",
    ),
    Mistake(  # walk 8: NaN, and no word of where it came from
        "the softmax over the heads",
        "lab-02",
        "kvcache",
        "A = F.softmax(scores, dim=-1)",
        "A = F.softmax(scores, dim=1)",
        "task 3b",
        "A = F.softmax(scores, dim=1)",
        words="it holds NaN: a softmax met only -inf",
    ),
    Mistake(  # walk 8: the projection's absence never named
        "no output projection in cached attention",
        "lab-02",
        "kvcache",
        "return attn.proj(out)  # (B, t, d)",
        "return out  # (B, t, d)",
        "task 3b",
        "return out",
        words="the output projection proj left out",
    ),
    Mistake(  # walk 8: the refusal said the prefill fed too few, when a step fed two ids
        "each step feeds the last two ids",
        "lab-02",
        "kvcache",
        "new = idx[:, -1:]",
        "new = idx[:, -2:]",
        "task 3d",
        "new = idx[:, -2:]",
        words="it holds more: an id went in twice",
        given=("check_state(model, idx, cache)", "raise ValueError("),
    ),
    Mistake(  # walk 9: every id fed again: the call that fed them, not the line that sliced new
        "next_logits feeds all of idx",
        "lab-02",
        "kvcache",
        "return forward_cached(model, new, cache)[:, -1, :], cache",
        "return forward_cached(model, idx, cache)[:, -1, :], cache",
        "task 3d",
        "return forward_cached(model, idx, cache)",
        given=("check_state(model, idx, cache)", "raise ValueError("),
    ),
    Mistake(  # walk 9: a method named, never called: that line, not the return
        "loss.backward without its call",
        "step-06",
        "train",
        "    loss.backward()",
        "    loss.backward",
        "task 4",
        "loss.backward",
        words="no backward pass filled them",
    ),
    Mistake(  # walk 9: the new keys alone: the scores' shape said, and no row of the t x t mask
        "scores over the new keys only",
        "lab-02",
        "kvcache",
        "scores = q @ K.transpose(-2, -1)",
        "scores = q @ k.transpose(-2, -1)",
        "task 3b",
        "scores = q @ k.transpose(-2, -1)",
        words="your scores cover the t new keys only",
    ),
    Mistake(  # walk 9: a scale rounded (//), told as the scale forgotten: no row now
        "dropout's scale by //",
        "lab-02",
        "layers",
        "    return x * keep / (1 - p)  #",
        "    return x * keep // (1 - p)  #",
        "task 2",
        "return x * keep // (1 - p)",
        first="expected 1.667",
    ),
    Mistake(  # walk 10: green; at p = 0 a mask was drawn, shifting every later one
        "dropout draws a mask at p = 0",
        "lab-02",
        "layers",
        "    if not training or p == 0:",
        "    if not training:",
        "task 2",
        "if not training:",
        first="the generator's next draw",
    ),
    Mistake(  # walk 10: a call left out: Next from the call the message names to the return
        "optimizer.step() left out",
        "step-06",
        "train",
        "    optimizer.step()\n",
        "",
        "task 4",
        "return loss.item()",
    ),
    Mistake(  # walk 10: the if that chose the branch is among the lines Next names
        "a full cache never restarted",
        "lab-02",
        "kvcache",
        "if cache is None or cache.length == model.T_max:  # start",
        "if cache is None:  # start",
        "task 3d",
        "if cache is None:  # start",
        row="generation stops at T_max ids",  # the curated bug's own row
        given=("check_cache(model, idx, cache)", "raise ValueError("),
    ),
    Mistake(  # walk 10: Python's refusal, in the course's words too
        "the layers counted from 1",
        "lab-02",
        "kvcache",
        "    for layer, block in enumerate(model.blocks):",
        "    for layer, block in enumerate(model.blocks, 1):",
        "task 3c",
        "for layer, block in enumerate(model.blocks, 1):",
        words="a list of n entries has indices 0 to n - 1",
        given=("self.keys[layer] = k if", "K, V = cache.append("),  # tasks 3a, 3b: where it raised
    ),
    Mistake(  # walk 10: the last start never drawn: said in numbers, not pytest's set diff
        "the last start never drawn",
        "step-06",
        "train",
        "ix = torch.randint(len(data) - T, (B,), generator=generator)",
        "ix = torch.randint(len(data) - T - 1, (B,), generator=generator)",
        "task 1",
        "ix = torch.randint(len(data) - T - 1",
        first="the largest start of 4000 windows",
    ),
    Mistake(  # walk 11: green; eval mode gave a copy, the contract says x itself
        "dropout copies x in eval mode",
        "lab-02",
        "layers",
        "        return x  # the same tensor",
        "        return x.clone()  # the same tensor",
        "task 2",
        "return x.clone()",
        first="is x: expected True, got False",
    ),
    Mistake(  # walk 11: a None joined by torch.cat, in the course's words
        "the values' None test reads the keys",
        "lab-02",
        "kvcache",
        "            v if self.values[layer] is None else",
        "            v if self.keys[layer] is None else",
        "task 3a",
        "v if self.keys[layer] is None else",
        words="entry 0 of what it joins is None",
    ),
    # walks 10 and 11: Next on the line a value came from, not the lines that put it in place
    Mistake(  # the angle line was named; the writes into the columns' halves are the mistake
        "sin and cos in the columns' halves",
        "lab-02",
        "layers",
        "    pe[:, 0::2] = torch.sin(angle)  # (T, d/2) the even columns\n"
        "    pe[:, 1::2] = torch.cos(angle)",
        "    pe[:, : d // 2] = torch.sin(angle)  # (T, d/2) the even columns\n"
        "    pe[:, d // 2 :] = torch.cos(angle)",
        "task 1.1",
        "pe[:, d // 2 :] = torch.cos(angle)",
        row="every sine in the first d / 2 columns",
    ),
    Mistake(  # the return was named; no line casts cos and sin, so none is sure
        "cos and sin left float64",
        "lab-02",
        "layers",
        "cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)",
        "cos, sin = angle.cos(), angle.sin()",
        "task 1.2",
        "cos, sin = angle.cos(), angle.sin()",
        row="a float32 x comes back float64",
    ),
    Mistake(  # the return was named; the cast run last set the dtype
        "cos and sin cast to float32",
        "lab-02",
        "layers",
        "cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)",
        "cos, sin = angle.cos().float(), angle.sin().float()",
        "task 1.2",
        "cos, sin = angle.cos().float(), angle.sin().float()",
        row="cos and sin cast to one dtype of their own",
    ),
    Mistake(  # the first bug: a float32 mask promotes a bfloat16 x
        "dropout's mask made float32",
        "lab-02",
        "layers",
        "keep = torch.rand(x.shape, generator=generator) >= p",
        "keep = (torch.rand(x.shape, generator=generator) >= p).float()",
        "task 2",
        "keep = (torch.rand(x.shape, generator=generator) >= p).float()",
        row="a bfloat16 or float16 x comes back float32",
    ),
    Mistake(  # walk 11: shown the row of the mask's rows, which were right
        "cached attention over the new keys only",
        "lab-02",
        "kvcache",
        "    K, V = cache.append(layer, k, v)",
        "    cache.append(layer, k, v)\n    K, V = k, v",
        "task 3b",
        "K, V = k, v",
        words="each new query attends only the new keys",
    ),
    Mistake(  # walk 11: told the logits' shape; the cache was never handed back
        "next_logits returns no cache",
        "lab-02",
        "kvcache",
        "forward_cached(model, new, cache)[:, -1, :], cache",
        "forward_cached(model, new, cache)[:, -1, :]",
        "task 3d",
        "forward_cached(model, new, cache)[:, -1, :]",
        first="the type next_logits returns: expected <class 'tuple'>",
        given=("check_state(model, idx, cache)", "raise ValueError("),
    ),
    Mistake(  # walk 11: led by check_eval_mode, whose mean assertion is the mean test's now
        "estimate_loss sums the losses",
        "step-06",
        "train",
        "    return sum(losses) / len(losses)",
        "    return sum(losses)",
        "task 2",
        "return sum(losses)",
        first="the mean of the 3 losses",
    ),
    Mistake(  # walk 9: Next at the keys' line; the pair is returned in the other order
        "append returns (values, keys)",
        "lab-02",
        "kvcache",
        "return self.keys[layer], self.values[layer]  #",
        "return self.values[layer], self.keys[layer]  #",
        "task 3a",
        "return self.values[layer], self.keys[layer]",
        words="it is the values: the members in another order",
    ),
    # walk 12
    Mistake(  # said "in another order" when nothing was swapped
        "append returns the keys twice",
        "lab-02",
        "kvcache",
        "return self.keys[layer], self.values[layer]  #",
        "return self.keys[layer], self.keys[layer]  #",
        "task 3a",
        "return self.keys[layer], self.keys[layer]",
        words="it is the keys again: each member once",
    ),
    Mistake(  # said each head's maps were wrong: k and v went into append swapped
        "append called with v, k",
        "lab-02",
        "kvcache",
        "    K, V = cache.append(layer, k, v)",
        "    K, V = cache.append(layer, v, k)",
        "task 3b",
        "K, V = cache.append(layer, v, k)",
        words="went into append in the other order",
    ),
    Mistake(  # the mean came first; the output was 1-D
        "dropout returns the kept entries only",
        "lab-02",
        "layers",
        "    return x * keep / (1 - p)  #",
        "    return x[keep] / (1 - p)  #",
        "task 2",
        "return x[keep] / (1 - p)",
        first="dropout(x) at p=0.1.shape: expected (200000,)",
    ),
    Mistake(  # Next named the statement's first line, not the line of the mistake
        "the values joined with the keys",
        "lab-02",
        "kvcache",
        "v if self.values[layer] is None else torch.cat((self.values[layer], v), 2)",
        "v if self.values[layer] is None else torch.cat((self.values[layer], k), 2)",
        "task 3a",
        "torch.cat((self.values[layer], k), 2)",
    ),
    Mistake(  # torch's words alone: an end below its start
        "rope's positions end at T",
        "lab-02",
        "layers",
        "positions = torch.arange(start, start + T, dtype=torch.float64)",
        "positions = torch.arange(start, T, dtype=torch.float64)",
        "task 1.2",
        "positions = torch.arange(start, T, dtype=torch.float64)",
        words="here end is below start",
    ),
    Mistake(  # the generic words named the positions, which were right
        "the attention fed x without ln1",
        "lab-02",
        "kvcache",
        "x = x + cached_attention(block.attn, block.ln1(x), cache, layer)",
        "x = x + cached_attention(block.attn, x, cache, layer)",
        "task 3c",
        "x = x + cached_attention(block.attn, x, cache, layer)",
        words="the attention is fed x itself",
    ),
    Mistake(
        "the MLP replaces x",
        "lab-02",
        "kvcache",
        "x = x + block.mlp(block.ln2(x))",
        "x = block.mlp(block.ln2(x))",
        "task 3c",
        "x = block.mlp(block.ln2(x))",
        words="each block's MLP output took the place of x",
    ),
    Mistake(  # "got []" and no word of pos_emb
        "no position embedding",
        "lab-02",
        "kvcache",
        "x = model.tok_emb(idx) + model.pos_emb(torch.arange(P, P + t))  # (B, t, d) + (t, d)",
        "x = model.tok_emb(idx)  # (B, t, d): no positions",
        "task 3c",
        "x = model.tok_emb(idx)  # (B, t, d): no positions",
        words="model.pos_emb was never called",
    ),
    # walk 13
    Mistake(  # Next named the forward's line: the gradient came from a scaled loss's backward
        "backward of the loss divided by B",
        "step-06",
        "train",
        "    loss.backward()",
        "    (loss / x.shape[0]).backward()",
        "task 4",
        "(loss / x.shape[0]).backward()",
        words="loss.backward() ran on a loss scaled by 0.25",
    ),
    # walk 14
    Mistake(  # told the mask was t x t
        "the cached mask transposed",
        "lab-02",
        "kvcache",
        "mask = attn.heads[0].tril[T - t : T, :T]",
        "mask = attn.heads[0].tril[T - t : T, :T].T",
        "task 3b",
        "mask = attn.heads[0].tril[T - t : T, :T].T",
        words="your mask is (P + t) x t, the transpose of the t x (P + t) rows it needs",
    ),
    Mistake(  # first told the smallest start was 1
        "x and y swapped",
        "step-06",
        "train",
        "    return x, y",
        "    return y, x",
        "task 1",
        "return y, x",
        first="x and y swapped",
    ),
    Mistake(  # first a division by zero at warmup = 0, which asks for a guard
        "warm-up through step = warmup",
        "step-06",
        "train",
        "    if step < cfg.warmup:",
        "    if step <= cfg.warmup:",
        "task 3",
        "if step <= cfg.warmup:",
        first="the peak learning rate is",
    ),
    # walk 15
    Mistake(  # the mask's slice named, never T
        "T read as the cache's length",
        "lab-02",
        "kvcache",
        "    T = K.shape[2]",
        "    T = cache.length",
        "task 3b",
        "T = cache.length",
        words="the keys held before this call; T counts every key append returned",
    ),
    Mistake(  # torch's words alone, about line 139
        "the mode kept as the method",
        "step-06",
        "train",
        "    was_training = model.training",
        "    was_training = model.train",
        "task 2",
        "was_training = model.train",
        words="model.train(mode) takes True or False",
    ),
    Mistake(  # green: train_step put the model in eval mode
        "model.eval() in train_step",
        "step-06",
        "train",
        "    _, loss = model(x, y)",
        "    model.eval()\n    _, loss = model(x, y)",
        "task 4",
        "model.eval()",
        first="the model's mode at train_step's forward passes",
    ),
    Mistake(  # Next named the forward's line, and the words a scaled loss only
        "backward run twice on one graph",
        "step-06",
        "train",
        "    loss.backward()\n",
        "    loss.backward(retain_graph=True)\n    loss.backward()\n",
        "task 4",
        "loss.backward()",
        words="loss.backward() ran on a loss 2 times too big, or ran 2 times",
    ),
    Mistake(  # told the gradient was not clipped
        "optimizer.step() twice",
        "step-06",
        "train",
        "    optimizer.step()\n",
        "    optimizer.step()\n    optimizer.step()\n",
        "task 4",
        "optimizer.step()",
        words="optimizer.step() ran twice in one train_step",
    ),
    # walk 16
    Mistake(  # green: the test gave train mode only (its line is also given code, in train())
        "model.train() in train_step",
        "step-06",
        "train",
        "    optimizer.zero_grad(set_to_none=True)",
        "    model.train()\n    optimizer.zero_grad(set_to_none=True)",
        "task 4",
        "model.train()",
        first="the model's mode at train_step's forward passes",
    ),
    Mistake(  # Next said the finally's line raised; nothing raised
        "a return inside the try",
        "step-06",
        "train",
        "            losses = [model(x, y)[1].item() for x, y in batches]\n    finally:\n"
        "        model.train(was_training)  # the next training step needs train mode again\n"
        "    return sum(losses) / len(losses)\n",
        "            for x, y in batches:\n                loss = model(x, y)[1].item()\n"
        "                return loss\n    finally:\n"
        "        model.train(was_training)  # the next training step needs train mode again\n",
        "task 2",
        "return loss",
        first="one per batch",
    ),
    Mistake(  # first a 9th digit, the type cut
        "lr_at by torch.cos",
        "step-06",
        "train",
        "(1 + math.cos(math.pi * p)) / 2",
        "(1 + torch.cos(torch.tensor(math.pi * p))) / 2",
        "task 3",
        "torch.cos",
        words="torch.Tensor, not a float: math's cos",
    ),
    Mistake(  # first an expected value rounded to float32 by the test
        "lr_at by numpy's cos",
        "step-06",
        "train",
        "(1 + math.cos(math.pi * p)) / 2",
        "(1 + __import__('numpy').cos(math.pi * p)) / 2",
        "task 3",
        "numpy",
        first="numpy.float64",
    ),
    Mistake(  # Next named all of train_step; a second failure blamed backward
        "clipped to 1.0, not grad_clip",
        "step-06",
        "train",
        "clip_grad_norm_(model.parameters(), grad_clip)",
        "clip_grad_norm_(model.parameters(), 1.0)",
        "task 4",
        "clip_grad_norm_(model.parameters(), 1.0)",
        words="cut to the norm 1 (clip_grad_norm_'s max_norm is grad_clip)",
    ),
    Mistake(  # Next named all of train_step
        "clipped by the L1 norm",
        "step-06",
        "train",
        "clip_grad_norm_(model.parameters(), grad_clip)",
        "clip_grad_norm_(model.parameters(), grad_clip, norm_type=1)",
        "task 4",
        "norm_type=1",
        words="cut to an L1 norm of grad_clip",
    ),
    Mistake(  # Python's words alone
        "the model called without targets",
        "step-06",
        "train",
        "losses = [model(x, y)[1].item() for x, y in batches]",
        "losses = [model(x)[1].item() for x, y in batches]",
        "task 2",
        "model(x)[1].item()",
        words="model(x)[1] is None here, so it has no .item",
    ),
    Mistake(  # green: x * 0 keeps an inf's NaN
        "x times 0 at p = 1",
        "lab-02",
        "layers",
        "        return torch.zeros_like(x)  #",
        "        return x * 0  #",
        "task 2",
        "return x * 0",
        words="zeros made anew, not x times 0",
    ),
    Mistake(  # blamed on the probability
        "one keep per row",
        "lab-02",
        "layers",
        "keep = torch.rand(x.shape, generator=generator) >= p",
        "keep = torch.rand(x.shape[:-1] + (1,), generator=generator) >= p",
        "task 2",
        "x.shape[:-1] + (1,)",
        words="every entry kept or dropped together",
    ),
    Mistake(  # a foreign row: later keys seen
        "the mask after the softmax",
        "lab-02",
        "kvcache",
        '    scores = scores.masked_fill(mask == 0, float("-inf"))  # (B, h, t, T)\n'
        "    A = F.softmax(scores, dim=-1)",
        "    A = F.softmax(scores, dim=-1)\n    A = A.masked_fill(mask == 0, 0.0)",
        "task 3b",
        "A = A.masked_fill(mask == 0, 0.0)",
        words="the mask applied to the weights after the softmax",
    ),
    Mistake(  # "your mask is t x t" where it was the expected shape
        "a float mask",
        "lab-02",
        "kvcache",
        '    scores = scores.masked_fill(mask == 0, float("-inf"))',
        '    scores = scores.masked_fill(mask, float("-inf"))',
        "task 3b",
        'scores.masked_fill(mask, float("-inf"))',
        words="masked_fill takes a bool mask",
    ),
    Mistake(  # first shown from start=7, the start-ignored row's words
        "rope's frequencies over d_head / 2",
        "lab-02",
        "layers",
        "    angle = torch.outer(positions, frequencies(d_head // 2, d_head))",
        "    angle = torch.outer(positions, frequencies(d_head // 2, d_head // 2))",
        "task 1.2",
        "frequencies(d_head // 2, d_head // 2)",
        first="rope(x, start=0)",
    ),
    # walk 17
    Mistake(  # green: no test asked for B = 1 or T = 1
        "get_batch squeezed",
        "step-06",
        "train",
        "    return x, y\n    # END SOLUTION",
        "    return x.squeeze(), y.squeeze()\n    # END SOLUTION",
        "task 1",
        "return x.squeeze(), y.squeeze()",
        first="get_batch(data, B=1, T=6)'s x.shape: expected (1, 6), got (6,)",
    ),
    Mistake(  # Next on zero_grad, blamed on the order of the calls
        "the loss clamped, not the gradient clipped",
        "step-06",
        "train",
        "    loss.backward()\n    torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)",
        "    loss.clamp(max=grad_clip).backward()",
        "task 4",
        "loss.clamp(max=grad_clip).backward()",
        words="every gradient the backward pass made was zero",
    ),
    Mistake(  # a generic message
        "each parameter clipped on its own",
        "step-06",
        "train",
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)",
        "    for p in model.parameters():\n        torch.nn.utils.clip_grad_norm_(p, grad_clip)",
        "task 4",
        "clip_grad_norm_(p, grad_clip)",
        words="each parameter's gradient cut to grad_clip on its own",
    ),
    Mistake(  # Python's words alone
        "torch.no_grad without its ()",
        "step-06",
        "train",
        "with torch.no_grad():",
        "with torch.no_grad:",
        "task 2",
        "with torch.no_grad:",
        words="a with statement takes an object, not its class",
    ),
    Mistake(  # Python's words alone: UnboundLocalError
        "the return inside the finally",
        "step-06",
        "train",
        "        model.train(was_training)  # the next training step needs train mode again\n"
        "    return sum(losses) / len(losses)\n",
        "        model.train(was_training)  # the next training step needs train mode again\n"
        "        return sum(losses) / len(losses)\n",
        "task 2",
        "return sum(losses) / len(losses)",
        words="losses is read before any line set it on this path",
    ),
    Mistake(  # a foreign "looks like": a model called without targets
        "each .grad zeroed by hand",
        "step-06",
        "train",
        "    optimizer.zero_grad(set_to_none=True)",
        "    for p in model.parameters():\n        p.grad.zero_()",
        "task 4",
        "p.grad.zero_()",
        words="a parameter's .grad is None until a backward pass fills it",
    ),
    Mistake(  # Python's words in the course's test line
        "the windows left as a list",
        "step-06",
        "train",
        "    x = torch.stack([data[i : i + T] for i in ix])",
        "    x = [data[i : i + T] for i in ix]",
        "task 1",
        "x = [data[i : i + T] for i in ix]",
        first="the types of x and y",
    ),
    Mistake(  # green: bfloat16 counts exactly only to 256
        "rope's positions in x's dtype",
        "lab-02",
        "layers",
        "positions = torch.arange(start, start + T, dtype=torch.float64)",
        "positions = torch.arange(start, start + T, dtype=x.dtype)",
        "task 1.2",
        "dtype=x.dtype)",
        first="rope(bfloat16 x, start=3000)",
    ),
    Mistake(  # told it drew from something other than the generator
        "dropout reseeds its generator",
        "lab-02",
        "layers",
        "    keep = torch.rand(x.shape, generator=generator",
        "    generator.manual_seed(0)\n    keep = torch.rand(x.shape, generator=generator",
        "task 2",
        "generator.manual_seed(0)",
        words="dropout seeds the generator it is given",
    ),
    Mistake(  # told the softmax ran over the heads
        "the blocked scores filled with +inf",
        "lab-02",
        "kvcache",
        'masked_fill(mask == 0, float("-inf"))',
        'masked_fill(mask == 0, float("inf"))',
        "task 3b",
        'float("inf")',
        words="filled with +inf, not -inf",
    ),
    Mistake(  # the shape of K shown, not K.T's
        "K.T for the keys' transpose",
        "lab-02",
        "kvcache",
        "scores = q @ K.transpose(-2, -1)",
        "scores = q @ K.T",
        "task 3b",
        "scores = q @ K.T",
        words="K.T (8, 4, 4, 2)",
    ),
    Mistake(  # torch's words alone: index out of range in self
        "the ids as positions",
        "lab-02",
        "kvcache",
        "model.pos_emb(torch.arange(P, P + t))",
        "model.pos_emb(idx)",
        "task 3c",
        "model.pos_emb(idx)",
        words="an nn.Embedding met an id past its rows",
    ),
    Mistake(  # torch's words alone: normalized_shape
        "the head before the last norm",
        "lab-02",
        "kvcache",
        "return model.lm_head(model.ln_f(x))",
        "return model.ln_f(model.lm_head(x))",
        "task 3c",
        "model.ln_f(model.lm_head(x))",
        words="a LayerNorm over 32 features",
    ),
    Mistake(  # torch's words about a tensor's truth
        "the cache tested by its truth",
        "lab-02",
        "kvcache",
        "k if self.keys[layer] is None else torch.cat((self.keys[layer], k), 2)",
        "torch.cat((self.keys[layer], k), 2) if self.keys[layer] else k",
        "task 3a",
        "if self.keys[layer] else k",
        words="an if (or and, or, not) met a tensor of several entries",
    ),
    # walk 18
    Mistake(  # task 2 done, task 4 blamed
        "estimate_loss freezes the weights",
        "step-06",
        "train",
        "    model.eval()  # dropout",
        "    model.eval()  # dropout\n    model.requires_grad_(False)  #",
        "task 2",
        "model.requires_grad_(False)",
        words="no longer requires grad",
    ),
    Mistake(  # blamed on a loss 773073600 times too big
        "a clip that always rescales",
        "step-06",
        "train",
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)",
        "    norm = torch.sqrt(sum((p.grad**2).sum() for p in model.parameters()))\n"
        "    for p in model.parameters():\n        p.grad *= grad_clip / norm",
        "task 4",
        "p.grad *= grad_clip / norm",
        words="it was scaled up to it",
    ),
    Mistake(  # torch's warning alone, with its C++ path
        "the loss clipped by clip_grad_norm_",
        "step-06",
        "train",
        "clip_grad_norm_(model.parameters(), grad_clip)",
        "clip_grad_norm_(loss, grad_clip)",
        "task 4",
        "clip_grad_norm_(loss, grad_clip)",
        words="holds no .grad: what reads gradients",
    ),
    Mistake(  # told the scores cover the new keys only
        "K times q's transpose",
        "lab-02",
        "kvcache",
        "scores = q @ K.transpose(-2, -1)",
        "scores = K @ q.transpose(-2, -1)",
        "task 3b",
        "scores = K @ q.transpose(-2, -1)",
        words="keys by queries",
    ),
    Mistake(  # a row of position 0 under positions that start at 2
        "P as the batch's length",
        "lab-02",
        "kvcache",
        "P = cache.length  #",
        "P = len(cache.keys[0]) if cache.keys[0] is not None else 0  #",
        "task 3c",
        "P = len(cache.keys[0])",
        words="the later calls both start at 2",
    ),
    Mistake(  # told the keys and values went into append in the other order
        "the values made by the key maps",
        "lab-02",
        "kvcache",
        "v = torch.stack([head.value(x) for head in attn.heads], dim=1)",
        "v = torch.stack([head.key(x) for head in attn.heads], dim=1)",
        "task 3b",
        "v = torch.stack([head.key(x)",
        words="v is made with head.key",
    ),
    Mistake(  # green, and the reference's own draw: bfloat16 has too few values
        "the keep drawn in x's dtype",
        "lab-02",
        "layers",
        "keep = torch.rand(x.shape, generator=generator) >= p",
        "keep = torch.rand(x.shape, generator=generator, dtype=x.dtype) >= p",
        "task 2",
        "dtype=x.dtype) >= p",
        first="share of zeros at p=0.99, x in bfloat16",
    ),
    # walk 19
    Mistake(  # green: the flag set, the submodules left in eval mode
        "the mode given back as a flag",
        "step-06",
        "train",
        "        model.train(was_training)  # the next training step needs train mode again",
        "        model.training = was_training  # the next training step needs train mode again",
        "task 2",
        "model.training = was_training",
        words="model.training = ... the top's flag alone",
    ),
    Mistake(  # told the smallest start was not 0
        "one start for the whole batch",
        "step-06",
        "train",
        "torch.randint(len(data) - T, (B,), generator=generator)",
        "torch.randint(len(data) - T, (1,), generator=generator).repeat(B)",
        "task 1",
        ".repeat(B)",
        words="each of the B rows draws its own start",
    ),
    Mistake(  # a warm-up over steps read as the warm-up to min_lr
        "the warm-up divided by steps",
        "step-06",
        "train",
        "cfg.lr * (step + 1) / cfg.warmup",
        "cfg.lr * (step + 1) / cfg.steps",
        "task 3",
        "cfg.lr * (step + 1) / cfg.steps",
    ),
    Mistake(  # 3a done, next_logits blamed
        "append's keys in float32",
        "lab-02",
        "kvcache",
        "self.keys[layer] = k if self.keys[layer] is None else torch.cat((self.keys[layer], k), 2)",
        "self.keys[layer] = k.float() if self.keys[layer] is None else "
        "torch.cat((self.keys[layer], k.float()), 2)",
        "task 3a",
        "k.float()",
        first="the dtype of the keys after 2 positions",
    ),
]


def screen_of(mistake: Mistake, tmp: Path) -> tuple[str, list[str]]:
    """(the check's screen on the step caught up with the mistake, the changed file's lines)."""
    steps = pristine(step_names(), tmp)  # lab-02 reads Step 5's reference
    starter = steps / mistake.step / "starter"
    shutil.rmtree(starter)
    shutil.copytree(steps / mistake.step / "solution", starter)
    path = starter / f"{mistake.module}.py"
    bug = Bug(mistake.name, "", "", old=mistake.old, new=mistake.new)
    path.write_text(committed(path.read_text(encoding="utf-8"), bug, path.name), encoding="utf-8")
    pixi = {"PIXI_PROJECT_ROOT": str(REPO_ROOT)}
    done = check_in_a_child(steps, [str(steps / mistake.step), "--impl", "starter"], env=pixi)
    return done.stdout + done.stderr, path.read_text(encoding="utf-8").splitlines()


def first_failure(screen: str) -> list[str]:
    """The lines of the first failure shown, up to its symptom row or the next failure."""
    lines = screen.split("(shortened; -v shows all):\n", 1)[-1].splitlines()
    if lines and lines[0].startswith("(a warning"):
        lines = lines[1:]
    end = next((i for i, line in enumerate(lines[1:], 1) if not line.startswith(" ")), len(lines))
    return lines[:end]


@pytest.mark.process
@pytest.mark.slow  # the check of a step in a child: about 3 s each
@pytest.mark.parametrize("mistake", MISTAKES, ids=[m.name for m in MISTAKES])
def test_the_first_screen_names_the_mistakes_todo_and_its_own_line(mistake, tmp_path):
    screen, lines = screen_of(mistake, tmp_path)
    todo = re.escape(f"TODO({mistake.step} {mistake.task}")
    where = re.search(
        rf"^Next: {todo}[^)]*\) at \S+/{mistake.module}\.py:(\d+)(?:-(\d+))?$", screen, re.M
    )
    assert where, f"expected Next: TODO({mistake.step} {mistake.task}), got:\n{screen}"
    # one line, or the lines that made a returned value when no one of them is sure (first-last)
    first_line, last_line = int(where[1]), int(where[2] or where[1])
    named_lines = range(first_line, last_line + 1)
    line = next((n for n in named_lines if mistake.at in lines[n - 1]), None)
    assert line, f"expected Next at {mistake.at!r}, got lines {list(named_lines)}:\n{screen}"
    if mistake.at in mistake.new:  # the line the mistake wrote, not a twin of it elsewhere
        start = "\n".join(lines).index(mistake.new.strip("\n")[:60]) if mistake.new else 0
        top = "\n".join(lines)[:start].count("\n") + 1
        assert top <= line <= top + mistake.new.count("\n"), (
            f"expected Next in the mistake:\n{screen}"
        )
    first = first_failure(screen)
    head = " ".join(x.strip() for x in first[:3])  # its test's line, wrapped under a long id
    assert re.search(rf"\({todo}", head), f"expected the first failure its own:\n{screen}"
    named = re.findall(rf"/{mistake.module}\.py:(\d+)", "\n".join(first))
    given = {n for n, code in enumerate(lines, 1) if any(g in code for g in mistake.given)}
    assert all(int(n) in {*named_lines, *given} for n in named), (
        f"expected the first failure at {line}:\n{screen}"
    )
    assert mistake.first in "\n".join(first), f"expected {mistake.first!r} first:\n{screen}"
    said = " ".join(line.strip() for line in first)
    assert mistake.words in said, f"expected {mistake.words!r} in the course's words:\n{screen}"
    others = re.findall(r"^\[!\] TODO\(\S+ ([^:)]+)", screen, re.M)
    assert others == [mistake.task], f"expected no other TODO blamed, got {others}:\n{screen}"
    flat = " ".join(line.strip() for line in screen.splitlines())  # the screen's wraps undone
    rows = [row.breaks for row in course_step(mistake.step).bugs() if row.breaks in flat]
    assert all(mistake.row and mistake.row in row for row in rows), f"a foreign row:\n{screen}"


@pytest.mark.process
@pytest.mark.slow  # the check of a step in a child
def test_positions_read_from_pos_emb_weight_pass(tmp_path):
    """Walk 15: rows of pos_emb.weight are the same positions as a call of pos_emb (a test once
    watched the call alone, and failed this correct code)."""
    same = Mistake("pos_emb's rows", "lab-02", "kvcache", "model.pos_emb(torch.arange(P, P + t))",
                   "model.pos_emb.weight[P : P + t]", "task 3c", "")  # fmt: skip
    screen, _ = screen_of(same, tmp_path)
    assert "7 of 7 required TODOs done" in screen and "Next:" not in screen, screen
