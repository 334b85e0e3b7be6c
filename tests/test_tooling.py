"""The student workflow: the loader, the --impl switch, the runner and catch-up."""

import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from common import REPO_ROOT, catchup, command, interpreter, loader
from common import run as runner

BROKEN = Path(__file__).parent / "fixtures" / "broken_step" / "steps" / "step-99"


@pytest.fixture
def step(tmp_path):
    """A throwaway copy of the fixture step, with a student's edit in its starter."""
    folder = shutil.copytree(BROKEN, tmp_path / "step-99")
    (folder / "starter" / "mine.py").write_text("# my own work\n", encoding="utf-8")
    return folder


@pytest.mark.process
def test_catch_up_backs_up_then_installs_the_solution(step, monkeypatch):
    monkeypatch.setenv("PIXI_PROJECT_ROOT", str(REPO_ROOT))
    backup, message = catchup.catch_up(step, now=datetime(2026, 11, 29, 8, 0, 0))
    assert backup == step / "backups" / "starter-20261129-080000"
    assert (backup / "mine.py").read_text(encoding="utf-8") == "# my own work\n"
    assert (step / "starter" / "thing.py").read_bytes() == (
        step / "solution" / "thing.py"
    ).read_bytes()
    assert not (step / "starter" / "mine.py").exists()
    assert str(backup) in message and "check-step-99" in message


@pytest.mark.process
def test_catch_up_twice_does_no_harm(step):
    first, _ = catchup.catch_up(step, now=datetime(2026, 11, 29, 8, 0, 0))
    second, message = catchup.catch_up(step, now=datetime(2026, 11, 29, 8, 0, 0))
    assert second is None and "nothing changed" in message
    assert [p.name for p in (step / "backups").iterdir()] == [first.name]


@pytest.mark.process
def test_catch_up_never_overwrites_an_earlier_backup(step):
    now = datetime(2026, 11, 29, 8, 0, 0)
    first, _ = catchup.catch_up(step, now=now)
    (step / "starter" / "thing.py").write_text("# edited again\n", encoding="utf-8")
    second, _ = catchup.catch_up(step, now=now)
    assert second.name == first.name + "-2"
    assert (second / "thing.py").read_text(encoding="utf-8") == "# edited again\n"


@pytest.mark.process
def test_catch_up_without_a_starter_claims_no_backup(step):
    shutil.rmtree(step / "starter")
    backup, message = catchup.catch_up(step, now=datetime(2026, 11, 29, 8, 0, 0))
    assert backup is None and "saved" not in message
    assert not (step / "backups").exists()
    assert (step / "starter" / "thing.py").is_file()


@pytest.mark.process
def test_catch_up_leaves_no_staging_folder_behind(step):
    catchup.catch_up(step, now=datetime(2026, 11, 29, 8, 0, 0))
    assert sorted(p.name for p in step.iterdir()) == [
        "backups",
        "run.py",
        "solution",
        "starter",
        "tests",
    ]


def test_catch_up_on_a_checkpoint_says_what_it_is(capsys):
    with pytest.raises(SystemExit):
        catchup.main(["step-03"])
    err = capsys.readouterr().err
    assert "step-03 is a checkpoint, not a step: use solutions/step-03/ as it is" in err


