"""pixi.toml is valid and pinned, requirements.txt and its hashed lock pin the same, tooling is wired."""

import json
import os
import re
import subprocess
import sys
import tomllib

import pytest
import torch

from common import REPO_ROOT, command, envreport, shown
from common.docs import read_block
from common.envreport import normalise, read_pins, report

PIXI = tomllib.loads((REPO_ROOT / "pixi.toml").read_text(encoding="utf-8"))
PINS = read_pins()
LOCK_TEXT = envreport.LOCK.read_text(encoding="utf-8")
LOCK = read_pins(envreport.LOCK)
WORKFLOWS = REPO_ROOT / ".github" / "workflows"
# The schema ships beside the repo for maintainers (../shared); students don't have it.
SCHEMA = REPO_ROOT.parent / "shared" / "pixi" / "schema.json"


def test_pixi_toml_validates_against_the_official_schema():
    if not SCHEMA.is_file():
        pytest.skip(f"pixi's JSON schema is not at {SCHEMA}; only maintainers have that copy")
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.validate(PIXI, schema)
    assert PIXI["$schema"] == schema["$id"]


def test_pixi_solves_python_3_12_for_every_os_a_student_uses():
    ws = PIXI["workspace"]
    expected = {"linux-64", "linux-aarch64", "osx-arm64", "win-64"}
    assert set(ws["platforms"]) == expected, f"expected {expected}, got {ws['platforms']}"
    assert PIXI["dependencies"]["python"] == "3.12.*", PIXI["dependencies"]["python"]


def test_pixi_and_requirements_pin_the_same_versions_and_torch_is_the_cpu_build():
    pixi = {}
    for name, spec in PIXI["pypi-dependencies"].items():
        if name == envreport.PROJECT["name"]:
            continue  # the course itself, from this folder (next test)
        version = spec["version"] if isinstance(spec, dict) else spec
        assert version.startswith("=="), f"{name} is not pinned exactly in pixi.toml: {version}"
        pixi[normalise(name)] = version[2:]
    assert pixi == PINS
    torch = PIXI["pypi-dependencies"]["torch"]
    assert torch == {"version": "==2.15.0", "index": "https://download.pytorch.org/whl/cpu"}


def test_both_paths_install_the_course_itself_editable_and_pip_from_the_lock():
    """So `common` imports from a step's folder too; pyproject.toml's build backend is pinned."""
    assert PIXI["pypi-dependencies"][envreport.PROJECT["name"]] == {"path": ".", "editable": True}
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    backend = pyproject["build-system"]["requires"]
    assert backend == [f"flit_core=={PINS['flit-core']}"]  # what --no-build-isolation finds
    ci = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8").split("## Without pixi", 1)[1]
    assert f".venv/bin/{envreport.INSTALL}" in ci and readme.count(envreport.INSTALL) >= 2
    # and the pip path installs from the hashed lock, not from the top-level pins
    lock = r"^\.venv/bin/python -m pip install .*--require-hashes -r requirements\.lock$"
    assert re.search(lock, ci, re.M) and "-r requirements.txt" not in ci
    section = readme.split("\n## ", 1)[0]
    assert "python -m pip install --require-hashes -r requirements.lock" in section


def test_every_task_has_a_description():
    missing = [
        n for n, t in PIXI["tasks"].items() if not isinstance(t, dict) or not t.get("description")
    ]
    assert not missing, "add a description to these pixi.toml tasks:\n" + "\n".join(missing)


def test_read_pins_rejects_a_loose_pin(tmp_path):
    bad = tmp_path / "requirements.txt"
    bad.write_text("torch>=2\n", encoding="utf-8")
    with pytest.raises(ValueError, match="not an exact pin"):
        read_pins(bad)


def test_environment_report_names_what_matters_and_the_instruction_set():
    # a last-digit difference from a handout has a visible cause: another CPU or instruction set
    text = report()
    for word in ("python", "torch", "cpu", "threads", "os"):
        assert re.search(rf"^{word}\s", text, re.M), word
    capability = torch.backends.cpu.get_cpu_capability()
    assert re.search(
        rf"^cpu +\S.*, \d+ logical cores; torch dispatches to {capability}$", text, re.M
    )


def test_the_handouts_say_which_instruction_set_recorded_their_numbers():
    text = read_block(REPO_ROOT / "steps" / "lab-01" / "README.md", "lab-01-parity")
    assert re.search(r"^cpu +.*; torch dispatches to [A-Z]\w+$", text, re.M), (
        "re-record the block on an idle machine: python -m common.run lab-01 --write-docs"
    )


def test_the_lock_pins_as_requirements_do_with_hashes_and_names_its_task():
    assert {name: LOCK.get(name) for name in PINS} == PINS  # and PINS == pixi.toml's, above
    assert len(LOCK) > 2 * len(PINS)  # the dependencies are pinned too
    entries = re.split(r"\n(?=[A-Za-z])", LOCK_TEXT.split("\n", 2)[2])
    assert len(entries) == len(LOCK)
    for entry in entries:
        assert re.search(r"^ +--hash=sha256:[0-9a-f]{64}", entry, re.M), entry.splitlines()[0]
    cmd = PIXI["tasks"]["lock-pip"]["cmd"]
    assert LOCK_TEXT.splitlines()[:2] == [
        "# This file was autogenerated by uv via the following command:",
        f"#    {cmd}",
    ]
    for part in ("uv pip compile requirements.txt", "--universal", "--generate-hashes"):
        assert part in cmd
    assert cmd.endswith("-o requirements.lock") and "--python-version 3.12" in cmd
    assert "uv" in PINS  # the resolver is pinned like every other tool


