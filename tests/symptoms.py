"""Symptom -> failing test -> fix, per step, from common/broken.py: `python -m tests.symptoms --write-docs`."""

import contextlib
import io
import re
import sys

from common import STEPS_DIR
from common.broken import BUGS, PADDING_BUGS, Bug, broken_module
from common.docs import markdown_table, write_block
from common.loader import load_fresh, override
from tests.contracts import run_pytest

# (step, the module a variant replaces, the bugs that apply to it)
TARGETS = [("step-04", "head", BUGS), ("lab-01", "attention", BUGS + PADDING_BUGS)]
# The same arguments for the unbroken guard and every variant, so a kill can only be the variant's.
# Slow tests sit out: in the steps they only render figures, which takes seconds.
SUITE_ARGS = ["--impl", "solution", "-x", "-qq", "--no-header", "-m", "not slow"]
WHOLE_RUNS = re.compile(r"test_(docs|run|experiments)\.py")  # tests of whole runs and handouts


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