def test_catch_up_unknown_step_lists_the_valid_ones(capsys):
    with pytest.raises(SystemExit) as exit_info:
        catchup.main(["step-404"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert "unknown step 'step-404'; valid steps: " in err
    assert "lab-01" in err and "step-04" in err
    assert "Traceback" not in err


def test_runner_unknown_step_lists_the_valid_ones(capsys):
    with pytest.raises(SystemExit):
        runner.main(["step-404"])
    err = capsys.readouterr().err
    assert "unknown step 'step-404'; valid steps: " in err and "lab-01" in err


def test_loader_unknown_step_is_a_value_error():
    with pytest.raises(ValueError, match="unknown step 'nope'; valid steps: "):
        loader.load("nope", "attention")


def test_loader_rejects_an_unknown_impl():
    with pytest.raises(ValueError, match="impl must be one of"):
        loader.load("lab-01", "attention", impl="mine")


def test_two_steps_can_share_a_module_name(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "attention.py").write_text(f"WHO = {name!r}\n", encoding="utf-8")
    a = loader.load_from(tmp_path / "a", "attention", "_test_pkg_a")
    b = loader.load_from(tmp_path / "b", "attention", "_test_pkg_b")
    assert (a.WHO, b.WHO) == ("a", "b")


def test_import_error_is_one_line_naming_file_and_line(tmp_path):
    (tmp_path / "bad.py").write_text("import torch\n\nx = undefined_name\n", encoding="utf-8")
    with pytest.raises(loader.ImplImportError) as info:
        loader.load_from(tmp_path, "bad", "_test_pkg_bad")
    assert "\n" not in str(info.value)
    assert str(info.value).endswith(
        "bad.py:3 does not import: NameError: name 'undefined_name' is not defined"
    )


@pytest.mark.process
def test_bad_impl_value_is_one_line_from_pytest():
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "tests/test_tooling.py",
        "--impl",
        "mine",
        "-p",
        "no:cacheprovider",
    ]
    done = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    # argparse quotes the choices or not depending on the 3.12 patch release: check both names
    assert "argument --impl: invalid choice: 'mine'" in done.stderr
    assert "solution" in done.stderr and "starter" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_absolute_import_of_a_sibling_gets_a_hint(tmp_path):
    (tmp_path / "attention.py").write_text("X = 1\n", encoding="utf-8")
    (tmp_path / "exercise.py").write_text("from attention import X\n", encoding="utf-8")
    with pytest.raises(loader.ImplImportError) as info:
        loader.load_from(tmp_path, "exercise", "_test_pkg_sibling")
    assert "import it relatively: from .attention import ..." in str(info.value)


def test_a_syntax_error_names_file_line_and_reason_once(tmp_path):
    (tmp_path / "bad.py").write_text("def f(:\n", encoding="utf-8")
    with pytest.raises(loader.ImplImportError) as info:
        loader.load_from(tmp_path, "bad", "_test_pkg_syntax")
    text = str(info.value)
    assert "bad.py:1 does not import: SyntaxError: " in text
    assert "line 1)" not in text  # the place is said once, up front


@pytest.mark.parametrize("main", [runner.main, catchup.main], ids=["run", "catch-up"])
def test_no_step_is_a_usage_error_listing_the_steps(main, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert "valid steps: lab-01" in err and "step-04" in err


def test_an_unknown_step_is_never_the_program_name(capsys, monkeypatch):
    monkeypatch.setenv("PIXI_PROJECT_ROOT", str(REPO_ROOT))
    with pytest.raises(SystemExit):
        runner.main(["step-404"])
    err = capsys.readouterr().err
    assert "pixi run step-404" not in err and err.startswith(
        f"usage: {interpreter()} -m common.run"
    )


@pytest.mark.process
@pytest.mark.parametrize(
    ("pixi", "expected"),
    [(True, "Next: pixi run check-step-99"), (False, "Next: {python} -m pytest ")],
)
def test_messages_name_the_command_of_the_students_path(step, monkeypatch, pixi, expected):
    if pixi:
        monkeypatch.setenv("PIXI_PROJECT_ROOT", str(REPO_ROOT))
    else:
        monkeypatch.delenv("PIXI_PROJECT_ROOT", raising=False)
    _, message = catchup.catch_up(step, now=datetime(2026, 11, 29, 8, 0, 0))
    assert expected.format(python=interpreter()) in message


@pytest.mark.parametrize("active", [True, False], ids=["venv active", "venv not active"])
def test_the_python_twin_is_typed_as_this_python_is_found(monkeypatch, tmp_path, active):
    """`python` when PATH finds this interpreter; else its path, so no other Python runs it."""
    here = Path(sys.executable).absolute()
    other = tmp_path / "python"  # another Python first on PATH (a pyenv shim, the system's)
    monkeypatch.setattr(shutil, "which", lambda name: str(here if active else other))
    monkeypatch.delenv("PIXI_PROJECT_ROOT", raising=False)
    typed = interpreter()
    if active:
        assert typed == "python"
    else:  # from the repository's folder, where the commands run, it names this very file
        assert typed != "python" and (Path.cwd() / typed).absolute() == here
    assert (
        command("pixi run hint lab-01", "python -m common.hint lab-01")
        == f"{typed} -m common.hint lab-01"
    )


def test_a_figure_without_a_layout_engine_is_refused(tmp_path):
    from common.run.figures import plt, save

    fig = plt.figure()
    with pytest.raises(ValueError, match="layout='constrained'"):
        save(fig, tmp_path / "clipped.png")
    plt.close(fig)
    assert not (tmp_path / "clipped.png").exists()
