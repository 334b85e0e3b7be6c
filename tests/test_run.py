"""The scaffolding every step's run shares (common/run/__init__.py): options first, one-line errors."""

import os
import subprocess
import sys

import pytest

from common import REPO_ROOT, interpreter, shown
from common import run as runner
from common.course import course_step
from common.loader import load_file
from common.run.experiment import Run

STEPS = sorted(runner.runnable())


def _run(*argv: str, pixi: bool = False) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PIXI_PROJECT_ROOT"}
    if pixi:
        env["PIXI_PROJECT_ROOT"] = str(REPO_ROOT)
    code = (
        "import sys; from common import run\n"
        "try:\n    run.main(sys.argv[1:])\nfinally:\n"
        "    print('torch imported' if 'torch' in sys.modules else 'no torch', file=sys.stderr)"
    )
    cmd = [sys.executable, "-c", code, *argv]
    return subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True)


@pytest.mark.process
def test_help_and_a_typo_answer_before_torch_is_imported():
    helped, typo = _run("step-04", "--help"), _run("step-04", "--repats", "2")
    assert helped.returncode == 0 and "--repeats" in helped.stdout
    assert typo.returncode == 2 and "unrecognized arguments: --repats" in typo.stderr
    assert helped.stderr.strip() == "no torch" and typo.stderr.strip().endswith("no torch")


@pytest.mark.process
def test_a_run_that_trains_exits_without_a_screen_of_binding_leaks():
    """Step 5 and Step 6 train: an optimiser's first step imports torch's compiler, which on the pip
    path's CUDA torch loads triton; with the run's frozen objects at exit (common/run/__main__.py)
    its bindings printed 26 lines of "nanobind: leaked"."""
    code = (
        "from common import run\nimport gc, sys, torch\n"
        "torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0).step()\ngc.freeze()\n"
        "print(sys.modules.get('triton', 'not imported'))"  # None: kept out, on every path
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0 and "nanobind" not in done.stderr, f"got:\n{done.stderr}"
    assert done.stdout == "None\n", f"expected triton kept out of the run, got {done.stdout!r}"


@pytest.mark.parametrize("step", STEPS)
def test_every_steps_help_offers_impl_quick_write_docs_and_out(step, capsys):
    with pytest.raises(SystemExit):
        runner.main([step, "--help"])
    out = capsys.readouterr().out
    assert all(option in out for option in ("--impl", "--quick", "--write-docs", "--out DIR"))


@pytest.mark.parametrize(
    ("pixi", "step", "usage"),
    [
        (True, "lab-01", "usage: pixi run lab-01 "),
        (False, "lab-01", "usage: {python} -m common.run lab-01 "),
        (True, "step-404", "usage: {python} -m common.run"),  # never a task that does not exist
    ],
)
def test_the_usage_line_fits_where_the_student_is(pixi, step, usage, monkeypatch, capsys):
    monkeypatch.delenv("PIXI_PROJECT_ROOT", raising=False)
    if pixi:
        monkeypatch.setenv("PIXI_PROJECT_ROOT", str(REPO_ROOT))
    with pytest.raises(SystemExit):
        runner.main([step, "--nope"])
    assert capsys.readouterr().err.startswith(usage.format(python=interpreter()))


def test_the_step_may_follow_its_options(capsys):
    with pytest.raises(SystemExit) as info:
        runner.main(["--impl", "starter", "lab-01", "--write-docs"])
    assert info.value.code == 2
    assert "--write-docs records the reference's full run" in capsys.readouterr().err


@pytest.mark.parametrize("where", ["out is a file", "--out names a file", "out is read-only"])
def test_an_unusable_output_folder_is_one_line_before_any_work(where, tmp_path, capsys):
    target = tmp_path / "out"
    if where == "out is read-only":
        if os.name == "nt" or os.geteuid() == 0:
            pytest.skip("root, and Windows, may write in a read-only folder")
        target.mkdir()
        target.chmod(0o500)
    else:
        target.write_text("not a folder\n", encoding="utf-8")
    out = target / "deeper" if where == "--out names a file" else target
    with pytest.raises(SystemExit) as info:
        runner.main(["lab-01", "--out", str(out)])
    captured = capsys.readouterr()
    assert info.value.code == 2 and captured.out == ""  # no environment report: no work done
    error = captured.err.strip().splitlines()[-1]
    assert error.endswith("choose --out DIR") and str(target) in error


def test_a_todo_not_written_is_one_line_and_an_optional_one_is_no_failure(monkeypatch):
    monkeypatch.delenv("PIXI_PROJECT_ROOT", raising=False)
    code, line = runner.not_written("lab-01", NotImplementedError("TODO(lab-01 task 1: f): y"))
    assert code == 1 and line.startswith("not implemented yet: TODO(lab-01 task 1: f). Next: ")
    assert line.endswith("python -m pytest steps/lab-01 --impl starter")
    code, line = runner.not_written("step-04", NotImplementedError("TODO(step-04 optional 1: g)"))
    assert code == 0 and "optional TODO(step-04 optional 1: g) not written" in line


@pytest.mark.parametrize("step", STEPS)
def test_every_run_py_is_a_declaration(step):
    """The one step shape: common.run executes RUN; a run.py has no main() of its own."""
    run = load_file(runner.runnable()[step])
    assert isinstance(getattr(run, "RUN", None), Run) and run.RUN.step == step, (
        f"{shown(runner.runnable()[step])}: declare RUN = Run({step!r}, ...) (CONTRIBUTING.md)"
    )
    assert not hasattr(run, "main"), f"{shown(runner.runnable()[step])}: the runner runs RUN"


def test_a_run_without_its_step_toml_is_one_line(tmp_path, monkeypatch):
    folder = tmp_path / "step-66"
    folder.mkdir()
    (folder / "run.py").write_text("def main(args):\n    return 0\n", encoding="utf-8")
    monkeypatch.setattr(runner, "runnable", lambda: {"step-66": folder / "run.py"})
    with pytest.raises(SystemExit) as info:
        runner.main(["step-66"])
    assert "step.toml is missing: every step describes itself there" in str(info.value.code)


def test_a_crash_in_the_starter_names_the_students_line_and_the_check_not_torchs_frames():
    """`--impl starter`: a crash in the student's code is one line with their file and line (the
    walk's lab-02 run printed torch's frames down to linear.py), then the check to run."""
    starter = course_step("lab-02").starter / "kvcache.py"
    code = compile("\n" * 117 + "raise RuntimeError('mm: mat1 and mat2')", str(starter), "exec")
    try:
        exec(code, {})
    except RuntimeError as exc:
        said = runner.crashed("lab-02", exc)
    assert "stopped in your code at steps/lab-02/starter/kvcache.py:118: RuntimeError" in said
    assert "Next:" in said and ("check-lab-02" in said or "--impl starter" in said), said
    assert all(len(line) <= 100 for line in said.splitlines()), said
    assert runner.crashed("lab-02", RuntimeError("no traceback in the starter")) == ""
