"""A handout's expected test count, pytest's own (a run never counts tests):
`python -m tools.counts --write-docs` writes it; tests/test_docs.py collects again and compares."""

import contextlib
import io
import sys

from common import STEPS_DIR
from common.docs import write_block
from tools import run_pytest

BLOCKS = {"lab-01": "lab-01-test-count"}  # step -> the block of its README that states its count


class Count:
    """A pytest plugin that keeps how many tests a session collected."""

    def pytest_collection_finish(self, session):
        self.n = len(session.items)


def count_block(step: str) -> str:
    """The handout's line: the command that runs the step's tests, and how many pass (pytest's
    count of the tests `pixi run test-<step>` runs, collected in this process)."""
    count, args = Count(), [str(STEPS_DIR / step), "--impl", "solution", "--collect-only", "-q"]
    with contextlib.redirect_stdout(io.StringIO()):
        run_pytest(args, plugins=[count])
    return (
        f"`pixi run test-{step}` (`python -m pytest steps/{step} --impl solution`): "
        f"Expected: `{count.n} passed`.\n"
    )


if __name__ == "__main__":
    if "--write-docs" in sys.argv:
        for step, name in BLOCKS.items():
            changed = write_block(STEPS_DIR / step / "README.md", name, count_block(step))
            print(f"steps/{step}/README.md: {'updated' if changed else 'already up to date'}")
