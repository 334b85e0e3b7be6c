"""Sinusoidal and rotary positions: their properties as proofs, and parity with an independent computation."""

import inspect
import math

import pytest
import torch

from common import expect
from common.seeding import randn

FLOAT32 = 1e-5  # float32 rounding of values of size ~1, after a few products: a few units of 2**-23


def omega(i: int, d: int) -> float:
    """The angle per position of column pair i, from the paper's formula, in plain Python."""
    return 1.0 / 10000.0 ** (2 * i / d)


# ---- sinusoidal


@pytest.mark.todo("task 1.1")
def test_sinusoidal_is_T_by_d_and_bounded(layers):
    pe = layers.sinusoidal(50, 16)
    expect.shape("sinusoidal(50, 16)", pe, (50, 16))
    expect.equal("its dtype", pe.dtype, torch.float32)
    expect.at_most("|sinusoidal(50, 16)|", pe.abs(), 1.0, "sines and cosines lie in [-1, 1]")


@pytest.mark.todo("task 1.1")
def test_sinusoidal_of_each_call_is_its_own_T_and_d(layers):
    first = layers.sinusoidal(40, 12)  # (40, 12)
    expect.shape("sinusoidal(40, 16) after sinusoidal(40, 12)", layers.sinusoidal(40, 16), (40, 16),
                 "each call's own T and d: a table kept from an earlier call is another d's")  # fmt: skip
    first += 1.0  # a caller's own tensor: writing into it changes no later call
    expect.at_most("|sinusoidal(40, 12)| after a caller wrote into the last one",
                   layers.sinusoidal(40, 12).abs(), 1.0, "a new tensor each call, not one kept "
                   "and handed out again")  # fmt: skip


