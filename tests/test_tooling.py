"""The student workflow: the loader, the --impl switch, the commands' steps and their python twin."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from common import REPO_ROOT, catchup, command, hint, interpreter, loader, pytest_command
from common import run as runner

HINT = command("pixi run hint", "python -m common.hint")  # as the student types it, as catch-up's


@pytest.mark.parametrize(
    ("main", "argv", "said"),
    [
        (runner.main, ["step-404"], "unknown step 'step-404'; valid steps: lab-01"),
        (catchup.main, ["step-404"], "unknown step 'step-404'; valid steps: lab-01"),
        (hint.main, ["lab-99"], f"{HINT}: error: unknown step 'lab-99'; valid steps: lab-01"),
        (runner.main, [], "valid steps: lab-01"),
        (catchup.main, [], "valid steps: lab-01"),
        (catchup.main, ["step-03"], "step-03 is a checkpoint, not a step: use solutions/step-03/"),
    ],
    ids=["run", "catch-up", "hint", "run without a step", "catch-up without a step", "checkpoint"],
)
def test_a_command_given_no_step_it_can_use_lists_the_steps_in_one_line(main, argv, said, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and said in err and "Traceback" not in err, err
    if said.startswith("valid") or "unknown" in said:
        assert "step-04" in err


@pytest.mark.parametrize(
    ("step", "impl", "said"),
    [
        ("nope", "solution", "unknown step 'nope'; valid steps: "),
        ("lab-01", "mine", "impl must be"),
    ],
)
def test_loader_refuses_an_unknown_step_or_impl(step, impl, said):
    with pytest.raises(ValueError, match=said):
        loader.load(step, "attention", impl=impl)


def test_two_steps_can_share_a_module_name(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "attention.py").write_text(f"WHO = {name!r}\n", encoding="utf-8")
    a = loader.load_from(tmp_path / "a", "attention", "_test_pkg_a")
    b = loader.load_from(tmp_path / "b", "attention", "_test_pkg_b")
    assert (a.WHO, b.WHO) == ("a", "b")


@pytest.mark.parametrize(
    ("source", "said"),
    [
        (
            "import torch\n\nx = undefined_name\n",
            "bad.py:3 does not import: NameError: name 'undefined_name' is not defined",
        ),
        ("from attention import X\n", "import it relatively: from .attention import ..."),
        ("def f(:\n", "bad.py:1 does not import: SyntaxError: "),
        (
            "p = 1.0\nif p is 1:\n    pass\n",
            'bad.py:2 does not import: SyntaxError: "is" with '
            "'int' literal. Did you mean \"==\"? (Python only warns of it; the check refuses",
        ),
    ],
    ids=["name error", "sibling imported absolutely", "syntax error", "a warning made an error"],
)
def test_an_import_error_is_one_line_naming_file_line_and_reason_once(tmp_path, source, said):
    (tmp_path / "attention.py").write_text("X = 1\n", encoding="utf-8")
    (tmp_path / "bad.py").write_text(source, encoding="utf-8")
    with pytest.raises(loader.ImplImportError) as info:
        loader.load_from(tmp_path, "bad", f"_test_pkg_{len(source)}")
    text = str(info.value)
    assert said in text and "\n" not in text and "line 1)" not in text, text  # the place once


@pytest.mark.process
def test_bad_impl_value_is_one_line_from_pytest():
    cmd = pytest_command(
        REPO_ROOT, ["tests/test_tooling.py", "--impl", "mine", "-p", "no:cacheprovider"]
    )
    done = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    # argparse quotes the choices or not depending on the 3.12 patch release: check both names
    assert "argument --impl: invalid choice: 'mine'" in done.stderr
    assert "solution" in done.stderr and "starter" in done.stderr
    assert "Traceback" not in done.stderr


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
