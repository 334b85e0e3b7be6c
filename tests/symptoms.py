"""Symptom -> failing test -> fix, per step, from common/broken.py: `python -m tests.symptoms --write-docs`."""

import contextlib
import io
import sys
from types import ModuleType

import torch

from common import STEPS_DIR, WHOLE_RUNS
from common.broken import BUGS, PADDING_BUGS, Bug, broken_head, weights
from common.docs import markdown_table, write_block
from common.loader import load_fresh, override
from tests.contracts import run_pytest

# (step, the module a variant replaces, the bugs that apply to it)
TARGETS = [("step-04", "head", BUGS), ("lab-01", "attention", BUGS + PADDING_BUGS)]
# The same arguments for the unbroken guard and every variant, so a kill can only be the variant's.
# Slow tests sit out: in the steps they only render figures, which takes seconds.
SUITE_ARGS = ["--impl", "solution", "-x", "-qq", "--no-header", "--tb=no", "-m", "not slow"]


class FirstFailure:
    """A pytest plugin: tests of the code itself run first; remember the first test that fails."""

    def __init__(self):
        self.nodeid, self.ran = None, 0

    def pytest_collection_modifyitems(self, items):
        items.sort(key=lambda item: bool(WHOLE_RUNS.search(item.nodeid)))  # stable: keeps order

    def pytest_runtest_logreport(self, report):
        self.ran += report.when == "call"
        if report.failed and self.nodeid is None:
            self.nodeid = report.nodeid.split("tests/")[-1]


def broken_module(fresh: ModuleType, bug: Bug) -> ModuleType:
    """Make a freshly imported copy of a step's module commit `bug` (patches its globals)."""
    if hasattr(fresh, "Head"):
        fresh.Head = broken_head(fresh.Head, bug)
        return fresh
    if bug.mask is not None:
        fresh.causal_mask = bug.mask
    if bug.padding is not None:
        fresh.combine_causal_and_padding = bug.padding
    if bug.knobs:
        fresh.scaled_dot_product_attention = _broken_sdpa(fresh.scaled_dot_product_attention, bug)
    return fresh


def _broken_sdpa(reference, bug: Bug):
    """lab-01's scaled_dot_product_attention, with the reference's input checks and `bug`'s maths."""

    def scaled_dot_product_attention(q, k, v, mask=None, scale=None):
        reference(q, k, v, mask, scale)  # keeps the reference's ValueErrors for bad input
        keep = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool) if mask is None else mask
        if scale is not None and bug.knobs.get("scale", True):
            q = q * (scale * q.shape[-1] ** 0.5)  # weights() divides by sqrt(d_head) again
        A = torch.nan_to_num(weights(q, k, keep, **bug.knobs))  # (..., T_q, T_k); no NaN, as lab-01
        return A @ v, A  # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)

    return scaled_dot_product_attention


def first_failure(step: str, module: str, bug: Bug | None) -> FirstFailure:
    """Run `step`'s suite with `module` broken by `bug` (None: unbroken); .nodeid failed first."""
    plugin = FirstFailure()
    args = [str(STEPS_DIR / step / "tests"), *SUITE_ARGS]
    with contextlib.redirect_stdout(io.StringIO()):
        if bug is None:
            run_pytest(args, plugins=[plugin])
        else:
            fresh = load_fresh(STEPS_DIR / step / "solution", module)
            with override(step, module, broken_module(fresh, bug)):
                run_pytest(args, plugins=[plugin])
    return plugin


def table(step: str) -> str:
    """The handout's table: what each bug does, the test that catches it first, and the fix."""
    _, module, bugs = next(t for t in TARGETS if t[0] == step)
    cell = lambda text: text.replace("|", "\\|")  # noqa: E731 (a pipe would end the cell)
    rows = [
        [cell(b.breaks), f"`{first_failure(step, module, b).nodeid}`", cell(b.fix)] for b in bugs
    ]
    return markdown_table(["Symptom", "First test to fail", "Fix"], rows)


if __name__ == "__main__":
    if "--write-docs" in sys.argv:
        for step, _, _ in TARGETS:
            changed = write_block(STEPS_DIR / step / "README.md", "symptoms", table(step))
            print(f"steps/{step}/README.md: {'updated' if changed else 'already up to date'}")
