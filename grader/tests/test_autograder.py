"""The Gradescope bundle: built by one command outside the repository, unpacked into an
/autograder-shaped folder, its run_autograder grades a submission within its wall limit, and the
results.json validates against Gradescope's format; results.json's fields, on a stand-in grade."""

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest

from common import REPO_ROOT
from common.course import course_step
from common.envreport import read_pins
from grader.autograder import CPU_LOCK, PIP, WALL, main, setup_script
from grader.engine import build_base, fingerprint, held_out, owners_path
from grader.grade import Grade, Line
from grader.gradescope import results_json
from grader.tests.test_grade import caught_up_starter, with_change
from tools.screens import bugs

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
    prepare = re.search(r"^\"\$py\" -m (grader\.grade lab-01 --prepare)$", setup_script(), re.M)
    assert prepare, "setup.sh reads each TODO's own tests into the image"
    # the owners of this repository's lab-01 base, where the image keeps its own: where the suite
    # has read them, --prepare finds them (the same base and grader, so the same name), else it
    # reads them; either way the image's are under the repository's name
    held = held_out("lab-01", None)  # the course's own held-out tests: every grade runs them
    ours = owners_path("lab-01", fingerprint(build_base("lab-01", tmp / "ours"), held))
    image = root / "source" / ours.relative_to(REPO_ROOT)
    if ours.is_file():
        image.parent.mkdir(parents=True)
        shutil.copy2(ours, image)
    env = os.environ.copy()
    env.pop("COURSE_STEPS_DIR", None)
    cmd = [sys.executable, "-m", *prepare[1].split()]  # as setup.sh, with this venv
    done = subprocess.run(cmd, cwd=root / "source", env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    kept = sorted(p.name for p in image.parent.glob("*.json"))
    assert kept == [image.name], f"expected the image's owners under {image.name}, got {kept}"
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


@pytest.mark.process
@pytest.mark.slow  # setup.sh's --prepare and one contained grade, each a child
def test_run_autograder_writes_a_valid_results_json_before_gradescopes_limit(autograder, tmp_path):
    """A submission with the handout's first bug: task 1 partial, the others full."""
    bug = bugs()["no max shift"]
    reference = caught_up_starter(tmp_path / "caught-up")
    results, stdout = run_autograder(
        autograder, with_change(reference, tmp_path / "sub", bug.old, bug.new)
    )
    jsonschema.validate(results, SCHEMA)
    assert "contained" not in results["output"], results["output"]  # the sandbox: stdout only
    assert "contained: " in stdout, stdout  # ...where instructors read it
    names = [t["name"] for t in results["tests"]]
    assert names == [f"TODO({todo})" for todo in course_step("lab-01").regions()], names
    for t in results["tests"]:  # full marks, and only they, show as passed
        assert (t["score"] == t["max_score"]) == (t["status"] == "passed"), t
        assert t["output"], t  # each says why
    assert results["score"] == sum(t["score"] for t in results["tests"])
    assert sum(t["max_score"] for t in results["tests"]) == 7
    task1, *others = results["tests"]
    assert task1["score"] < 1 and task1["status"] == "failed" and task1["output"], task1
    assert all(t["score"] == 1 for t in others), results  # the TODOs it does not break
    assert stat.S_IMODE((autograder / "run_autograder").stat().st_mode) & 0o100
    run = (autograder / "run_autograder").read_text(encoding="utf-8")
    assert f"--wall {WALL}" in run and WALL < 600, run  # Gradescope's default limit: 600 s


def test_the_bundle_is_written_outside_the_repository_by_default(capsys):
    """The zip holds the step's reference: never where a graded copy of the repository looks."""
    assert main(["lab-01"]) == 0
    said = capsys.readouterr().out
    out = Path(re.search(r"wrote (\S+autograder-lab-01\.zip)", said)[1])
    try:
        assert out.is_file() and not out.resolve().is_relative_to(REPO_ROOT.resolve()), said
        assert stat.S_IMODE(out.parent.stat().st_mode) == 0o700, oct(out.parent.stat().st_mode)
    finally:
        shutil.rmtree(out.parent)
    with pytest.raises(SystemExit):
        main(["lab-01", "--out", str(REPO_ROOT / "out" / "autograder-lab-01.zip")])
    assert "inside the repository" in capsys.readouterr().err


def entries(lock: str) -> dict[str, str]:
    """A lock's entries by package name: each its `name==version` line, hashes and comments."""
    blocks = re.split(r"\n(?=[a-z0-9])", lock)
    return {m[1]: b for b in blocks if (m := re.match(r"([a-z0-9][a-z0-9_.-]*)==", b))}


@pytest.mark.process
def test_setup_installs_the_cpu_torch_the_rest_of_the_lock_by_hash_and_a_pinned_pip(tmp_path):
    setup = setup_script()
    assert subprocess.run(["bash", "-n"], input=setup, text=True).returncode == 0
    lines = setup.splitlines()
    apt = [ln for ln in lines if "apt-get install" in ln and "python3.12" in ln]
    assert apt and all("python3.12-venv" in ln for ln in apt), apt  # always, not only without 3.12
    assert not any(re.search(r"pip install .*(--upgrade|-U) pip", ln) for ln in lines), setup
    assert f"echo '{PIP}' > pip.lock" in lines and re.fullmatch(
        r"pip==[\d.]+ --hash=sha256:[0-9a-f]{64}", PIP
    )
    torch = f"torch=={read_pins()['torch']} --index-url https://download.pytorch.org/whl/cpu"
    assert any("--no-deps" in ln and ln.endswith(torch) for ln in lines), setup
    assert (
        f"{CPU_LOCK} > cpu.lock" in lines
        and '"$py" -m pip install --quiet --require-hashes -r cpu.lock' in lines
    )
    # The filter run on the real lock: torch and the CUDA build's packages out, every other
    # entry kept with its hashes
    shutil.copy(REPO_ROOT / "requirements.lock", tmp_path)
    cpu = subprocess.run(
        CPU_LOCK, shell=True, cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout
    lock = entries((tmp_path / "requirements.lock").read_text("utf-8"))
    kept = entries(cpu)
    dropped = lock.keys() - kept.keys()
    assert {"torch", "triton"} <= dropped and {"numpy", "sympy", "jinja2"} <= kept.keys(), dropped
    assert all(re.match(r"(torch|triton|nvidia-|cuda-)", n) for n in dropped), dropped
    assert all(kept[n] == lock[n] and "--hash=sha256:" in kept[n] for n in kept), cpu
    # ...and the README's CPU-only section tells students the same filter
    assert f"{CPU_LOCK} > .venv/cpu.lock" in (REPO_ROOT / "README.md").read_text("utf-8")


SANDBOX = "contained: no network (a new network namespace); course files read-only"
STAND_IN = [  # a step-04-like grade: one TODO done, one partial, one missing, an optional one
    ("step-04 4.2.1", "done", 1.0, 1.0, "done: 3 of 3 tests pass", 3, 3),
    ("step-04 4.2.2", "partial", 0.5, 1.0, "expected 0 above the diagonal, got 0.25", 2, 4),
    ("step-04 4.2.3", "not written", 0.0, 1.0, "missing from the submission: heads.py", 0, 2),
    ("step-04 optional 1: online_softmax", "not written", 0.0, 0.0, "optional, not written", 0, 0),
]


def test_results_json_follows_gradescopes_specification():
    """Statuses, tags, extra_data; the sandbox's line for instructors only, the files for all."""
    g = Grade("step-04", [Line(*line) for line in STAND_IN], [SANDBOX], 12.6, contained=False)
    g.missing, g.stray = ["heads.py"], ["notes.txt"]
    results = results_json(g)
    jsonschema.validate(results, SCHEMA)
    assert [t["status"] for t in results["tests"]] == ["passed", "failed", "failed", "failed"]
    same = Line("step-04 4.2.1", "step-04", 1.0, 1.0, "a state that repeats the step's tag")
    assert results_json(Grade("step-04", [same]))["tests"][0]["tags"] == ["step-04"]
    optional = results["tests"][3]  # 0 of 0: Gradescope would show it passed without a status
    assert optional["max_score"] == 0 and optional["status"] == "failed", optional
    assert optional["tags"] == ["step-04", "not written", "optional"], optional
    assert results["output_format"] == results["test_output_format"] == "text"
    assert all(t["output_format"] == "text" for t in results["tests"])
    assert results["score"] == 1.5 and results["execution_time"] == 13, results
    assert results["extra_data"] == {
        "step": "step-04",
        "passed": 5,  # the counted TODOs' own tests: 3 + 2 + 0
        "total": 9,
        "contained": False,
        "flagged": [],  # no copy left a process or disagreed with the grader's record
        "to_read": [],  # nothing its text hides from a reader
        "missing": ["heads.py"],
        "stray": ["notes.txt"],
    }, results["extra_data"]
    assert results["tests"][1]["extra_data"] == {
        "state": "partial", "counted": True, "passed": 2, "total": 4
    }  # fmt: skip
    assert SANDBOX not in json.dumps(results), results  # the grader's stdout carries it
    assert results["output"].splitlines() == [
        "step-04: 1.5 of 3",
        "missing from the submission (graded as not written): heads.py",
        "not a starter file (not graded): notes.txt",
    ], results["output"]
