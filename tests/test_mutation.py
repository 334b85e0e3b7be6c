"""The in-process guard of the mutation score (tests/test_curated_bugs.py): each step's own suite
passes unbroken when run nested, so a kill there means the variant failed a test."""

import pytest

from tools.symptoms import first_failure, targets


@pytest.mark.parametrize("step", [step for step, _, _ in targets()])
def test_the_unbroken_suite_passes_in_process(step):
    """So a 'kill' means the variant failed a test, not that nested runs are broken."""
    run = first_failure(step, "", None)
    assert run.nodeid is None, f"steps/{step}'s own suite fails unbroken, first at {run.nodeid}"
    assert run.ran > 0, f"steps/{step}/tests ran no test in process"
