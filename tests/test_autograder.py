"""The Gradescope bundle: built by one command, unpacked into an /autograder-shaped folder, its
run_autograder grades three submissions, and each results.json validates against the format."""

import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest

from tests.test_grade import caught_up_starter, shipped_starter, with_change
from tools.autograder import main
from tools.grade import MARKS
from tools.screens import BUGS


@pytest.fixture(scope="module")
def shipped(tmp_path_factory) -> Path:
    return shipped_starter(tmp_path_factory.mktemp("shipped"))


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    return caught_up_starter(tmp_path_factory.mktemp("caught-up"))


SCHEMA = json.loads((Path(__file__).parent / "gradescope_results.schema.json").read_text("utf-8"))


@pytest.fixture(scope="module")
def autograder(tmp_path_factory) -> Path:
    """/autograder as Gradescope lays it out: the zip unpacked into source/ (modes kept, as unzip
    keeps them), run_autograder copied beside it; setup.sh not run (this venv stands in)."""
    tmp = tmp_path_factory.mktemp("bundle")
    assert main(["lab-01", "--out", str(tmp / "autograder.zip")]) == 0
    root = tmp / "autograder"
    with zipfile.ZipFile(tmp / "autograder.zip") as z:
        names = z.namelist()
        assert {"setup.sh", "run_autograder"} <= set(names)  # at the zip's root, as Gradescope asks
        assert not any(n.startswith(("steps/step-04", ".venv", "out/")) for n in names), names
        for info in z.infolist():
            path = Path(z.extract(info, root / "source"))
            path.chmod(info.external_attr >> 16 & 0o777)
    assert os.access(root / "source" / "run_autograder", os.X_OK)
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    setup = (root / "source" / "setup.sh").read_text(encoding="utf-8")
    assert "--require-hashes -r requirements.lock" in setup and "-e ." in setup
    return root


def run_autograder(root: Path, submission: Path) -> tuple[dict, str]:
    """Place `submission` in /autograder/submission, run run_autograder; (results.json, stdout)."""
    shutil.rmtree(root / "submission", ignore_errors=True)
    shutil.rmtree(root / "results", ignore_errors=True)
    shutil.copytree(submission, root / "submission")
    env = os.environ | {"AUTOGRADER_ROOT": str(root), "AUTOGRADER_PYTHON": sys.executable}
    env.pop("COURSE_STEPS_DIR", None)  # the bundle's own steps/, as on Gradescope
    done = subprocess.run(
        [str(root / "run_autograder")], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (root / "submission" / "__pycache__").exists()  # graded on a copy, not in place
    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    return results, done.stdout


@pytest.mark.slow  # one contained check of lab-01 per submission, about 5 s each
@pytest.mark.parametrize("case", ["starter", "reference", "no max shift"])
def test_run_autograder_writes_a_valid_results_json(autograder, shipped, reference, tmp_path, case):
    if case == "starter":
        submission = shipped
    elif case == "reference":
        submission = reference
    else:
        _, old, new, _, _ = next(b for b in BUGS if b[0] == case)
        submission = with_change(reference, tmp_path / "sub", old, new)
    results, stdout = run_autograder(autograder, submission)
    jsonschema.validate(results, SCHEMA)
    marks = dict((todo, mark) for mark, todo, _ in MARKS.findall(stdout))  # the check's screen
    assert [f"TODO({todo})" for todo in marks] == [t["name"] for t in results["tests"]], stdout
    for t, mark in zip(results["tests"], marks.values(), strict=True):  # [x] is full marks, only it
        assert (mark == "x") == (t["score"] == t["max_score"]), (t, stdout)
    scores = [t["score"] for t in results["tests"]]
    assert results["score"] == sum(scores)
    assert sum(t["max_score"] for t in results["tests"]) == 7
    if case == "starter":
        assert results["score"] == 0
        assert all(t["output"] for t in results["tests"]), results  # each says why
    elif case == "reference":
        assert results["score"] == 7, results
    else:
        task1, *others = results["tests"]
        assert task1["score"] < 1 and "bug" in task1["tags"] and task1["output"], task1
        assert all(t["score"] == 1 for t in others), results  # the TODOs it does not break
    assert stat.S_IMODE((autograder / "run_autograder").stat().st_mode) & 0o100
