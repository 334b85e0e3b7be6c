"""lab-02 task 3, the KV cache: cached logits and ids against Step 5's uncached GPT, the cache's
size, the positions of new ids, the rebuild past T_max; and bad input.

Tests marked `given` call only code the starter gives (the cache's constructor, the input checks).
"""

import copy
import re
import traceback
from pathlib import Path

import pytest
import torch

from common import counted, expect
from common.course import course_step
from common.loader import kept_whole, load, load_file, reference
from common.run.experiment import Context
from common.seeding import generator, seed_all

V, T_MAX, D, H, N_LAYER = 16, 8, 32, 4, 2  # a small GPT: d_head = 8; T_max small, to pass it
B = 2
# Logits after n_layer blocks, the cached run's matrices of another shape than the uncached run's,
# so summed in another order: a few rounding units of 1 (2**-23 ~ 1.2e-7) per product, added up.
LOGITS_TOL = 1e-5


@pytest.fixture
def kv(impl):
    """The kvcache module under test (starter or solution, per --impl, or an override), whose own
    functions and classes its code leaves as they are (the tests build caches with them)."""
    with kept_whole(load("lab-02", "kvcache", impl)) as module:
        yield module


def model_of(kv, seed=0, T_max=T_MAX, dtype=torch.float32):
    """Step 5's GPT, seeded, in eval mode (it has no dropout: eval changes nothing, but says so);
    each layer norm with weights of its own, as training leaves them (fresh ones are all the same
    function: ln1 used for ln2 would pass)."""
    seed_all(seed)
    model = GPT5.GPT(V, T_max, D, H, N_LAYER)  # Step 5's own class, whatever kvcache.py calls GPT
    g = generator(seed + 100)
    with torch.no_grad():
        for norm in (m for m in model.modules() if isinstance(m, torch.nn.LayerNorm)):
            norm.weight.copy_(1 + 0.5 * torch.randn(norm.weight.shape, generator=g))  # (d,)
            norm.bias.copy_(0.5 * torch.randn(norm.bias.shape, generator=g))  # (d,)
    model = model.to(dtype).eval()
    WEIGHTS[id(model)] = (model, state_of(model))
    return model


def state_of(model, copied: bool = True) -> dict:
    """Each parameter and buffer (the causal masks) by name (`copied`, or as they are now), and
    each module's type and own attributes: what an expected value computed on the model reads."""
    tensors = {n: t.detach() for n, t in [*model.named_parameters(), *model.named_buffers()]}
    tensors = {n: t.clone() for n, t in tensors.items()} if copied else tensors
    modules = {n: (type(m), id(m), settings(m)) for n, m in model.named_modules()}
    return {"tensors": tensors, "modules": modules}


def one_of(module_state) -> str:
    """Which module a state_of entry is: its type and the object (another one of the type too)."""
    if module_state is None:
        return "none"
    kind, number, _ = module_state
    return f"a {kind.__name__}, object {number:#x}"


PLAIN = (bool, int, float, str, tuple, torch.dtype, torch.Size)  # a setting compared by value


def settings(module) -> dict:
    """A module's own attributes (its tensors and children aside): a LayerNorm's eps, a mode,
    each by value when plain, a dict (its hooks) by what it holds, else by identity (a method)."""
    return {
        k: v
        if isinstance(v, PLAIN)
        else tuple((key, id(x)) for key, x in v.items())
        if isinstance(v, dict)
        else frozenset(v)
        if isinstance(v, set)
        else id(v)
        for k, v in vars(module).items()  # a tensor or None: what a forward keeps (a head's A)
        if k not in ("_parameters", "_buffers", "_modules")
        and not isinstance(v, torch.Tensor | None)
    }


def same_state(now: dict, made: dict) -> bool:
    """Whether two state_of's hold the same modules and the same tensors (dtype, shape, values)."""
    a, b = now["tensors"], made["tensors"]
    return (
        now["modules"] == made["modules"]
        and a.keys() == b.keys()
        and all(
            a[n].dtype == t.dtype and a[n].shape == t.shape and torch.equal(a[n], t)
            for n, t in b.items()
        )
    )


GPT5 = reference("step-05", "gpt")
WEIGHTS = {}  # id(model) -> (the model, its weights as model_of made them)


def unchanged(model) -> None:
    """A model model_of made, as it made it (weights, masks, modules): an expected value computed
    after the student's call is Step 5's only if the call changed none of them."""
    made, now = WEIGHTS[id(model)][1], state_of(model, copied=False)
    if same_state(now, made):  # the common case, in one pass: each judge below only when not
        return
    why = "the cache reads the model's weights and masks and changes none of them"
    for name in {**made["modules"], **now["modules"]}:  # a module replaced, added or given a method
        was, now_ = made["modules"].get(name), now["modules"].get(name)
        module = f"the model's module {name or 'model'} after your calls"
        expect.equal(module, one_of(now_), one_of(was), why)
        for key in sorted({**was[2], **now_[2]}, key=str):  # a setting: eps, a method set on it
            expect.equal(f"{module}: its {key}", now_[2].get(key, "unset"),
                         was[2].get(key, "unset"), why)  # fmt: skip
    expect.equal("the names of the model's weights and buffers after your calls",
                 sorted(now["tensors"]), sorted(made["tensors"]), why)  # fmt: skip
    for name, tensor in made["tensors"].items():
        expect.equal(f"the model's {name} after your calls", now["tensors"][name], tensor, why)


def ids(shape, seed=1):
    """Seeded token ids of `shape` in [0, V)."""
    return torch.randint(V, shape, generator=generator(seed))


def uncached_next(model, idx):
    """Step 5's next-token logits (B, V): the model on the last T_max ids, its last row."""
    unchanged(model)
    return model(idx[:, -model.T_max :])[0][:, -1, :]


def worst(got, expected):
    """The largest |got - expected|, a float: the figure the parity tests print."""
    return (got.double() - expected.double()).abs().max().item()


