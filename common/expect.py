"""Value checks for the tests: a failure names the value, what was expected (or the tolerance) and
what came, e.g. `max |yours - SDPA|: expected <= 1e-06, got 0.49`."""

from collections.abc import Sequence

import torch

# What a judgement rests on, bound as this module is imported, before any of a student's code runs:
# torch's functions and the tensor type's own C methods (an immutable type). A method or a torch
# function replaced later, even for a single call and put back (red team 17), judges nothing here.
_T = torch._C.TensorBase
_as_tensor, _equal, _ne, _eq, _gt = torch.as_tensor, torch.equal, torch.ne, torch.eq, torch.gt
_le, _ge, _isfinite, _logical_not = torch.le, torch.ge, torch.isfinite, torch.logical_not
_any, _abs, _sub, _max, _nonzero = torch.any, torch.abs, torch.sub, torch.max, torch.nonzero
_nan_to_num, _double, _item, _tolist = torch.nan_to_num, _T.double, _T.item, _T.tolist
_size, _dtype = _T.size, _T.__dict__["dtype"].__get__

# The checks: a test that calls one asserts something (tests/contracts.py counts them)
__all__ = [
    "at_least", "at_most", "between", "close", "differs", "equal", "fail", "finite", "members", "shape",
]  # fmt: skip


def show(value) -> str:
    """A value as a failure message shows it: floats to 4 significant digits, tensors briefly."""
    if isinstance(value, torch.Tensor):
        if value.numel() == 1:
            return show(value.item())
        return f"a {value.dtype} tensor of shape {tuple(value.shape)}"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, type):  # float, torch.Tensor, numpy.float32: never "<class ...>"
        module = value.__module__
        return value.__qualname__ if module == "builtins" else f"{module}.{value.__qualname__}"
    return repr(value)


def shown(expected, got) -> tuple[str, str]:
    """Both values as a failure shows them, every digit when 4 digits would print them alike."""
    pair = show(expected), show(got)
    if pair[0] == pair[1]:  # 0.003 and 0.0029999 both print as 0.003: a difference must show
        to_number = lambda v: v.item() if isinstance(v, torch.Tensor) else v  # noqa: E731
        pair = repr(to_number(expected)), repr(to_number(got))
    return pair


def fail(name: str, expected: str, got, why: str = "") -> None:
    """Raise the AssertionError every check here raises: `name: expected ..., got ...[: why]`."""
    got = got if isinstance(got, str) else show(got)
    raise AssertionError(f"{name}: expected {expected}, got {got}" + (f": {why}" if why else ""))


def equal(name: str, got, expected, why: str = "") -> None:
    """got == expected (tensors: same shape and every entry equal, NaN never equal)."""
    _plain(name, got, expected)
    _tensor_if(name, got, expected, why)
    if (got is None) != (expected is None):  # None is no tensor of any dtype: say what came
        fail(name, show(expected), show(got), why)
    if isinstance(got, torch.Tensor) or isinstance(expected, torch.Tensor):
        _tensors_close(name, _as_tensor(got), _as_tensor(expected), None, why)
    elif got != expected:
        fail(name, *shown(expected, got), why)


def close(name: str, got, expected, atol: float, why: str = "") -> None:
    """|got - expected| <= atol everywhere (numbers or tensors of the same shape)."""
    _plain(name, got, expected)
    _tensor_if(name, got, expected, why)
    if isinstance(got, torch.Tensor) or isinstance(expected, torch.Tensor):
        _tensors_close(name, _as_tensor(got), _as_tensor(expected), atol, why)
    elif not abs(got - expected) <= atol:  # `not`: a NaN fails too
        expected_shown, got_shown = shown(expected, got)
        fail(name, f"{expected_shown} (tolerance {atol:g})", got_shown, why)


def _tensor_if(name: str, got, expected, why: str) -> None:
    """Fail on a got that is no tensor, number or sequence (None, a string) where a tensor is
    expected: torch would refuse it in its own words."""
    if isinstance(expected, torch.Tensor) and not isinstance(
        got, torch.Tensor | int | float | list | tuple
    ):
        fail(name, show(expected), f"{type(got).__name__} {show(got)}"[:80], why)
    held = (
        [e for e in got if isinstance(e, torch.Tensor) and e.dim()]
        if isinstance(got, list | tuple)
        else []
    )
    if isinstance(expected, torch.Tensor) and held:  # tensors in a list: never one tensor
        kind = type(got).__name__
        fail(name, show(expected), f"a {kind} of {len(got)}, not one tensor: torch.cat joins "
             f"tensors into one", why)  # fmt: skip


def at_most(name: str, got, limit: float, why: str = "") -> None:
    """got <= limit (a tensor: every entry): a distance or an error within its tolerance."""
    _bounded(name, got, lambda x: _le(x, limit) if isinstance(x, torch.Tensor) else x <= limit,
             f"<= {limit:g}", why)  # fmt: skip


def at_least(name: str, got, limit: float, why: str = "") -> None:
    """got >= limit (a tensor: every entry)."""
    _bounded(name, got, lambda x: _ge(x, limit) if isinstance(x, torch.Tensor) else x >= limit,
             f">= {limit:g}", why)  # fmt: skip


def finite(name: str, got: torch.Tensor, why: str = "") -> None:
    """No inf and no NaN in got."""
    _bounded(name, got, _isfinite, "finite entries only", why)