def paper_table(T: int, d: int, even=math.sin, odd=math.cos, halves=False) -> torch.Tensor:
    """[T, d] float64, one entry at a time: the paper's PE, or a layout a bug writes instead."""

    def row(pos: int) -> list[float]:
        if halves:  # every `even` (sine) in the first d / 2 columns, every `odd` in the last
            return [f(pos * omega(i, d)) for f in (even, odd) for i in range(d // 2)]
        # PE(pos, 2i) = even(pos·ω_i), PE(pos, 2i + 1) = odd(pos·ω_i)
        return [(even if c % 2 == 0 else odd)(pos * omega(c // 2, d)) for c in range(d)]

    return torch.tensor([row(pos) for pos in range(T)], dtype=torch.float64)  # (T, d)


def layout_said(pe: torch.Tensor, T: int, d: int) -> str:
    """What a table that is not the paper's is, in words: the halves, sin and cos swapped, or other."""
    if pe.shape != (T, d):
        return f"a [T, d] = [{T}, {d}] table"
    near = lambda want: (pe.double() - want).abs().max().item() < 1e-4  # noqa: E731
    if near(paper_table(T, d, halves=True)):
        return (
            "the halves layout (every sine in the first d / 2 columns, every cosine in the last); "
            "the course interleaves them: the sine of pair i in column 2i, its cosine in 2i + 1"
        )
    if near(paper_table(T, d, math.cos, math.sin)):
        return (
            "sin and cos swapped inside each pair (the cosine in the even column 2i); "
            "the paper's PE(pos, 2i) is the sine, PE(pos, 2i + 1) the cosine"
        )
    origin = torch.tensor([0.0, 1.0] * (d // 2), dtype=torch.float64)  # (d,) sin 0, cos 0
    if not torch.allclose(pe[0].double(), origin, atol=1e-4):  # any ω gives angle 0 at pos 0
        return (
            "row 0 is not position 0 (whose pairs are all sin 0 = 0, cos 0 = 1, whatever ω_i): "
            "row pos holds position pos, counted up from 0"
        )
    if (pe.double() - paper_table(T, d)).abs().max() < 2e-3:
        return (
            "right to about 3 decimals, as float16 or bfloat16 round: the table is computed "
            "and held in float32 or wider (the dtype of its torch.zeros, its arange)"
        )
    return "PE(pos, 2i) = sin(pos·ω_i) and PE(pos, 2i + 1) = cos(pos·ω_i), ω_i = 10000^(-2i/d)"


@pytest.mark.todo("task 1.1")
@pytest.mark.core  # its parity, and its trap: sin and cos in halves
def test_sinusoidal_matches_the_papers_formula_computed_one_entry_at_a_time(layers):
    T, d = 40, 12
    pe = layers.sinusoidal(T, d)
    want = paper_table(T, d).float()  # (T, d) PE(pos, 2i) = sin, PE(pos, 2i + 1) = cos
    expect.equal("sinusoidal(40, 12)'s dtype", pe.dtype, torch.float32,
                 "computed in float64 for its digits, returned as float32")  # fmt: skip
    expect.close("sinusoidal(40, 12) - the paper's PE", pe, want, atol=FLOAT32,
                 why=layout_said(pe, T, d))  # fmt: skip


@pytest.mark.todo("task 1.1")
def test_sinusoidal_keeps_every_digit_at_position_10000(layers):
    short = layers.sinusoidal(40, 12)  # (40, 12) the cause first: the layout, at small positions
    expect.close("sinusoidal(40, 12) - the paper's PE", short, paper_table(40, 12).float(),
                 atol=FLOAT32, why=layout_said(short, 40, 12))  # fmt: skip
    pos, d = 10_000, 64
    pe = layers.sinusoidal(pos + 1, d)[pos]  # (d,) the row of position 10^4
    want = torch.tensor(
        [(math.sin if c % 2 == 0 else math.cos)(pos * omega(c // 2, d)) for c in range(d)]
    )  # (d,) float32 of float64 angles
    expect.close("sinusoidal(10001, 64)[10000] - the paper's PE", pe, want, atol=1e-6,
                 why="compute the angles in float64: in float32, pos·ω at pos = 10^4 keeps "
                 "only about three decimals")  # fmt: skip


@pytest.mark.todo("task 1.1")
@pytest.mark.core  # its property
def test_sinusoidal_pos_plus_k_is_pos_rotated_by_an_angle_of_k_only(layers):
    T, d = 64, 8
    pe = layers.sinusoidal(T, d).double()  # (T, d)
    for k in (1, 3, 17):
        s, c = pe[k, 0::2], pe[k, 1::2]  # (d/2,) sin(k·ω_i), cos(k·ω_i): the angle of k alone
        a, b = pe[: T - k, 0::2], pe[: T - k, 1::2]  # (T - k, d/2) the pairs at pos
        turned_sin = a * c + b * s  # sin(x + y) = sin x cos y + cos x sin y
        turned_cos = b * c - a * s  # cos(x + y) = cos x cos y - sin x sin y
        got = torch.stack((pe[k:, 0::2], pe[k:, 1::2]))  # (2, T - k, d/2) the pairs at pos + k
        expect.close(
            f"pairs at pos + {k} - pairs at pos rotated by the angle at {k}",
            got,
            torch.stack((turned_sin, turned_cos)),
            atol=FLOAT32,
            why="each pair is (sin, cos) of one angle, interleaved",
        )


@pytest.mark.todo("task 1.1")
def test_sinusoidal_of_one_position_and_one_pair_is_sin_0_cos_0(layers):
    expect.equal("sinusoidal(1, 2)", layers.sinusoidal(1, 2), torch.tensor([[0.0, 1.0]]))
    pe = layers.sinusoidal(3, 2)  # (T, 2): one pair, ω_0 = 1, at positions 0, 1, 2
    want = torch.tensor([[math.sin(t), math.cos(t)] for t in range(3)])  # (3, 2)
    expect.close("sinusoidal(3, 2)", pe, want, atol=FLOAT32,
                 why="one pair per row at every T: its (T, 1) angles keep both axes")  # fmt: skip


@pytest.mark.given  # the argument checks come before your code
@pytest.mark.parametrize(("T", "d"), [(0, 8), (8, 7), (8, 0), (2.0, 8), (True, 8)])
def test_sinusoidal_refuses_bad_sizes(layers, T, d):
    with pytest.raises(ValueError, match="must be (a positive int|even)"):
        layers.sinusoidal(T, d)


# ---- rotary


def complex_rope(x: torch.Tensor, start: int, sign: int = 1, swapped: bool = False) -> torch.Tensor:
    """RoPE as the paper writes it: adjacent pairs as complex numbers times e^{i·m·ω}, in float64
    (sign -1: e^{-i·m·ω}, the turn the wrong way a bug makes; swapped: cos and sin exchanged,
    i·e^{-i·m·ω})."""
    T, d_head = x.shape[-2:]
    z = torch.view_as_complex(x.double().reshape(*x.shape[:-1], d_head // 2, 2).contiguous())
    w = torch.tensor([omega(i, d_head) for i in range(d_head // 2)], dtype=torch.float64)
    m = torch.arange(start, start + T, dtype=torch.float64)
    turn = torch.polar(torch.ones(T, d_head // 2, dtype=torch.float64), sign * torch.outer(m, w))
    turn = 1j * turn.conj() if swapped else turn  # (T, d_head/2)
    return torch.view_as_real(z * turn).flatten(-2)  # (..., T, d_head)


@pytest.mark.todo("task 1.2")
@pytest.mark.core  # its direction: a turn by +m·ω, whatever the pairing (d_head = 2: one pair)
def test_rope_turns_each_pair_by_plus_m_omega_counterclockwise(layers):
    x = torch.tensor([[1.0, 0.0]]).repeat(5, 1)  # (T, 2): the unit vector (1, 0) at every position
    m = torch.arange(5, dtype=torch.float32)  # ω_0 = 1: the angle is the position m itself
    got = layers.rope(x, 0)  # (5, 2); rope(x), start's default, is the identity test's
    expect.shape("rope(x, 0)", got, (5, 2),
                 "x's shape kept, a 2-D x (T, d_head) = (5, 2) too: its cos and sin are (T, "
                 "d_head / 2), with no axis of their own in front (they broadcast over x's)")  # fmt: skip
    why = "(1, 0) turned by +m·ω is (cos m, sin m)"
    for wrong, shown, said in (  # the two mistakes a wrong turn of (1, 0) shows
        ((torch.cos(m), -torch.sin(m)), "(cos m, -sin m)", "the angle's sign flipped: each pair "
         "turned the wrong way"),
        ((torch.sin(m), torch.cos(m)), "(sin m, cos m)", "cos and sin swapped: position 0 is "
         "not the identity"),
    ):  # fmt: skip
        turned = torch.stack(wrong, dim=-1).double()  # (5, 2); got's dtype is another test's
        if got.shape == (5, 2) and torch.allclose(got.double(), turned, atol=FLOAT32):
            why = f"{why}, not {shown}: {said}"
    expect.close("rope of (1, 0) at positions 0 to 4", got,
                 torch.stack((torch.cos(m), torch.sin(m)), dim=-1), atol=FLOAT32,
                 why=why)  # fmt: skip


def default_kept(layers) -> None:
    """rope's start defaults to 0, as the starter's def line gives it: else that, in words, before
    a test calls rope(x) (a default of None is refused by the given check, far from the cause)."""
    start = inspect.signature(layers.rope).parameters["start"].default  # what rope(x) starts at
    expect.equal("start's default, what rope(x) begins at", start, 0,
                 f"start defaults to {start!r} in rope's {expect.DEF_LINE}: rope(x) begins at "
                 "position 0, as the starter gives it")  # fmt: skip


def halves_rope(x: torch.Tensor, start: int) -> torch.Tensor:
    """RoPE with GPT-NeoX's pairing, column i with column i + d_head / 2 (a bug here), float64."""
    half = x.shape[-1] // 2
    a, b = x.double()[..., :half], x.double()[..., half:]  # (..., T, d_head/2) each
    z = torch.stack((a, b), dim=-1).flatten(-2)  # (..., T, d_head) the halves' pairs side by side
    turned = complex_rope(z, start)  # (..., T, d_head)
    return torch.cat((turned[..., 0::2], turned[..., 1::2]), dim=-1)  # back to the halves


def rope_said(got: torch.Tensor, x: torch.Tensor, start: int) -> str:
    """What a rope that is not the paper's did, in words: which pairing, which way, which start."""
    near = lambda want: (got.double() - want).abs().max().item() < 1e-4  # noqa: E731
    if near(complex_rope(x, start, sign=-1)):
        return (
            "each pair turned the wrong way, by -m·ω_i: the angle's sign flipped; a pair (a, b) "
            "turned by θ is (a cos θ - b sin θ, a sin θ + b cos θ)"
        )
    if near(complex_rope(x, start, swapped=True)):
        return (
            "cos and sin swapped: each pair (a, b) came back as (a sin θ - b cos θ, a cos θ + "
            "b sin θ), so position 0 is not the identity; look at which of angle.cos() and "
            "angle.sin() each name holds"
        )
    if near(halves_rope(x, start)):
        return (
            "column i paired with column i + d_head / 2 (GPT-NeoX's halves); the course pairs "
            "adjacent columns (2i, 2i + 1), as in the paper"
        )
    if start and near(complex_rope(x, 0)):
        return "row t turned as if the rows started at position 0: row t sits at start + t"
    if start and near(complex_rope(x, 2 * start)):
        return "row t turned by (2·start + t)·ω_i: start counted twice; row t sits at start + t"
    if near(complex_rope(x, start + 1)):
        return "row t turned by (start + t + 1)·ω_i, one position on: the first row sits at start"
    T = x.shape[-2]
    if T > 1 and near(torch.cat([complex_rope(x[..., t : t + 1, :], start) for t in range(T)], -2)):
        return "every row turned by start·ω_i alone: row t sits at start + t, one position each"
    if T > 1 and near(complex_rope(x, start - T + 1)):
        return (
            f"row t turned by (start - {T - 1} + t)·ω_i: the rows end at start; they begin "
            "there, row t at start + t"
        )
    if near(complex_rope(x, start).unflatten(-1, (-1, 2)).flip(-1).flatten(-2)):
        return (
            "each turned pair written back as (b', a'): column 2i holds a' = a cos θ - b sin θ, "
            "column 2i + 1 holds b' = a sin θ + b cos θ"
        )
    if near(x.double() + complex_rope(x, start)):
        return "x plus its turned pairs: rope returns the turned pairs alone, in x's place"
    if near(cos_for_sin(x, start)):
        return "cos in sin's place too: each pair (a, b) came back as (a - b, a + b)·cos θ"
    a, b = x.double()[..., 0::2], x.double()[..., 1::2]  # (..., T, d_head/2) each
    if near(turned_pairs(a, b, start, in_turn=True)):
        return (
            "b's new coordinate read the a already turned: both are computed from the pair as it "
            "was, (a cos θ - b sin θ, a sin θ + b cos θ), from one line or from copies"
        )
    for name, one in (("b", "x[..., 1:2]"), ("a", "x[..., 0:1]")):
        column = x.double()[..., 1:2] if name == "b" else x.double()[..., 0:1]  # (..., T, 1)
        if near(turned_pairs(column if name == "a" else a, column if name == "b" else b, start)):
            every = "x[..., 1::2], the odd" if name == "b" else "x[..., 0::2], the even"
            return (
                f"{name} is one column, {one}, the same in every pair: {name} is {every} columns "
                "(a step of 2 from the start, to the end)"
            )
    if got.shape == x.shape and not near_norms(got, x):
        return (
            "a row's length changed, which no turn does: both new coordinates of a pair are "
            "computed from the pair as it was, with cos θ and sin θ: (a cos θ - b sin θ, a sin θ + "
            "b cos θ), signs included"
        )
    return "each adjacent pair (2i, 2i + 1) of row t turned by the angle (start + t)·ω_i"


def turned_pairs(
    a: torch.Tensor, b: torch.Tensor, start: int, in_turn: bool = False
) -> torch.Tensor:
    """The pairs (a, b), float64 (..., T, d_head/2) or one column, turned and interleaved (..., T,
    d_head); in_turn: b's coordinate from the a already turned (a bug here)."""
    T, pairs = a.shape[-2], max(a.shape[-1], b.shape[-1])
    w = torch.tensor([omega(i, 2 * pairs) for i in range(pairs)], dtype=torch.float64)
    angle = torch.outer(torch.arange(start, start + T, dtype=torch.float64), w)  # (T, d/2)
    new_a = a * angle.cos() - b * angle.sin()  # (..., T, d_head/2)
    new_b = (new_a if in_turn else a) * angle.sin() + b * angle.cos()  # (..., T, d_head/2)
    return torch.stack((new_a, new_b), dim=-1).flatten(-2)  # (..., T, d_head)


def cos_for_sin(x: torch.Tensor, start: int) -> torch.Tensor:
    """RoPE with cos θ in sin θ's place as well (a bug here), float64: (a - b, a + b)·cos θ."""
    T, d_head = x.shape[-2:]
    w = torch.tensor([omega(i, d_head) for i in range(d_head // 2)], dtype=torch.float64)
    c = torch.outer(torch.arange(start, start + T, dtype=torch.float64), w).cos()  # (T, d/2)
    a, b = x.double()[..., 0::2], x.double()[..., 1::2]  # (..., T, d_head/2) each
    return torch.stack((a * c - b * c, a * c + b * c), dim=-1).flatten(-2)  # (..., T, d_head)


def near_norms(got: torch.Tensor, x: torch.Tensor) -> bool:
    """Has every row of `got` the length of x's row (as a turn of its pairs keeps it)?"""
    return torch.allclose(got.double().norm(dim=-1), x.double().norm(dim=-1), atol=1e-4)


FAR = (  # at 10^4
    "; compute the positions, the frequencies ω_i, the angles and their cos and sin in float64, "
    "then cast to x's dtype"
)


def near_start(layers, x: torch.Tensor) -> bool:
    """Is rope right at start 0 (so what goes wrong far along is the angles' precision)?"""
    return bool(torch.allclose(layers.rope(x, 0).double(), complex_rope(x, 0), atol=FLOAT32))


@pytest.mark.todo("task 1.2")
@pytest.mark.core  # its parity, and its trap: the halves pairing
@pytest.mark.parametrize("start", [0, 7, 10_000])
def test_rope_matches_the_complex_number_computation(layers, start):
    x = randn(2, 3, 10, 16, seed=1)  # (B, h, T, d_head)
    got = layers.rope(x, start)
    expect.equal("entries of x changed by rope(x)", int((x != randn(2, 3, 10, 16, seed=1)).sum()), 0,
                 "rope returns a new tensor: writing the turned pairs into x changes the queries "
                 "and keys the caller still holds")  # fmt: skip
    expect.shape("rope(x)", got, x.shape)
    expect.close(
        f"rope(x, start={start}) - complex rope (adjacent pairs)",
        got.double(),
        complex_rope(x, start),
        atol=FLOAT32,
        why=rope_said(got, x, start) + (FAR if start > 1000 and near_start(layers, x) else ""),
    )


@pytest.mark.todo("task 1.2")
def test_rope_returns_the_dtype_of_x(layers, dtype):
    x = randn(2, 4, 8, seed=7, dtype=dtype)  # (B, T, d_head)
    got = layers.rope(x, 3)
    expect.equal(f"rope({str(dtype).removeprefix('torch.')} x).dtype", got.dtype, dtype,
                 "cast cos and sin to x's dtype, turn x's own columns, uncast, and cast nothing "
                 "after: a result in another dtype than the model's weights makes its next "
                 "matmul refuse")  # fmt: skip


@pytest.mark.todo("task 1.2")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_rope_of_a_half_precision_x_far_along_turns_by_the_right_angles(layers, dtype):
    x = randn(2, 4, 8, seed=7, dtype=dtype)  # (B, T, d_head): bfloat16 counts exactly to 256
    got = layers.rope(x.clone(), 3000)  # (B, T, d_head) in x's dtype: x kept for the expected
    why = "the positions and angles in float64, only cos and sin cast to x's dtype: in x's "
    why += "dtype, 3000 + t is not itself"
    name = f"rope({str(dtype).removeprefix('torch.')} x, start=3000)"
    expect.close(name, got.double(), complex_rope(x.double(), 3000), atol=0.05, why=why)


@pytest.mark.todo("task 1.2")
def test_rope_keeps_every_rows_norm(layers):
    x = randn(4, 32, 16, seed=2)  # (B, T, d_head)
    got = layers.rope(x.clone(), 5)  # x kept as it was for the expected norms
    expect.close("|rope(x)| - |x| per row", got.norm(dim=-1), x.norm(dim=-1), atol=FLOAT32)


@pytest.mark.todo("task 1.2")
def test_rope_passes_the_gradient_to_x(layers):
    x = randn(2, 5, 8, seed=4).requires_grad_(True)  # (B, T, d_head): the queries of a model
    out = layers.rope(x, 3)  # (B, T, d_head)
    expect.equal("rope(x, 3).requires_grad, for an x that requires grad", out.requires_grad, True,
                 "rope is part of the graph: W_Q and W_K learn through it (no .detach(), no "
                 "torch.no_grad())")  # fmt: skip
    out.sum().backward()  # d/dx of the sum: each pair (a, b) gives (cos + sin, cos - sin)
    w = torch.tensor([omega(i, 8) for i in range(4)], dtype=torch.float64)
    angle = torch.outer(torch.arange(3, 8, dtype=torch.float64), w)  # (T, d_head/2)
    want = torch.stack((angle.cos() + angle.sin(), angle.cos() - angle.sin()), dim=-1).flatten(-2)
    expect.close("x.grad after rope(x, 3).sum().backward()", x.grad.double(),
                 want.expand(2, 5, 8), 1e-5, "each pair's turn, transposed, on the ones")  # fmt: skip


@pytest.mark.todo("task 1.2")
def test_rope_at_position_0_is_the_identity(layers):
    x = randn(3, 1, 8, seed=3)  # (B, T = 1, d_head): one row, at position 0
    expect.equal("rope(x) at position 0", layers.rope(x.clone(), 0), x, "a turn by angle 0")
    default_kept(layers)
    expect.equal("rope(x) with start left out", layers.rope(x.clone()), x, "start defaults to 0")
    x = randn(3, 1, 8, seed=3, dtype=torch.float64)  # float64 digits: a turn by 0 keeps them all
    expect.equal("rope(float64 x) at position 0", layers.rope(x.clone(), 0), x,
                 "x's own digits: its columns turned in x's dtype, never cast (x.float())")  # fmt: skip


@pytest.mark.todo("task 1.2")
@pytest.mark.core  # its property
def test_rope_scores_depend_on_n_minus_m_only(layers):
    """Shift the query and the key by the same s: the score q_m · k_n stays (float32 tolerance)."""
    q, k = randn(1, 16, seed=4), randn(1, 16, seed=5)  # (1, d_head) each
    for m, n in ((0, 3), (5, 2), (9, 9)):
        score = (layers.rope(q.clone(), m) * layers.rope(k.clone(), n)).sum().item()  # q_m · k_n
        for s in (1, 10, 200):
            shifted = (layers.rope(q.clone(), m + s) * layers.rope(k.clone(), n + s)).sum().item()
            expect.close(f"score(q at {m + s}, k at {n + s}) - score at ({m}, {n})", shifted,
                         score, atol=1e-4, why="R(m)ᵀ R(n) = R(n - m)")  # fmt: skip


@pytest.mark.todo("task 1.2")
def test_rope_keeps_the_dtype_and_turns_float64_exactly(layers):
    x = randn(6, 8, seed=6, dtype=torch.float64)  # (T, d_head)
    got = layers.rope(x.clone(), 3)  # x kept as it was for the expected
    expect.equal("rope(float64).dtype", got.dtype, torch.float64)
    expect.close("rope(x) - complex rope, float64", got, complex_rope(x, 3), atol=1e-12)


@pytest.mark.given
@pytest.mark.parametrize(
    ("x", "start", "says"),
    [
        (torch.zeros(4, 7), 0, "d_head must be even"),
        (torch.zeros(4, 8, dtype=torch.int64), 0, "float tensor"),
        (torch.zeros(8), 0, r"\[\.\.\., T, d_head\]"),
        (torch.zeros(4, 8), -1, "start must be an int >= 0"),
        (torch.zeros(4, 8), 1.5, "start must be an int >= 0"),
        ([[0.0, 0.0]], 0, "got list"),
    ],
)
def test_rope_refuses_bad_input_naming_what_came(layers, x, start, says):
    with pytest.raises(ValueError, match=says):
        layers.rope(x, start)
