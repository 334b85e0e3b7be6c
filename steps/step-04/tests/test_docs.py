"""The numbers in README.md are the numbers a fresh run prints."""

from decimal import Decimal, InvalidOperation

import pytest

from common.docs import parse_table, read_block

# Tolerance, per cell: one unit in the last digit the README prints. The value can sit next to a
# rounding boundary, and another CPU or BLAS may add the same floats in another order. Values
# below NOISE are float32 rounding errors: the equivariance and online checks compare outputs of
# size ~1, where one rounding unit is 2**-23 ~ 1.2e-7, and measure 1 or 2 such units. Their
# digits depend on the machine, so both sides only have to stay below NOISE = 1e-6, about 8
# rounding units; anything larger is no longer rounding of O(1) numbers and must match digits.
NOISE = 1e-6

# What a student whose code disagrees with the handout reads (maintainers: CONTRIBUTING.md).
DIFFER = "your numbers differ from the reference run this handout shows"


def _number(cell: str) -> Decimal | None:
    try:
        return Decimal(cell.removesuffix("%"))
    except InvalidOperation:
        return None


def cells_agree(readme: str, fresh: str) -> bool:
    """True if two table cells show the same number up to the tolerance above (or equal text)."""
    a, b = _number(readme), _number(fresh)
    if a is None or b is None:
        return readme == fresh
    if abs(a) < NOISE and abs(b) < NOISE:
        return True
    unit = Decimal(1).scaleb(a.as_tuple().exponent)  # "4.01" -> 0.01, "5.9e-01" -> 0.01
    return abs(a - b) <= unit


def test_readme_numbers_match_a_fresh_run(head, run):
    fresh = run.blocks(run.compute_required(head, **run.QUICK))
    # the rule itself, on examples
    assert cells_agree("4.01", "4.02") and not cells_agree("4.01", "4.03")
    assert cells_agree("9.4%", "9.5%") and not cells_agree("9.4%", "9.6%")
    assert cells_agree("1.2e-07", "3.0e-08") and not cells_agree("5.9e-01", "6.1e-01")
    assert not cells_agree("1.2e-07", "9.0e-05"), "9e-05 is far more than float32 rounding"
    for name, block in fresh.items():
        in_readme = read_block(run.README, name)
        assert in_readme.splitlines()[0] == block.splitlines()[0], f"{name}: header changed"
        rows, fresh_rows = parse_table(in_readme), parse_table(block)
        assert len(rows) == len(fresh_rows), f"{name}: {DIFFER}: {fresh_rows}"
        for row, fresh_row in zip(rows, fresh_rows, strict=True):
            assert all(map(cells_agree, row, fresh_row)) and len(row) == len(fresh_row), (
                f"{DIFFER}: table {name!r} says {row}, this run gives {fresh_row} "
                "(maintainers: CONTRIBUTING.md)"
            )


@pytest.mark.given  # counts FLOPs from the sizes: no head, so no TODO on its path
def test_cost_count_block_is_exactly_a_fresh_count(run):
    # Integers and their ratios only, no float sums in another order: every character reproduces,
    # the FLOP count's log-log slope below the table (the timed exponent's yardstick) included.
    fresh = run.cost_count_block()
    assert "FLOPs ~ T^1.87" in fresh
    assert read_block(run.README, "cost-count") == fresh, f"{DIFFER}: {fresh}"