def _bounded(name: str, got, ok, expected: str, why: str) -> None:
    """Fail on the first value (or tensor entry) for which ok(value) is false; NaN never passes."""
    _plain(name, got)
    if not isinstance(got, torch.Tensor):
        if not ok(got):  # a NaN compares false, so it fails too
            fail(name, expected, got, why)
        return
    wrong = _logical_not(ok(got))
    if _item(_any(wrong)):
        where = tuple(_tolist(_nonzero(wrong)[0]))
        at = f"[{', '.join(map(str, where))}]" if where else ""
        fail(
            f"{name}{at}",
            expected,
            f"{show(got[where])} ({int(wrong.sum())} of {wrong.numel()} entries)",
            why,
        )


def between(name: str, got: float, low: float, high: float, why: str = "") -> None:
    """low < got < high, both ends open."""
    _plain(name, got)
    if not low < got < high:
        fail(name, f"between {low:g} and {high:g}", got, why)


def shape(name: str, got: torch.Tensor, expected: Sequence[int], why: str = "") -> None:
    """got.shape == expected."""
    _plain(name, got)
    if not isinstance(got, torch.Tensor):
        fail(f"{name}.shape", str(tuple(expected)), f"a {type(got).__name__}, not a tensor", why)
    if tuple(got.shape) != tuple(expected):
        fail(f"{name}.shape", str(tuple(expected)), str(tuple(got.shape)), why)


def members(name: str, got: Sequence, expected: Sequence, labels: Sequence[str], atol=0.0):
    """Each member of a tuple result equal (or within atol) to its expected value, named."""
    if len(got) != len(labels):
        fail(f"{name}'s length", f"{len(labels)} ({', '.join(labels)})", len(got))
    for label, g, e in zip(labels, got, expected, strict=True):
        like = [j for j, want in enumerate(expected) if labels[j] != label and _same(g, want, atol)]
        twice = like and _same(got[like[0]], expected[like[0]], atol)  # (keys, keys): no swap
        order = f"{ORDER}, expected ({', '.join(labels)})"
        why = f"it is the {labels[like[0]]} again: {ONCE}" if twice else ""
        why = why or (f"it is the {labels[like[0]]}: {order}" if like else "")
        if atol:
            close(f"{name}'s {label}", g, e, atol, why)
        else:
            equal(f"{name}'s {label}", g, e, why)


ORDER = "the members in another order"  # the check's words for a tuple returned out of order
ONCE = "each member once"  # and for a member returned twice: the return's own mistake, both
DEF_LINE = "def line"  # a test's words for a default changed where the function is defined


def _same(got, expected, atol: float) -> bool:
    """Would members' check of got against expected pass."""
    try:
        close("", got, expected, atol) if atol else equal("", got, expected)
    except AssertionError:
        return False
    return True


def _plain(name: str, *values) -> None:
    """Fail on a value whose own code may answer a comparison: a subclass of torch.Tensor, a
    tensor with a method of its own (`x.double = ...`), an object whose comparisons are not
    Python's or torch's (`__ne__` of its own class), in a tuple or list too."""
    for value in values:
        kind = type(value)  # not value.__class__, which an object may say is anything
        if isinstance(value, torch.Tensor) and kind not in (torch.Tensor, torch.nn.Parameter):
            fail(name, "a torch.Tensor", f"a {kind.__name__}, a subclass of it",
                 "the course compares plain tensors")  # fmt: skip
        elif isinstance(value, torch.Tensor) and (own := set(vars(value)) & set(dir(kind))):
            fail(name, "a torch.Tensor", f"a tensor with its own .{min(own)}",
                 "the course compares plain tensors")  # fmt: skip
        owners = {o for d in COMPARING for o in kind.__mro__ if d in vars(o)}
        if any(not o.__module__.startswith(("builtins", "torch", "numpy")) for o in owners):
            fail(name, "a number, a string or a tuple of them",
                 f"a {kind.__name__}, whose comparisons are its own", "the course compares "
                 "plain values")  # fmt: skip
        if isinstance(value, list | tuple):
            _plain(name, *value)


# what a check asks of a value that is no tensor: each must be Python's or torch's own
COMPARING = ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__sub__", "__abs__",
             "__bool__", "__float__")  # fmt: skip


def _tensors_close(name: str, got, expected, atol: float | None, why: str) -> None:
    """Compare two tensors entry by entry (each already _plain); a failure says where the worst
    entry is and what it is."""
    if _size(got) != _size(expected):
        fail(f"{name}.shape", str(tuple(_size(expected))), str(tuple(_size(got))), why)
    if _dtype(got) == torch.bool or _dtype(expected) == torch.bool or atol is None:
        wrong = _ne(got, expected)
        if not _item(_any(wrong)):
            return
        where = tuple(_tolist(_nonzero(wrong)[0]))
        tolerance = ""
    else:
        distance = _nan_to_num(_abs(_sub(_double(got), _double(expected))), float("inf"))
        wrong = _gt(distance, atol)
        if not _item(_any(wrong)):
            return
        # the worst entry's index (torch.unravel_index imports torch.fx's sympy: half a second)
        where = tuple(_tolist(_nonzero(_eq(distance, _max(distance)))[0]))
        tolerance = f" (tolerance {atol:g})"
    at = f"[{', '.join(map(str, where))}]" if where else ""
    expected_shown, got_shown = shown(expected[where], got[where])
    fail(
        f"{name}{at}",
        f"{expected_shown}{tolerance}",
        f"{got_shown} ({int(wrong.sum())} of {wrong.numel()} entries differ)",
        why,
    )


def differs(name: str, got: torch.Tensor, before: torch.Tensor, why: str = "") -> None:
    """got is not bit-identical to before: a change that must show did show."""
    _plain(name, got, before)
    if _equal(got, before):
        fail(name, "a change", "the same values as before", why)
