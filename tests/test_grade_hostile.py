"""Hostile student code grades to 0 for the TODO it breaks, with a reason, in under a minute, and
nothing outside the graded copy changes (one lab-01 submission per case: the reference with the
hostile lines at the top of causal_mask, task 3, so every test that calls it meets them)."""

import hashlib
import re
import time
from pathlib import Path

import pytest

from common import REPO_ROOT
from tests.test_grade import PER_TEST, STEP, caught_up_starter, with_change
from tools import sandbox
from tools.grade import grade, text
from tools.sandbox import resource


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    return caught_up_starter(tmp_path_factory.mktemp("caught-up"))


LINE = '    check_size(seq_len, "seq_len")  # given: T must be a positive int'
# Hostile code at the top of causal_mask (task 3), so every test that calls it meets it
HOSTILE = {
    "a loop that never ends": ("    while True:\n        pass", r"TookTooLong: still running"),
    "a 20 GB allocation": (
        "    torch.empty(20 * 2**30, dtype=torch.uint8).fill_(1)",
        r"can't allocate memory",
    ),
    "os._exit(0)": ("    import os\n\n    os._exit(0)", r"EndsPython: os._exit\(0\) would end"),
    "replacing torch.allclose": (
        "    torch.allclose = lambda *a, **k: True\n"
        "    return torch.triu(torch.ones(seq_len, seq_len)).bool()",
        r"your code replaced torch.allclose during this test",
    ),
    "writing into the tests' folder": (
        "    from pathlib import Path\n\n"
        "    for test in (Path(__file__).parents[1] / 'tests').glob('test_*.py'):\n"
        "        test.write_text('def test_ok():\\n    pass\\n')",
        r"Read-only file system",
    ),
    "importing the step's own reference": (
        "    from common.loader import load\n\n"
        "    return load('lab-01', 'attention', 'solution').causal_mask(seq_len)",
        r"the graded copy holds no reference solution",
    ),
    "opening a socket": (
        "    import socket\n\n    socket.create_connection(('pypi.org', 443), timeout=3).close()",
        r"gaierror|Network is unreachable",
    ),
}


def snapshot(*folders: Path) -> dict[str, str]:
    """sha256 of every file under `folders` (caches left out): what must not change."""
    return {
        str(p): hashlib.sha256(p.read_bytes()).hexdigest()
        for folder in folders
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


@pytest.mark.process
@pytest.mark.slow  # one contained check of lab-01 per case, 4 to 8 s each
@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_submission_grades_to_0_with_a_reason_and_changes_nothing(
    reference, tmp_path, case
):
    code, reason = HOSTILE[case]
    if case == "a 20 GB allocation" and resource is None:
        pytest.skip("no memory limit on this OS (no resource module): the allocation would run")
    sub = with_change(reference, tmp_path / "sub", LINE, f"{LINE}\n{code}")
    before = snapshot(REPO_ROOT / "steps" / STEP, REPO_ROOT / "common", REPO_ROOT / "tests", sub)
    start = time.monotonic()
    g = grade(STEP, sub, per_test=PER_TEST)
    assert time.monotonic() - start < 60, text(g)
    task3 = next(line for line in g.lines if "task 3" in line.todo)
    assert task3.score == 0 and task3.state == "bug", text(g)
    if "no network namespace" in " ".join(g.notes) and case == "opening a socket":
        assert "the graded code can reach the network" in text(g)  # said where it is not contained
    else:
        assert re.search(reason, task3.reason), text(g)
    if case != "a loop that never ends":  # the loop stops the run: the later TODOs do not run
        assert g.score == 6, text(g)  # the TODOs it does not break keep their marks
    assert g.notes[0].startswith("contained: "), text(g)
    after = snapshot(REPO_ROOT / "steps" / STEP, REPO_ROOT / "common", REPO_ROOT / "tests", sub)
    assert after == before, "a file outside the graded copy changed"


@pytest.mark.process
@pytest.mark.slow  # one contained check of lab-01, about 4 s
def test_where_no_namespace_can_be_made_a_changed_course_file_scores_0_and_says_so(
    reference, tmp_path, monkeypatch
):
    """macOS, Windows, a container without unshare: the copy's tests can be written, so the grade
    compares the copy's course files before and after the run."""
    monkeypatch.setattr(sandbox, "_namespaces_work", lambda: "no network namespace (a test)")
    code, _ = HOSTILE["writing into the tests' folder"]
    sub = with_change(reference, tmp_path / "sub", LINE, f"{LINE}\n{code}")
    before = snapshot(REPO_ROOT / "steps" / STEP, REPO_ROOT / "tests", sub)
    g = grade(STEP, sub, per_test=PER_TEST)
    assert g.score == 0, text(g)
    assert all("changed steps/lab-01/tests/test_" in line.reason for line in g.lines), text(g)
    assert "the graded code can reach the network" in text(g)
    assert snapshot(REPO_ROOT / "steps" / STEP, REPO_ROOT / "tests", sub) == before
