"""Bodies written to pass a test rather than to solve its TODO (red teams 19 and 21): each fakes its
result and makes the test's expected value match it, by zeroing an input the test reuses, swapping
a module of the model for one that answers alike, or rebinding a function of its own module the
test builds its expected value with. The tests make their expected values before the call, or hand
the call copies, compare the model's modules by identity, and fail a test whose module was rebound
while it ran (common.loader.kept_whole): each forger fails."""

import pytest

from common.course import course_step
from common.course.bugs import Bug, broken_copy
from tools.symptoms import failures

SWAP_LN_F = (  # ln_f replaced by a LayerNorm of the same weights that flattens every row
    "    norm = torch.nn.LayerNorm(x.shape[-1], eps=1e30).to(x.dtype)\n"
    "    with torch.no_grad():\n"
    "        for new, old in zip(norm.parameters(), model.ln_f.parameters()):\n"
    "            new.copy_(old)\n"
    "    model.ln_f = norm\n"
)
FORGERS = [  # (module, a bug's old and new in the reference, a test it must fail)
    ("layers", "    return turned.flatten(-2)  #", "    x.zero_()\n    return x  #",
     "test_rope_at_position_0_is_the_identity"),
    ("layers", "    return turned.flatten(-2)  #", "    x.zero_()\n    return x  #",
     "test_rope_keeps_every_rows_norm"),
    ("kvcache", "    return attn.proj(out)  #", "    x.zero_()\n    return torch.zeros_like(x)  #",
     "test_cached_attention_of_float64_x_stays_float64"),
    ("kvcache", "    return attn.proj(out)  #", "    x.zero_()\n    return torch.zeros_like(x)  #",
     "test_cached_attention_of_a_prefill_is_step_5_causal_attention"),
    ("kvcache", "        return self.keys[layer], self.values[layer]  #",
     "        k.zero_()\n        v.zero_()\n        return self.keys[layer], self.values[layer]  #",
     "test_each_layer_keeps_its_own_keys_and_values"),
    ("kvcache", "    return model.lm_head(model.ln_f(x))  #",
     SWAP_LN_F + "    return model.lm_head(model.ln_f(torch.zeros_like(x)))  #",
     "test_the_prefill_gives_the_uncached_logits"),
    ("kvcache", "    return forward_cached(model, new, cache)[:, -1, :], cache  #",
     "    global forward_cached\n    forward_cached = (lambda f: lambda *a: f(*a))(forward_cached)\n"
     "    return forward_cached(model, new, cache)[:, -1, :], cache  #",
     "test_a_full_cache_is_rebuilt_from_the_window_not_slid"),
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(("module", "old", "new", "test"), FORGERS, ids=[f[3] for f in FORGERS])
def test_a_forged_body_fails_the_test_it_aimed_at(module, old, new, test):
    step = course_step("lab-02")
    forger = Bug(test, "a forged body", "", old=old, new=new)
    copy = broken_copy(step.solution, module, forger)
    failed = failures("lab-02", module, copy, [test])
    assert any(f"::{test}" in nodeid for nodeid in failed), f"expected {test} to fail, got {failed}"
