"""pixi.toml is valid and pinned, requirements.txt installs the same versions, tooling is wired."""

import json
import re
import tomllib

import pytest

from common import REPO_ROOT, envreport
from common.envreport import check_pins, normalise, read_pins, report

PIXI = tomllib.loads((REPO_ROOT / "pixi.toml").read_text(encoding="utf-8"))
PINS = read_pins()
# The schema ships beside the repo for maintainers (../shared); students don't have it.
SCHEMA = REPO_ROOT.parent / "shared" / "pixi" / "schema.json"


def test_pixi_toml_validates_against_the_official_schema():
    if not SCHEMA.is_file():
        pytest.skip(f"pixi's JSON schema is not at {SCHEMA}; only maintainers have that copy")
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.validate(PIXI, schema)
    assert PIXI["$schema"] == schema["$id"]


def test_workspace_table_and_platforms():
    ws = PIXI["workspace"]
    assert "project" not in PIXI  # [project] is deprecated in favour of [workspace]
    assert ws["channels"] == ["conda-forge"]
    assert set(ws["platforms"]) == {"linux-64", "linux-aarch64", "osx-arm64", "win-64"}
    assert re.fullmatch(r">=\d+\.\d+(\.\d+)?", ws["requires-pixi"])
    assert PIXI["dependencies"]["python"] == "3.12.*"


def test_torch_comes_from_the_cpu_index():
    torch = PIXI["pypi-dependencies"]["torch"]
    assert torch["index"] == "https://download.pytorch.org/whl/cpu"
    assert torch["version"] == "==2.15.0"


def test_pixi_and_requirements_pin_the_same_versions():
    pixi = {}
    for name, spec in PIXI["pypi-dependencies"].items():
        version = spec["version"] if isinstance(spec, dict) else spec
        assert version.startswith("=="), f"{name} is not pinned exactly in pixi.toml: {version}"
        pixi[normalise(name)] = version[2:]
    assert pixi == PINS


def test_handout_versions_are_pinned():
    assert PINS["torch"] == "2.15.0"
    assert PINS["pytest"] == "9.0.2"
    assert {"matplotlib", "ruff", "pre-commit"} <= PINS.keys()


def test_every_task_has_a_description():
    missing = [
        n for n, t in PIXI["tasks"].items() if not isinstance(t, dict) or not t.get("description")
    ]
    assert missing == []


def test_read_pins_rejects_a_loose_pin(tmp_path):
    bad = tmp_path / "requirements.txt"
    bad.write_text("torch>=2\n", encoding="utf-8")
    with pytest.raises(ValueError, match="expected an exact pin"):
        read_pins(bad)


def test_environment_report_names_what_matters():
    text = report()
    for word in ("python", "torch", "threads", "os"):
        assert re.search(rf"^{word}\s", text, re.M), word


def test_installed_packages_match_the_pins():
    wrong = [
        (n, want, have) for n, want, have in check_pins(PINS) if (have or "").split("+")[0] != want
    ]
    assert wrong == []


def test_pre_commit_runs_ruff_fix_before_format_and_hygiene_hooks():
    text = (REPO_ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8")
    ids = re.findall(r"- id: ([\w-]+)", text)
    assert ids.index("ruff-check") < ids.index("ruff-format")
    assert "ruff check --fix" in text
    for hook in ("trailing-whitespace", "end-of-file-fixer", "check-toml", "check-yaml"):
        assert hook in ids
    assert "check-added-large-files" in ids


def test_lock_is_treated_as_generated():
    text = (REPO_ROOT / ".gitattributes").read_text(encoding="utf-8")
    assert "pixi.lock merge=binary linguist-language=YAML linguist-generated=true" in text


def test_ci_workflow_uses_pinned_setup_pixi_on_three_oses():
    text = (REPO_ROOT / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8")
    assert "prefix-dev/setup-pixi@" in text
    assert re.search(r"pixi-version: v\d+\.\d+\.\d+", text)
    for os_name in ("ubuntu-latest", "macos-latest", "windows-latest"):
        assert os_name in text
    assert "locked: true" in text  # a stale pixi.lock fails the run


def test_env_task_prints_ok_for_every_pin(capsys):
    assert envreport.main([]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if line.startswith("[OK] ")] == [
        f"[OK] {name}=={version}" for name, version in PINS.items()
    ]
    assert not any(line.startswith("[FAIL]") for line in lines)


def test_env_task_fails_on_a_wrong_pin(tmp_path, monkeypatch, capsys):
    wrong = tmp_path / "requirements.txt"
    wrong.write_text("pytest==0.0.1\n", encoding="utf-8")
    monkeypatch.setattr(envreport, "REQUIREMENTS", wrong)
    assert envreport.main([]) == 1
    assert "[FAIL] pytest==0.0.1 (found 9.0.2)" in capsys.readouterr().out