def moved(cache, layer: int, a: int, b: int) -> str:
    """'' unless the keys a layer's cache held had another shape than its last call left: then
    that (the K its append handed back, changed in place after it); or, when this call's keys
    joined and its values did not, that the new values are not laid out as the keys are."""
    keys = cache.keys[layer] if layer < len(cache.keys) else None
    values = cache.values[layer] if layer < len(cache.values) else None
    left = (B, H, a, D // H)  # what the calls before held: positions 0 to a - 1
    if not isinstance(keys, torch.Tensor) or tuple(keys.shape) == left:
        return ""
    if tuple(keys.shape) == (B, H, b, D // H) and isinstance(values, torch.Tensor):
        return (
            f": this call's keys joined the cache, (B, h, {b}, d_head), and its values did not "
            f"join the {tuple(values.shape)} held: the new values are not laid out as the new "
            "keys are, (B, h, t, d_head), the heads on axis 1 (stacked on another axis?)"
        )
    return (
        f": the cache held layer {layer}'s keys as {tuple(keys.shape)}, not {left} as its last "
        "call should have left them: stored in another layout, or the K its append returned was "
        "changed in place after it (transpose_: the cache holds that same tensor)"
    )


def refused(what: str, expected: str, exc: RuntimeError, then: str = "") -> AssertionError:
    """What was expected where torch refused, with the student's line that called it (and `then`,
    what the refusal tells of the code)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "starter" in Path(f.filename).parts
              or "solution" in Path(f.filename).parts]  # fmt: skip
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    said = str(exc).split(". ")[0].splitlines()[0]
    return AssertionError(f"{what}: expected {expected}, got torch refusing{where} ({said}){then}")


def masking_said(exc: RuntimeError, file: str, t: int, T: int) -> str:
    """What the student's refused mask line ran with (its tensors' shapes), and which side is
    wrong: scores over the t new keys only, or a mask of t columns, the t x t one."""
    tb, found = exc.__traceback__, None
    while tb:  # the student's innermost frame: its line and its locals
        found = tb if Path(tb.tb_frame.f_code.co_filename) == Path(file) else found
        tb = tb.tb_next
    if found is None:
        return ""
    line = traceback.extract_tb(found, limit=1)[0].line or ""
    local = found.tb_frame.f_locals
    shapes = {n: tuple(v.shape) for n in dict.fromkeys(re.findall(r"[A-Za-z_]\w*", line))
              if isinstance(v := local.get(n), torch.Tensor)}  # fmt: skip
    said = "; your line ran with " + ", ".join(f"{n} {s}" for n, s in shapes.items())
    scores = next((s for s in shapes.values() if len(s) == 4), None)
    sizes = re.search(r"tensor a \((\d+)\) must match the size of tensor b \((\d+)\)", str(exc))
    columns = [int(n) for n in sizes.groups() if scores and int(n) != scores[-1]] if sizes else []
    if scores and scores[-2:] == (T, t) != (t, T):
        return said + (
            ": your scores are (P + t) x t, keys by queries (K times q's transpose); q times K's "
            "transpose gives a row per new query, t x (P + t)"
        )
    if scores and scores[-1] == t != T:
        return (
            said
            + ": your scores cover the t new keys only; they need all P + t, the keys append returned"
        )
    masks = [s for s in shapes.values() if len(s) == 2]  # (rows, columns) of the line's masks
    if (T, t) in masks and T != t:
        return said + ": your mask is (P + t) x t, the transpose of the t x (P + t) rows it needs"
    if "boolean masks" in str(exc):  # the shapes may be right: the mask's dtype is not
        return said + (
            ": masked_fill takes a bool mask, True where it fills; tril holds 1.0 and 0.0: "
            "compare it (== 0) for the keys to block"
        )
    if (t, t) in masks and t != T:
        return said + ": your mask is t x t"
    if any(m[1] == T - t for m in masks):  # as many columns as keys were held: a stale T
        return said + (
            f": your mask has P = {T - t} columns, the keys held before this call; T counts every "
            "key append returned, P + t"
        )
    if columns[:1] == [t]:  # a t x t mask or a transposed one: both have t columns
        return said + ": your mask has t columns, where the scores have P + t (one per key)"
    return said if shapes else ""


AXES = ("B", "h", "t", "d_head")  # the axes of keys and values


def joined_along(exc: RuntimeError) -> str:
    """The axis a refused torch.cat joined on, in words ("" when torch names none): a join on the
    heads and one on d_head are two bugs, each with its own fix."""
    found = re.search(r"except in dimension (\d+)", str(exc))
    if not found or int(found[1]) >= len(AXES):
        return ""
    return f": joined along axis {found[1]} ({AXES[int(found[1])]}), not along the positions"


def appended(cache, layer: int, k, v, held: int):
    """cache.append(layer, k, v), its result checked: the pair (keys, values), each (B, h, P + t, d_head)."""
    b, h, t, d_head = k.shape
    want = (b, h, held + t, d_head)
    what = f"append of {counted(t, 'new position')} to layer {layer}, which holds {held}"
    before = (list(cache.keys), list(cache.values))  # as append found them: a probe's start
    try:
        pair = cache.append(layer, k.clone(), v.clone())  # k and v stay the test's, as made
    except NotImplementedError:  # a TODO not written yet: the check names it
        raise
    except RuntimeError as exc:
        if "Boolean value of Tensor" in str(exc):  # no shape's: the check's words say what it is
            raise
        expected = f"keys and values of shape {want}, the positions on axis 2"
        raise refused(what, expected, exc, joined_along(exc)) from None
    if not (isinstance(pair, tuple | list) and len(pair) == 2):
        none = "a function that ends without a return gives None" if pair is None else ""
        expect.fail(what, "the pair (keys, values)", pair, none)
    for member, (name, got) in enumerate(zip(("keys", "values"), pair, strict=True)):
        kept = positions(getattr(cache, name, None), layer)  # what the cache holds after it
        why = positions_said(got, held, t, kept)
        if (
            held
            and positions([got], 0) == t
            and by_length(cache, before, layer, k, v, held + t, member)
        ):
            why = (f": this layer held {held}, but the last layer holds none yet, so cache.length "
                   "(the last layer's count) is 0 here: whether a layer holds anything is its own "
                   "entry (None or not), not cache.length")  # fmt: skip
        expect.shape(f"{what}: its {name}", got, want, "(B, h, P + t, d_head)" + why)
    return tuple(pair)


def by_length(
    cache, earlier: tuple[list, list], layer: int, k, v, want: int, member: int = 0
) -> bool:
    """Whether append kept only the new positions because the last layer held none (it decided
    by cache.length): given that layer the same positions, the same append keeps all `want` of
    its `member` (0 keys, 1 values). `earlier`: the cache's lists as that append found them."""
    keys, values = earlier
    last = len(keys) - 1
    if positions(keys, last) is not None or layer == last:
        return False
    probe = copy.copy(cache)  # its own lists, the last layer holding what `layer` held
    probe.keys, probe.values = list(keys), list(values)
    probe.keys[last], probe.values[last] = keys[layer], values[layer]
    try:
        return positions([probe.append(layer, k, v)[member]], 0) == want
    except Exception:  # noqa: BLE001 - a probe: any failure means "not this bug"
        return False


def positions(held, layer: int) -> int | None:
    """The positions a cache's list of tensors holds at a layer (axis 2), or None if it has none."""
    got = held[layer] if isinstance(held, list) and layer < len(held) else None
    return got.shape[2] if isinstance(got, torch.Tensor) and got.dim() == 4 else None


def twice_said(held: list, fed: int) -> str:
    """'' unless every layer listed holds more positions than were fed: then that append ran
    more than once for one forward."""
    if not held or not all(isinstance(n, int) and n > fed for n in held):
        return ""
    return (
        f"the layers' caches hold {held} positions where {fed} were fed: the new keys joined the "
        "cache more than once (append called twice in one cached_attention?)"
    )


def positions_said(got, held: int, t: int, kept: int | None = None) -> str:
    """What the positions axis of append's result shows: only the new kept, or more than given."""
    came = positions([got], 0)
    if held and came == t and kept == held + t:  # the cache is right; what it returns is not
        return f": the held positions, then the new; yours returns the {t} new, the cache holds all"
    if came is None and kept == held + t:
        return (
            ": the cache holds them, but yours returns another layer's or no tensor: the pair "
            "of the layer appended to"
        )
    if held and came == t:
        return f": the held positions, then the new; yours kept only the {t} new"
    if came is not None and came > held + t:
        return f": {held} held + {t} new = {held + t} positions, yours holds {came}"
    return ": the held positions, then the new ones"


# --- task 3a: the cache keeps what it is given ------------------------------------------------


@pytest.mark.todo("task 3a")
@pytest.mark.core  # its trap: only the new keys kept
def test_append_joins_the_new_positions_after_the_held_ones(kv):
    cache = kv.KVCache(model_of(kv), B)
    k1, v1, k2, v2 = (
        torch.randn(B, H, t, D // H, generator=generator(s))
        for s, t in ((1, 3), (2, 3), (3, 1), (4, 1))
    )
    got = appended(cache, 0, k1, v1, held=0)
    expect.members("append's first result", got, (k1, v1), ("keys", "values"))
    keys, values = appended(cache, 0, k2, v2, held=3)
    expect.equal("keys after two appends", keys, torch.cat((k1, k2), dim=2), "old, then new")
    expect.equal("values after two appends", values, torch.cat((v1, v2), dim=2),
                 "old, then new, as the keys")  # fmt: skip
    expect.equal("cache.keys[0]", cache.keys[0], keys, "the cache keeps what append returns")
    expect.equal("cache.keys[1]", cache.keys[1], None, "another layer's keys are its own")


@pytest.mark.todo("task 3a")
def test_append_keeps_the_dtype_of_its_keys_and_values(kv):
    cache = kv.KVCache(model_of(kv, dtype=torch.float64), B)  # (B, h, t, d_head) float64 below
    k, v = (
        torch.randn(B, H, 2, D // H, generator=generator(s), dtype=torch.float64) for s in (5, 6)
    )
    for held in (0, 2):  # the first append, then one after it
        for name, got in zip(("keys", "values"), appended(cache, 0, k, v, held=held), strict=True):
            expect.equal(f"the dtype of the {name} after {held + 2} positions", got.dtype,
                         torch.float64, "as k and v came: no cast in append")  # fmt: skip


@pytest.mark.todo("task 3a")
@pytest.mark.core  # its property: the handout's count of numbers
def test_appends_of_T_positions_hold_2_n_layer_B_h_T_d_head_numbers(kv):
    cache = kv.KVCache(model_of(kv), B)
    held = 0
    for t in (3, 2, 1):  # a prefill of 3, then 2, then 1: T = 6
        for layer in range(N_LAYER):
            k, v = (torch.randn(B, H, t, D // H, generator=generator(t + s)) for s in (0, 10))
            keys, values = appended(cache, layer, k, v, held)  # expected against got, in words
        held += t
    expect.shape("the last layer's keys", keys, (B, H, 6, D // H), "(B, h, P + t, d_head)")
    expect.equal("cache.length", cache.length, 6, "the positions held")
    expect.equal("cache.numel()", cache.numel(), kv.cache_numbers(N_LAYER, B, H, 6, D // H))


@pytest.mark.todo("task 3a")
def test_each_layer_keeps_its_own_keys_and_values(kv):
    cache = kv.KVCache(model_of(kv), B)
    made = {
        (layer, n): tuple(torch.randn(B, H, 2, D // H, generator=generator(9 * layer + 2 * n + s))
                          for s in (0, 1))
        for layer in range(N_LAYER) for n in range(2)
    }  # fmt: skip
    for n in range(2):
        for layer in reversed(range(N_LAYER)):  # the last layer first: no layer is the default
            cache.append(layer, *(t.clone() for t in made[(layer, n)]))  # made: kept for the end
    for layer in range(N_LAYER):
        (k0, v0), (k1, v1) = made[(layer, 0)], made[(layer, 1)]
        expect.equal(f"cache.keys[{layer}]", cache.keys[layer], torch.cat((k0, k1), dim=2))
        expect.equal(f"cache.values[{layer}]", cache.values[layer], torch.cat((v0, v1), dim=2),
                     "the values, not the keys, in the values' list")  # fmt: skip


# --- task 3b: cached attention is Step 5's attention ------------------------------------------


LAST = N_LAYER - 1  # the last layer: cache.length reads it, as the handout's KVCache says


def attention_inputs(kv):
    """The model and the 7 positions x (B, 7, d) every cached attention run is fed."""
    return model_of(kv), torch.randn(B, 7, D, generator=generator(5))


def cached_attention_run(kv, pieces):
    """Step 5's attention of every layer on the same 7 positions, and the cached attention fed
    them in `pieces`, layer after layer as a forward does (so cache.length is what a forward
    sees); each result checked for its shape, and torch's refusals said in words."""
    model, x = attention_inputs(kv)  # x: (B, 7, d)
    with torch.no_grad():  # before any call of the student's: nothing it does can reach it
        expected = torch.stack([block.attn(x) for block in model.blocks])  # (n_layer, B, 7, d)
    cache = kv.KVCache(model, B)
    got = [[] for _ in model.blocks]  # per layer, the (B, b - a, d) of each piece
    with torch.no_grad():
        for a, b in pieces:  # positions a to b - 1 are new, a are held
            for i, block in enumerate(model.blocks):  # layer i
                what = f"cached_attention of positions {a} to {b - 1} in layer {i}, {a} held"
                try:
                    out = kv.cached_attention(
                        block.attn, x[:, a:b].clone(), cache, i
                    )  # (B, b - a, d)
                except NotImplementedError:  # a TODO not written yet: the check names it
                    raise
                except RuntimeError as exc:
                    frames = traceback.extract_tb(exc.__traceback__)
                    if any(f.name == "append" for f in frames):
                        held = f"keys and values {(B, H, b, D // H)}, the positions on axis 2"
                        raise refused(
                            f"{what}: its append", held, exc, moved(cache, i, a, b)
                        ) from None
                    if twice := twice_said([positions(cache.keys, i)], b):
                        raise refused(what, f"layer {i}'s cache to hold {b} positions", exc,
                                      f": {twice}") from None  # fmt: skip
                    theirs = [f for f in frames if Path(f.filename) == Path(kv.__file__)]
                    if not theirs or not re.search(r"mask|tril", theirs[-1].line or ""):
                        raise  # not the mask's line: the check shows the line and its shapes
                    mask = f"scores (B, h, t, P + t) = {(B, H, b - a, b)} masked by ({b - a}, {b})"
                    rows = "rows P to P + t - 1 of the causal mask, P what this layer held"
                    then = masking_said(exc, kv.__file__, b - a, b)
                    raise refused(what, f"{mask}: {rows}", exc, then) from None
                expect.shape(what, out, (B, b - a, D), "(B, t, d): one row per new position")
                got[i].append(out)
        unchanged(model)  # the later layers and tests read the same weights and masks
        return torch.stack([torch.cat(g, dim=1) for g in got]), expected, cache


@pytest.mark.todo("task 3b")
def test_cached_attention_of_a_prefill_is_step_5_causal_attention(kv):
    got, expected, cache = cached_attention_run(kv, [(0, 7)])
    print(f"max |cached - Step 5| over 7 positions fed at once: {worst(got, expected):.2e}")
    why = attention_said(kv, got, expected, cache)
    expect.close("the prefill's attention", got, expected, LOGITS_TOL, why)
    expect.shape(f"layer {LAST}'s cached keys", cache.keys[LAST], (B, H, 7, D // H))


@pytest.mark.todo("task 3b")
def test_cached_attention_of_float64_x_stays_float64(kv):
    model = model_of(kv, dtype=torch.float64)  # (weights float64)
    x = torch.randn(B, 4, D, generator=generator(5), dtype=torch.float64)  # (B, 4, d)
    with torch.no_grad():
        expected = model.blocks[0].attn(x)  # (B, 4, d): Step 5's, in float64
        got = kv.cached_attention(
            model.blocks[0].attn, x.clone(), kv.KVCache(model, B), 0
        )  # (B, 4, d)
    expect.equal("cached_attention(float64 x).dtype", got.dtype, torch.float64,
                 "x's dtype at every step: nothing cast to float32 (a softmax's dtype= included)")  # fmt: skip
    expect.close(
        "cached attention in float64", got, expected, 1e-12, "Step 5's, to float64's digits"
    )


@pytest.mark.todo("task 3b")
def test_cached_attention_of_a_model_with_more_layers_than_heads(kv):
    seed_all(0)
    model = GPT5.GPT(V, T_MAX, D, 2, 3).eval()  # h = 2 heads, n_layer = 3: layer 2 has no head 2
    x = torch.randn(B, 5, D, generator=generator(5))  # (B, 5, d)
    cache = kv.KVCache(model, B)
    with torch.no_grad():
        for i, block in enumerate(model.blocks):
            got = kv.cached_attention(block.attn, x.clone(), cache, i)  # (B, 5, d)
            expect.close(f"layer {i}'s cached attention in a GPT of h = 2, n_layer = 3", got,
                         block.attn(x), LOGITS_TOL, "the layer's number picks its cache, "
                         "never a head")  # fmt: skip


def random_said(kv) -> str:
    """Why a cached attention gives two answers for one input and an empty cache, or ''."""
    model, x = attention_inputs(kv)  # x: (B, 7, d)
    with torch.no_grad():
        a, b = [kv.cached_attention(model.blocks[0].attn, x, kv.KVCache(model, B), 0)
                for _ in range(2)]  # (B, 7, d) each  # fmt: skip
    if torch.allclose(a, b, rtol=0, atol=0, equal_nan=True):  # the same answer, NaN included
        return ""
    return (
        "two calls on the same x, each with an empty cache, differ by up to "
        f"{(a - b).nan_to_num().abs().max().item():.2e}: something random runs in it (F.dropout's training= defaults to "
        "True); attention for generation draws nothing"
    )


def attention_said(kv, got: torch.Tensor, expected: torch.Tensor, cache) -> str:
    """Why a prefill's attention (n_layer, B, t, d) of cached_attention_run's first t positions is
    wrong: the named mistake it equals, else keys or values not each head's own, else a NaN, else
    its mask when the last query, which sees every key, is right, else what every query shares."""
    if mistake := attention_mistake(kv, got):
        return f"it is Step 5's attention with one mistake: {mistake}"
    x = attention_inputs(kv)[1]  # (B, 7, d): what each layer was fed
    if worst(got - x[:, : got.shape[2]], expected) < LOGITS_TOL:
        return (
            "it is Step 5's attention plus its input x: cached_attention returns proj's output "
            "alone; the block adds the residual x around it"
        )
    if maps := maps_said(kv, cache):
        return maps
    if random := random_said(kv):
        return random
    rows = got[0].isnan().any(-1).any(0)  # (t,) layer 0's queries that hold a NaN
    if rows[-1] and not rows[:-1].any():
        return (
            "it holds NaN at the last query alone, which sees every key: its mask blocks them all, "
            "so the mask keeps what it should block (its comparison the wrong way round)"
        )
    if rows[:-1].all() and worst(got[:, :, -1], expected[:, :, -1]) < LOGITS_TOL:
        return (
            "it holds NaN at every query that blocks a key, and the last query, which blocks "
            "none, is right: the blocked scores were filled with +inf, not -inf (weight 0)"
        )
    if got.isnan().any():
        return (
            "it holds NaN: weights of -inf met V, from a softmax over an axis the mask blocks "
            "whole (the heads', dim=1, not the keys', dim=-1) or a log_softmax (its blocked "
            "weights stay -inf; the softmax's are 0); or the scores met 0 · -inf (a mask added or "
            "multiplied into them: -inf belongs in the blocked places only)"
        )
    if worst(got[:, :, -1], expected[:, :, -1]) < LOGITS_TOL:
        return (
            "each query sees its past: only the last query is right, the others saw later keys "
            "(the causal mask)"
        )
    return (
        "even the last query, which sees every key, differs: q, k and v (each head's own "
        "query, key and value maps), the scores (q·k and their 1 / sqrt(d_head) scale), the "
        "softmax's axis, what the mask keeps, or the heads' outputs "
        "merged back, (B, h, t, d_head) -> (B, t, h, d_head) -> (B, t, d), then the projection, "
        "with nothing added after it"
    )


# the mistakes of attention a prefill's output can be matched to, each as how it computes
MISTAKES = {
    "scaled by the square root of a count of positions (T, the keys', or t, the new queries'; "
    "or h, the heads', where h = t), not sqrt(d_head)": {"scale": "T"},
    "not scaled by 1 / sqrt(d_head)": {"scale": 1.0},
    "scaled by d_head, not by its square root": {"scale": "d_head"},
    "the softmax over the queries (dim=-2), not over the keys": {"dim": -2},
    "the heads' outputs (B, h, t, d_head) read as (B, t, d) without the transpose": {
        "merged": False
    },
    "scaled by sqrt(d), the model's width, not sqrt(d_head)": {"scale": "d"},
    "the blocked scores set to 0, not -inf: a blocked key keeps the weight exp(0)": {"fill": 0.0},
    "the output projection proj left out: the merged heads are returned as they are": {
        "proj": False
    },
    "the mask applied to the weights after the softmax: their rows no longer sum to 1 (-inf in "
    "the scores, before it, leaves each row's softmax over its past alone)": {"after": True},
    "the mask's 1s and 0s added to the scores, a float mask (scaled_dot_product_attention adds a "
    "float attn_mask; a bool one, True where a key is kept, masks)": {"added": True},
}


def attention_mistake(kv, got: torch.Tensor) -> str:
    """The MISTAKES entry whose attention `got` (n_layer, B, t, d) is, for cached_attention_run's
    first t positions fed at once, or ''."""
    model, x = attention_inputs(kv)
    t = got.shape[2]
    x = x[:, :t]  # (B, t, d): the run's first positions

    def attention(attn, scale=None, dim=-1, merged=True, fill=float("-inf"), proj=True,
                  after=False, added=False):  # fmt: skip
        """Step 5's attention, with one `how` of MISTAKES changed."""
        q, k, v = (torch.stack([getattr(h, n)(x) for h in attn.heads], dim=1)
                   for n in ("query", "key", "value"))  # (B, h, t, d_head) each  # fmt: skip
        scale = {"T": t**0.5, "d": D**0.5, "d_head": k.shape[-1]}.get(
            scale, scale or k.shape[-1] ** 0.5
        )
        scores = q @ k.transpose(-2, -1) / scale  # (B, h, t, t)
        blocked = attn.heads[0].tril[:t, :t] == 0  # (t, t)
        if after:
            weights = torch.softmax(scores, dim=dim).masked_fill(blocked, 0.0)  # (B, h, t, t)
        elif added:  # the mask's numbers, 1 kept and 0 blocked, added to the scores
            weights = torch.softmax(scores + (~blocked).to(scores.dtype), dim=dim)  # (B, h, t, t)
        else:
            weights = torch.softmax(scores.masked_fill(blocked, fill), dim=dim)  # (B, h, t, t)
        out = weights @ v  # (B, h, t, d_head)
        out = out.transpose(1, 2).flatten(2) if merged else out.reshape(B, t, D)  # (B, t, d)
        return attn.proj(out) if proj else out

    with torch.no_grad():
        for name, how in MISTAKES.items():
            wrong = torch.stack([attention(block.attn, **how) for block in model.blocks])
            if worst(got, wrong) < LOGITS_TOL:  # (n_layer, B, t, d)
                return name
    return ""


def alone_said(kv, got: torch.Tensor, pieces) -> str:
    """'' unless `got` (n_layer, B, 7, d) is each piece's attention over its own positions alone:
    then that the new queries never read the cached keys."""
    model, x = attention_inputs(kv)  # x: (B, 7, d)
    with torch.no_grad():
        alone = torch.cat(
            [torch.stack([block.attn(x[:, a:b]) for block in model.blocks]) for a, b in pieces], 2
        )  # (n_layer, B, 7, d): each piece attended as if nothing were held
    if worst(got, alone) >= LOGITS_TOL:
        return ""
    return (
        "each new query attends only the new keys, as if the cache held nothing: the keys and "
        "values to attend are what append returns, every position held, not the new k and v"
    )


def maps_said(kv, cache) -> str:
    """'' if each layer's cached keys and values are each head's own maps of the run's positions;
    else which heads' are not."""
    model, x = attention_inputs(kv)  # x: (B, 7, d)
    with torch.no_grad():
        for i, block in enumerate(model.blocks):
            for name, held in (("key", cache.keys[i]), ("value", cache.values[i])):
                if not (t := positions([held], 0)):
                    continue  # no tensor of positions: the run's own checks name it
                own = torch.stack([getattr(h, name)(x[:, :t]) for h in block.attn.heads], 1)
                if own.shape != held.shape:  # (B, h, t, d_head) each
                    continue  # a shape the run's own checks name
                other = "value" if name == "key" else "key"
                theirs = torch.stack([getattr(h, other)(x[:, :t]) for h in block.attn.heads], 1)
                if worst(held, theirs) < LOGITS_TOL:  # (B, h, t, d_head): the other map's
                    mate = cache.values[i] if name == "key" else cache.keys[i]  # the other held
                    if (
                        mate is not None
                        and mate.shape == own.shape
                        and worst(mate, own) < LOGITS_TOL
                    ):
                        return (
                            f"layer {i}'s cached {name}s are each head's {other}(x): the keys "
                            "and values went into append in the other order; it takes (layer, k, v)"
                        )
                    return (
                        f"layer {i}'s cached {name}s are each head's {other}(x), as its {other}s "
                        f"are: {name[0]} is made with head.{other}; make it with head.{name}"
                    )
                if wrong := [j for j in range(H) if worst(held[:, j], own[:, j]) >= LOGITS_TOL]:
                    return (
                        f"layer {i}'s cached {name}s of head {', '.join(map(str, wrong))} are not "
                        f"that head's own {name}(x): each head's queries, keys and values come "
                        "from its own maps"
                    )
    return ""


@pytest.mark.todo("task 3b")
@pytest.mark.core  # its parity, and its trap: the mask's rows
def test_cached_attention_gives_step_5_attention_at_the_new_rows(kv):
    got, expected, cache = cached_attention_run(kv, [(0, 4), (4, 6), (6, 7)])
    print(f"max |cached - Step 5| over 7 positions fed as 4, 2, 1: {worst(got, expected):.2e}")
    prefill_right = worst(got[:, :, :4], expected[:, :, :4]) < LOGITS_TOL  # positions 0 to 3
    why = (
        alone_said(kv, got, [(0, 4), (4, 6), (6, 7)])
        or "each new query at its own row: rows P to P + t - 1 of the causal mask"
        if prefill_right
        else "the 4 positions fed first, at once, already differ: "
        + attention_said(kv, got[:, :, :4], expected[:, :, :4], cache)
    )
    expect.close("cached attention", got, expected, LOGITS_TOL, why)
    expect.shape(f"layer {LAST}'s cached values", cache.values[LAST], (B, H, 7, D // H))


@pytest.mark.todo("task 3b")
def test_the_new_keys_and_values_join_the_cache_through_each_heads_own_maps(kv):
    model = model_of(kv)
    attn = model.blocks[1].attn
    x = torch.randn(B, 5, D, generator=generator(6))  # (B, 5, d)
    cache = kv.KVCache(model, B)
    with torch.no_grad():
        for a, b in ((0, 3), (3, 5)):  # a prefill of 3, then 2 more
            try:
                out = kv.cached_attention(attn, x[:, a:b].clone(), cache, 1)  # (B, b - a, d)
            except NotImplementedError:  # a TODO not written yet: the check names it
                raise
            except RuntimeError as exc:
                raise refused(
                    f"cached_attention of positions {a} to {b - 1} in layer 1",
                    f"({B}, {b - a}, {D}): the new rows' queries against all {b} keys",
                    exc,
                ) from None
            expect.shape(f"cached_attention of positions {a} to {b - 1}", out, (B, b - a, D))
        unchanged(model)  # the maps below are the ones the cached attention was handed
        keys = torch.stack([head.key(x) for head in attn.heads], dim=1)  # (B, h, 5, d_head)
        values = torch.stack([head.value(x) for head in attn.heads], dim=1)
    expect.close("layer 1's cached keys", cache.keys[1], keys, 1e-6, "head i's key map, in order")
    expect.close("layer 1's cached values", cache.values[1], values, 1e-6, "head i's value map")
    expect.equal("layer 0's keys", cache.keys[0], None, "the layer it is given, only")


# --- task 3c: the forward of the new ids only -------------------------------------------------


@pytest.mark.todo("task 3c")
@pytest.mark.core  # its property
def test_the_prefill_gives_the_uncached_logits(kv):
    model, idx = model_of(kv), ids((B, 5))
    with torch.no_grad():
        got = kv.forward_cached(model, idx, kv.KVCache(model, B))  # (B, 5, V)
        unchanged(model)
        expected = model(idx)[0]
    print(f"max |prefill - uncached| over {idx.shape[1]} positions: {worst(got, expected):.2e}")
    expect.close("the prefill's logits", got, expected, LOGITS_TOL, prefill_said(model, idx, got))


def prefill_said(model, idx, got) -> str:
    """What a prefill that is not Step 5's left out, in words, found by computing it without."""

    def forward(residual=True, ln_f=True, ln1=True, mlp_residual=True, order=1, post_ln2=False):
        x = model.tok_emb(idx) + model.pos_emb(torch.arange(idx.shape[1]))  # (B, T, d)
        for block in list(model.blocks)[::order]:  # Step 5's Block.forward, a part changed
            h = (x if residual else 0) + block.attn(block.ln1(x) if ln1 else x)  # (B, T, d)
            mlp = block.ln2(block.mlp(h)) if post_ln2 else block.mlp(block.ln2(h))  # (B, T, d)
            x = (h if mlp_residual else 0) + mlp  # (B, T, d)
        return model.lm_head(model.ln_f(x) if ln_f else x)  # (B, T, V)

    left_out = {
        "each block's attention replaced x instead of adding to it: x = x + attention": {
            "residual": False
        },
        "the final layer norm ln_f is left out before lm_head": {"ln_f": False},
        "the attention is fed x itself: each block normalises it first, block.ln1(x)": {
            "ln1": False
        },
        "each block's MLP output took the place of x: x = x + block.mlp(...) adds to it": {
            "mlp_residual": False
        },
        "the blocks ran last to first: layer 0, model.blocks[0], runs first": {"order": -1},
        "ln2 normalises the MLP's output: each block normalises the MLP's input, "
        "x + block.mlp(block.ln2(x))": {"post_ln2": True},
    }
    with torch.no_grad():
        for said, how in left_out.items():
            if got.shape == (*idx.shape, model.V) and worst(got, forward(**how)) < 1e-4:
                return said
        if got.shape == (*idx.shape, model.V) and worst(got, forward().softmax(-1)) < 1e-4:
            return "probabilities, not logits: forward_cached returns lm_head's output, no softmax"
    return (
        "Step 5's GPT.forward and Block.forward, line for line: a prefill is the uncached forward"
    )


@pytest.mark.todo("task 3c")
@pytest.mark.core  # its trap: positions from 0
def test_new_ids_are_embedded_at_the_positions_after_the_cached_ones(kv):
    model, idx = model_of(kv), ids((B, 7))
    seen = []  # the positions of each call, as pos_emb receives them
    watch = model.pos_emb.register_forward_hook(lambda m, args, out: seen.append(args[0].tolist()))
    cache, logits = kv.KVCache(model, B), []
    with torch.no_grad():
        for a, b in ((0, 4), (4, 5), (5, 7)):
            logits.append(kv.forward_cached(model, idx[:, a:b], cache))  # (B, b - a, V)
            held = [0 if k is None else k.shape[2] for k in cache.keys]  # positions, per layer
            why = "each block's attention runs through cached_attention, which fills the cache"
            if held[-1] != b and len(set(held)) == 1 and held[0] > 0:  # alike, too few
                why = (f"every layer holds {held[0]} positions where {b} ids went in: this "
                       f"forward appended {held[0] - a} for the {b - a} ids it was given (are all "
                       "of idx's t ids embedded?)")  # fmt: skip
            elif held[-1] == 0 and (ran := held.index(0)) and set(held[:ran]) == {b}:
                why = (f"the layers' caches hold {held} positions: the forward ran {ran} of the "
                       f"{len(held)} blocks (every block runs, each through its cached_attention)")  # fmt: skip
            elif held[-1] != b and any(held):  # filled, but not layer by layer
                why = twice_said(held, b) or (
                    f"the layers' caches hold {held} positions: each block appends to its own "
                    "layer, the index handed to cached_attention"
                )
            expect.equal(f"cache.length after a forward of positions {a} to {b - 1}",
                         cache.length, b, why)  # fmt: skip
    watch.remove()  # the model as model_of made it again: unchanged() below compares its hooks
    restarted = seen == [[0, 1, 2, 3], [0], [0, 1]]
    fixed = len(seen) == 3 and seen[1][:1] == seen[2][:1] != [0]  # later calls start alike
    why = "a new id's position is what the cache holds" + (
        ": not 0 each call"
        if restarted
        else f": the later calls both start at {seen[1][0]}, whatever the cache holds (P is "
        "cache.length)"
        if fixed
        else " before it (P to P + t - 1)"
    )
    if not seen:  # its rows read another way (pos_emb.weight[P : P + t]): judged by the logits
        unchanged(model)
        with torch.no_grad():
            expected = model(idx)[0]  # (B, 7, V) Step 5's, every position at once
            kept = model.pos_emb.weight.clone()  # (block_size, d)
            model.pos_emb.weight.zero_()
            unplaced = model(idx)[0]  # (B, 7, V): no position added
            model.pos_emb.weight.copy_(kept)
        got = torch.cat(logits, 1)  # (B, 7, V)
        alike = got.shape == unplaced.shape and worst(got, unplaced) < LOGITS_TOL
        how = ("no position was added to any id's embedding" if alike
               else "a row read from its .weight is one row, P, for every id of the call unless "
               "sliced [P : P + t]")  # fmt: skip
        expect.close("the logits of positions 0 to 6, fed in three calls", got, expected,
                     LOGITS_TOL, "each id's embedding adds its own position's row, P to P + t - 1 "
                     f"(model.pos_emb was never called: {how})")  # fmt: skip
        return cached_positions_are_not_embedded_again(kv, model, idx)
    expect.equal("the positions of three calls", seen, [[0, 1, 2, 3], [4], [5, 6]], why)
    # the positions pos_emb saw are the ones added: its output moved, the logits move too (each
    # entry its own way: a move by a constant, a layer norm removes, up to rounding)
    moves = torch.randn(4, D, generator=generator(6))  # (4, d)
    handle = model.pos_emb.register_forward_hook(lambda module, args, out: out + moves)
    with torch.no_grad():
        moved = kv.forward_cached(model, idx[:, :4], kv.KVCache(model, B))  # (B, 4, V)
    handle.remove()
    with torch.no_grad():
        plain = kv.forward_cached(model, idx[:, :4], kv.KVCache(model, B))  # (B, 4, V)
    expect.differs("the logits once pos_emb's output is moved", moved, plain,
                   "what the embeddings add is pos_emb's output for the positions it was given")  # fmt: skip
    cached_positions_are_not_embedded_again(kv, model, idx)


def cached_positions_are_not_embedded_again(kv, model, idx):
    """After a prefill of 4, rows 0 to 3 of pos_emb changed move nothing of the fifth id's logits
    (judged only where the fifth id's logits are right unchanged: other tests say why if not)."""
    with torch.no_grad():
        expected = model(idx[:, :5])[0][:, 4:]  # (B, 1, V) before any change
        caches = kv.KVCache(model, B), kv.KVCache(model, B)
        for cache in caches:
            kv.forward_cached(model, idx[:, :4], cache)  # (B, 4, V) the prefill
        plain = kv.forward_cached(model, idx[:, 4:5], caches[0])  # (B, 1, V)
        kept = model.pos_emb.weight.clone()  # (block_size, d)
        # earlier positions' rows, in the cache already: moved each its own way (a row moved by
        # a constant moves nothing after a layer norm)
        model.pos_emb.weight[:4] += torch.randn(kept[:4].shape, generator=generator(5))  # (4, d)
        try:
            got = kv.forward_cached(model, idx[:, 4:5], caches[1])  # (B, 1, V)
        finally:
            model.pos_emb.weight.copy_(kept)
    if plain.shape != expected.shape or worst(plain, expected) > LOGITS_TOL:
        return  # a forward that is wrong anyway: test_one_new_id_gives_the_uncached_last_row
    expect.close("the fifth id's logits once pos_emb's rows 0 to 3 change after the prefill",
                 got, expected, LOGITS_TOL, "positions 0 to 3 come from the cache, not from "
                 "embedding them again: a call embeds its t new ids only, at P to P + t - 1")  # fmt: skip


@pytest.mark.todo("task 3c")
def test_one_new_id_gives_the_uncached_last_row(kv):
    model, idx = model_of(kv), ids((B, 6))
    cache = kv.KVCache(model, B)
    with torch.no_grad():
        prefill = kv.forward_cached(model, idx[:, :5], cache)  # (B, 5, V): 5 positions
        got = kv.forward_cached(model, idx[:, 5:], cache)[:, -1]  # (B, V): the sixth
        unchanged(model)
        expected = model(idx)[0]  # (B, 6, V)
    # the cause first: a sixth id can only be right after a right prefill
    expect.close("the prefill's logits (5 ids at once)", prefill, expected[:, :5], LOGITS_TOL,
                 "before any id comes alone: see test_the_prefill_gives_the_uncached_logits")  # fmt: skip
    print(f"max |one cached step - uncached|: {worst(got, expected[:, -1]):.2e}")
    expect.close("the logits of the sixth id, fed alone after the prefill", got, expected[:, -1],
                 LOGITS_TOL, "embedded at position 5, its query over the 6 cached keys")  # fmt: skip


@pytest.mark.todo("task 3c")
def test_the_cache_holds_2_n_layer_B_h_T_d_head_numbers(kv):
    model, idx = model_of(kv), ids((B, 6))
    cache = kv.KVCache(model, B)
    with torch.no_grad():
        kv.forward_cached(model, idx[:, :5], cache)
        kv.forward_cached(model, idx[:, 5:], cache)
    for name, tensors in (("keys", cache.keys), ("values", cache.values)):
        expect.equal(f"len(cache.{name})", len(tensors), N_LAYER, "one tensor per layer")
        for layer, t in enumerate(tensors):
            expect.shape(f"cache.{name}[{layer}]", t, (B, H, 6, D // H))
    counted = sum(t.numel() for t in cache.keys + cache.values)
    expect.equal(
        "numbers in the cache's tensors",
        counted,
        kv.cache_numbers(N_LAYER, B, H, 6, D // H),
        "2 * n_layer * B * h * T * d_head",
    )
    expect.equal("cache.length", cache.length, 6)


# --- task 3d: next_logits and generate --------------------------------------------------------


def pair_of(returned) -> tuple:
    """next_logits' return, checked to be the pair (logits, cache) before it is unpacked."""
    expect.equal("the type next_logits returns", type(returned), tuple,
                 "the pair (logits, cache): the cache it fed is handed back")  # fmt: skip
    expect.equal("the length of the tuple next_logits returns", len(returned), 2, "(logits, cache)")
    kind = type(returned[1]).__name__  # the cache handed back: the one it fed, or a new one
    expect.equal("the type of next_logits' second result", kind, "KVCache",
                 "the cache it fed (a new one after a prefill), for the next call to feed again")  # fmt: skip
    return returned


@pytest.mark.todo("task 3d")
@pytest.mark.core  # its parity
def test_logits_at_every_generated_position_equal_the_uncached_models(kv):
    model, idx = model_of(kv), ids((B, 3))
    cache, distances, moved, fulls = None, [], [], []
    with torch.no_grad():
        for _ in range(2 * T_MAX):  # past T_max: the window slides, the cache is rebuilt
            held = layer_0_keys(cache)  # (B, h, T_max, d_head) of a full cache, else None
            fulls.append(held is not None)  # a full cache: this call prefills the window again
            logits, cache = pair_of(kv.next_logits(model, idx, cache))  # (B, V), the cache
            expect.shape(f"next_logits of {idx.shape[1]} ids: its logits", logits, (B, V),
                         "(B, V): the last position's logits, one row per sequence")  # fmt: skip
            distances.append(worst(logits, uncached_next(model, idx)))
            moved.append(slid(held, layer_0_keys(cache)))
            idx = torch.cat((idx, logits.argmax(-1, keepdim=True)), dim=1)
    print(
        f"max |cached - uncached| at each of {len(distances)} positions: "
        + " ".join(f"{d:.1e}" for d in distances)
    )
    many = [i == 0 or full for i, full in enumerate(fulls)]  # the calls that fed several ids
    prefill_only = all((d > LOGITS_TOL) == m for d, m in zip(distances, many, strict=True))
    for T, d, was_slid in zip(range(3, 3 + len(distances)), distances, moved, strict=True):
        where = "past" if T > T_MAX else "within"
        why = "the cache changes the speed, not the logits" + (SLID if was_slid else "")
        why += PREFILL_ONLY if prefill_only else ""
        expect.at_most(
            f"max |cached - uncached| with T={T} ids ({where} T_max)", d, LOGITS_TOL, why
        )


SLID = "; the full cache slid: its oldest key dropped, the others kept"  # its symptom row's words
PREFILL_ONLY = (
    "; only the calls that fed several ids (the prefill, a rebuilt cache) differ, those of one id "
    "match: the logits are the last position's row of what the forward returns"
)


def layer_0_keys(cache) -> torch.Tensor | None:
    """A full cache's layer-0 keys, (B, h, T_max, d_head), copied; None for any other cache."""
    keys = getattr(cache, "keys", None)
    if not keys or not isinstance(keys[0], torch.Tensor) or keys[0].shape[2] != T_MAX:
        return None
    return keys[0].clone()


def slid(held: torch.Tensor | None, now: torch.Tensor | None) -> bool:
    """Whether a full cache's keys moved by one: the oldest dropped, the rest kept as they were
    (a rebuilt cache's keys are made again, each at its new position)."""
    if held is None or now is None or now.shape != held.shape:
        return False
    return torch.equal(now[:, :, :-1], held[:, :, 1:])


@pytest.mark.todo("task 3d")
@pytest.mark.core  # its trap: the full cache slid
def test_a_full_cache_is_rebuilt_from_the_window_not_slid(kv):
    model, idx = model_of(kv), ids((B, T_MAX + 1))
    with torch.no_grad():
        _, full = pair_of(kv.next_logits(model, idx[:, :T_MAX]))  # T_max ids: a full cache
        held = layer_0_keys(full)  # (B, h, T_max, d_head): what a slide would move
        _, cache = pair_of(kv.next_logits(model, idx, full))  # one more: the window moved by one
        unchanged(model)  # the prefills below are only measures on the same weights
        fresh, first = kv.KVCache(model, B), kv.KVCache(model, B)
        kv.forward_cached(model, idx[:, -T_MAX:], fresh)  # the window's own prefill
        kv.forward_cached(model, idx[:, :T_MAX], first)  # the first T_max ids' prefill
    expect.equal("the positions held after the window moved", cache.length, T_MAX,
                 "a full cache is made again: a new one, prefilled with the last T_max ids")  # fmt: skip
    why = "every key has its position baked in: the window's prefill, not a slide"
    now, again = layer_0_keys(cache), layer_0_keys(first)  # each None unless full
    if (
        now is not None
        and again is not None
        and not slid(held, now)
        and worst(now, again) < LOGITS_TOL
    ):
        why = "it holds the first T_max ids again: the window is the last T_max ids of idx"
    for layer in range(N_LAYER):
        expect.close(f"layer {layer}'s keys", cache.keys[layer], fresh.keys[layer], LOGITS_TOL, why)


@pytest.mark.todo("task 3d")
def test_generate_prefills_once_then_feeds_one_id_at_a_time(kv):
    model, idx = model_of(kv), ids((B, 5))
    fed = []  # the number of ids of each forward, as tok_emb receives them
    model.tok_emb.register_forward_hook(lambda module, args, out: fed.append(args[0].shape[1]))
    kv.generate(model, idx, max_new_tokens=6, greedy=True)
    # 5 ids, then 1 each, until T_max = 8 are held; then the full cache is rebuilt from the window
    expect.equal("ids per forward", fed, [5, 1, 1, 1, 8, 8], "prefill, then one id, then rebuilds")


@pytest.mark.todo("task 3d")
def test_a_one_id_prompt_is_its_own_prefill(kv):
    """The usual start of a sample, one id (the encoded newline): the prefill is that id alone."""
    model, idx = model_of(kv), ids((B, 1), seed=3)  # (B, 1)
    with torch.no_grad():
        logits, cache = pair_of(kv.next_logits(model, idx))  # (B, V), the cache
        expect.close("next_logits of a one-id prompt", logits, uncached_next(model, idx),
                     LOGITS_TOL, "model(idx)[0][:, -1] of that one id")  # fmt: skip
    expect.equal("the positions held after a one-id prompt", cache.length, 1, "that one id")


@pytest.mark.todo("task 3d")
def test_one_prompt_keeps_its_batch_axis(kv):
    """B = 1, the usual generation from one prompt: (1, V) logits, (1, T) ids, no axis dropped."""
    model, idx = model_of(kv), ids((1, 3), seed=7)  # (1, 3)
    logits, _ = pair_of(kv.next_logits(model, idx))  # (1, V)
    expect.shape("next_logits of one prompt's 3 ids: its logits", logits, (1, V),
                 "(B, V) at B = 1 too: a squeeze() drops the batch axis with it")  # fmt: skip
    got = kv.generate(model, idx, max_new_tokens=2, greedy=True)
    expect.shape("generate of one prompt, 2 new ids", got, (1, 5), "(B, T + 2) at B = 1")


@pytest.mark.todo("task 3d")
def test_greedy_ids_equal_uncached_greedy_generation(kv):
    model, idx = model_of(kv, seed=2), ids((B, 3), seed=3)
    expected = idx
    with torch.no_grad():
        for _ in range(2 * T_MAX):  # Step 5's loop, the likeliest id each time
            expected = torch.cat(
                (expected, uncached_next(model, expected).argmax(-1, keepdim=True)), 1
            )
    got = kv.generate(model, idx, max_new_tokens=2 * T_MAX, greedy=True)
    expect.equal("the greedy ids", got, expected, "the cache changes the speed, not the text")


@pytest.mark.todo("task 3d")
def test_sampled_ids_equal_step_5_generate_in_float64(kv):
    model, idx = model_of(kv, seed=4, dtype=torch.float64), ids((B, 3), seed=5)
    # float64: logits equal to ~1e-15, so no draw falls between two probabilities' rounding
    expected = model.generate(idx, 2 * T_MAX, generator=generator(6))
    got = kv.generate(model, idx, 2 * T_MAX, generator=generator(6))
    unchanged(model)
    expect.equal("the sampled ids", got, expected, "the same generator draws the same ids")


# --- the run's cache experiments (experiments.py), --quick: what they compute, never how fast --


@pytest.mark.todo("task 3c")
@pytest.mark.slow
def test_the_cache_experiments_compute_sizes_parity_and_a_figure(impl, tmp_path):
    folder = course_step("lab-02").folder
    experiments, plots = load_file(folder / "experiments.py"), load_file(folder / "plots.py")
    ctx = Context("lab-02", impl, quick=True)
    sizes = experiments.cache_sizes(ctx)
    expect.equal("GPT-2 small's cache, MB", round(sizes[1]["MB"], 1), 75.5, "18,874,368 x 4 bytes")
    r = experiments.speed(ctx)
    expect.equal(
        "contexts timed", [row["T"] for row in r["rows"]], list(experiments.QUICK_CONTEXTS)
    )
    for row in r["rows"]:
        expect.at_most(
            f"the timed step's logit distance at T={row['T']}", row["parity"], LOGITS_TOL
        )
        expect.at_least(f"cached seconds at T={row['T']}", row["cached"]["seconds"], 0.0)
    expect.equal("the verdict", experiments.logits_differ(r, ctx), None)
    expect.equal(
        "the speed block names the machine", "Recorded on" in experiments.speed_block(r), True
    )
    path = plots.speed_figure(r, tmp_path / "cache_speed_quick.png")
    expect.equal("the figure is written", path.stat().st_size > 0, True)


# --- given: the formula and bad input -----------------------------------------------------------


def holding(cache, t: int):
    """`cache` as if it held t positions of every layer (zeros, set directly: no TODO runs)."""
    for layer in range(len(cache.keys)):
        shape = (cache.B, cache.h, t, D // cache.h)  # (B, h, t, d_head)
        cache.keys[layer], cache.values[layer] = torch.zeros(shape), torch.zeros(shape)
    return cache


@pytest.mark.given
def test_gpt2_small_cache_per_sequence_in_mb(kv):
    # GPT-2 small: 12 layers, 12 heads of 64, T_max 1024; float32, 4 bytes a number
    mb = kv.cache_numbers(n_layer=12, B=1, h=12, T=1024, d_head=64) * 4 / 1e6
    expect.close(
        "GPT-2 small's cache per sequence, MB", mb, 75.497472, 1e-9, "2 * 12 * 1024 * 768 * 4"
    )


@pytest.mark.given
@pytest.mark.parametrize(
    "cache_of, idx_shape, message",
    [
        (
            lambda kv, m: kv.KVCache(m, 3),
            (B, 2),
            "made for batch size B=3, got ids of batch size B=2",
        ),
        (
            lambda kv, m: holding(kv.KVCache(m, 3), 2),
            (1, 3),
            r"ids \(1, 3\) for a cache of batch size B=3: one new id per sequence is \(3, 1\)",
        ),
        (
            lambda kv, m: kv.KVCache(m, B, torch.float64),
            (B, 2),
            "holds torch.float64 .* are torch.float32",
        ),
        (
            lambda kv, m: kv.KVCache(m, B),
            (B, T_MAX + 1),
            "holds 0 of T_max=8 positions, so at most 8 more fit, got 9",
        ),
        (lambda kv, m: "cache", (B, 2), "cache must be a KVCache, got str"),
    ],
    ids=["batch size", "ids across", "dtype", "too long", "not a cache"],
)
def test_a_cache_that_cannot_take_the_ids_is_refused(kv, cache_of, idx_shape, message):
    model = model_of(kv)
    with pytest.raises(ValueError, match=message):
        kv.forward_cached(model, ids(idx_shape), cache_of(kv, model))


@pytest.mark.given
def test_a_cache_out_of_step_with_the_ids_is_refused(kv):
    model, cache = model_of(kv), kv.KVCache(model_of(kv), B)
    with pytest.raises(ValueError, match=r"holds 0 positions and idx has T=3: .* hold T - 1 = 2"):
        kv.next_logits(model, ids((B, 3)), cache)


@pytest.mark.given
@pytest.mark.parametrize("size", [0, -1, 2.0, True])
def test_a_bad_batch_size_is_refused(kv, size):
    with pytest.raises(ValueError, match=f"B must be a positive int, got {size!r}"):
        kv.KVCache(model_of(kv), size)


@pytest.mark.given
def test_generate_refuses_bad_sampling_settings(kv):
    with pytest.raises(ValueError, match="temperature must be a finite number > 0, got 0"):
        kv.generate(model_of(kv), ids((B, 2)), 3, temperature=0)