def test_pixi_lock_workflow_runs_the_pinned_pixi():
    text = (WORKFLOWS / "pixi-lock.yml").read_text(encoding="utf-8")
    ci = (WORKFLOWS / "ci.yml").read_text(encoding="utf-8")
    version = re.findall(r"pixi-version: (v[\d.]+)", text)
    assert version == re.findall(r"pixi-version: (v[\d.]+)", ci)
    assert f">={version[0][1:]}" == PIXI["workspace"]["requires-pixi"]
    assert re.search(r"^\s+run: pixi lock$", text, re.M)
    assert "workflow_dispatch" in text and "- pixi.toml" in text
    assert "pixi-lock.yml" in ci  # the missing-lock message points to it


def summary(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("requirements.lock: "))


def test_env_task_prints_ok_for_every_pin_and_a_summary(capsys):
    assert envreport.main([]) == 0
    out = capsys.readouterr().out
    oks = {line for line in out.splitlines() if line.startswith("[OK] ")}
    course = "[OK] the course, installed editable from this folder"
    assert oks == {f"[OK] {name}=={version}" for name, version in PINS.items()} | {course}
    assert "[DRIFT]" not in out
    m = re.fullmatch(
        r"requirements.lock: (\d+) of (\d+) locked packages apply here: (\d+) OK, 0 DRIFT.*",
        summary(out),
    )
    assert m and m[1] == m[3] and int(m[2]) == len(LOCK) and len(PINS) < int(m[1]) <= len(LOCK)


def test_env_task_fails_when_the_course_is_not_installed_from_this_folder(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(envreport, "PROJECT", {"name": "no-such-course-here"})
    assert envreport.main([]) == 1
    fix = "run " + command("pixi install", envreport.INSTALL)  # this Python, as typed here
    missing = "[DRIFT] no-such-course-here (the course itself) is not installed: from "
    assert f"{missing}{shown(REPO_ROOT)}/ {fix}" in capsys.readouterr().out
    monkeypatch.undo()
    monkeypatch.setattr(envreport, "REPO_ROOT", tmp_path)  # another clone, sharing this environment
    assert envreport.main([]) == 1
    line = next(x for x in capsys.readouterr().out.splitlines() if "llm-internals" in x)
    assert line.startswith("[DRIFT] llm-internals is installed from file:") and "-e ." in line


@pytest.mark.process
def test_the_course_imports_from_a_steps_folder():
    """`cd steps/lab-01; python -m common.run lab-01` works: the editable install, not the folder, finds common."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-m", "common.run", "--help"],
        cwd=REPO_ROOT / "steps" / "lab-01",
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, (
        f"{done.stderr.strip()}\nfrom {shown(REPO_ROOT)}/: {envreport.INSTALL}"
    )
    assert "usage: " in done.stdout and "one of: lab-01" in done.stdout


def fake_lock(tmp_path, monkeypatch, text: str) -> None:
    lock = tmp_path / "requirements.lock"
    lock.write_text(text, encoding="utf-8")
    monkeypatch.setattr(envreport, "LOCK", lock)


def test_env_task_reports_a_wrong_pin_and_drift_below_the_top_level_or_missing(
    tmp_path, monkeypatch, capsys
):
    wrong = tmp_path / "requirements.txt"
    wrong.write_text("pytest==0.0.1\n", encoding="utf-8")
    monkeypatch.setattr(envreport, "REQUIREMENTS", wrong)
    assert envreport.main([]) == 1
    assert "[DRIFT] pytest==0.0.1 (found 9.0.2)" in capsys.readouterr().out
    monkeypatch.undo()
    have = LOCK["jinja2"]  # torch needs it; no top-level pin names it
    fake_lock(tmp_path, monkeypatch, LOCK_TEXT.replace(f"\njinja2=={have} ", "\njinja2==0.0.1 "))
    assert envreport.main([]) == 1
    out = capsys.readouterr().out
    assert f"[DRIFT] jinja2==0.0.1 (found {have})" in out
    assert "OK, 1 DRIFT" in summary(out)
    monkeypatch.undo()
    installed = list(envreport.metadata.distributions())
    without = [d for d in installed if normalise(d.metadata["Name"]) != "jinja2"]
    monkeypatch.setattr(envreport.metadata, "distributions", lambda: without)
    assert envreport.main([]) == 1
    assert f"[DRIFT] jinja2=={LOCK['jinja2']} (missing)" in capsys.readouterr().out


def test_env_task_skips_what_is_not_needed_here_and_names_what_is_unlocked(
    tmp_path, monkeypatch, capsys
):
    # A lock entry nothing here needs (as the CUDA packages for a CPU torch) is no drift; an
    # installed package the lock lacks (here iniconfig) is named, not failed.
    text = re.sub(r"\niniconfig==.*?(?=\n[a-z])", "", LOCK_TEXT, flags=re.S)
    fake_lock(tmp_path, monkeypatch, text + "not-needed-here==1.0 \\\n    --hash=sha256:00\n")
    assert envreport.main([]) == 0
    line = summary(capsys.readouterr().out)
    assert f" of {len(LOCK)} locked packages apply here: " in line  # one entry out, one in
    assert "iniconfig" in line.split("; installed outside the lock: ")[1].split(", ")
