"""tools/suite_time.py times the `test` task of pixi.toml, the command students run."""

import sys

import pytest

from common import REPO_ROOT
from tools import suite_time


def test_it_times_the_test_task_with_this_python():
    cmd = suite_time.test_command(REPO_ROOT)
    assert cmd[:3] == [sys.executable, "-m", "pytest"] and "-n" in cmd


def test_a_task_written_as_a_plain_string_is_read_too(tmp_path):
    (tmp_path / "pixi.toml").write_text('[tasks]\ntest = "python -m pytest -q"\n', encoding="utf-8")
    assert suite_time.test_command(tmp_path) == [sys.executable, "-m", "pytest", "-q"]


def test_zero_rounds_are_refused(capsys):
    with pytest.raises(SystemExit) as exit_:
        suite_time.main(["--rounds", "0"])
    assert exit_.value.code == 2
    assert "--rounds must be at least 1, got 0" in capsys.readouterr().err
