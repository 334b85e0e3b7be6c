"""catch-up is transactional: it checks first, backs up whole, swaps, and every refusal is one line."""

import errno
import os
import shutil
import subprocess
from datetime import datetime
from pathlib import Path

import pytest

from common import REPO_ROOT, catchup, course, interpreter, shown

BROKEN = Path(__file__).parent / "fixtures" / "broken_step" / "steps" / "step-99"
NOW = datetime(2026, 11, 29, 8, 0, 0)


@pytest.fixture
def step(tmp_path):
    """A throwaway copy of the fixture step, with a student's edit in its starter."""
    folder = shutil.copytree(BROKEN, tmp_path / "step-99")
    (folder / "starter" / "mine.py").write_text("# my own work\n", encoding="utf-8")
    return folder


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` and its bytes (a link: where it points)."""
    return {
        p.as_posix(): os.readlink(folder / p)
        if (folder / p).is_symlink()
        else (folder / p).read_bytes()
        for p in catchup.source_files(folder)
    }


def refused(step: Path) -> str:
    """catch_up's refusal, checked to be one line that changed nothing in the starter."""
    before = snapshot(step / "starter")
    with pytest.raises(catchup.CatchUpError) as info:
        catchup.catch_up(step, now=NOW)
    message = str(info.value)
    assert "\n" not in message and "[(" not in message, message  # never shutil.Error's list
    assert snapshot(step / "starter") == before
    assert not (step / catchup.LOCK).exists()
    assert not any(p.name.startswith(".starter-") for p in step.iterdir())
    return message


def backups(step: Path) -> list[str]:
    folder = step / "backups"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_a_missing_reference_is_refused_and_never_caught_up(step):
    shutil.rmtree(step / "solution")
    for _ in range(2):  # the retry must not say "already holds the reference"
        message = refused(step)
        assert "step-99/solution is missing or empty: restore it (git checkout -- " in message
    assert backups(step) == []


@pytest.mark.process
def test_a_reference_that_lost_a_tracked_file_is_refused(step):
    git = ["git", "-c", "core.autocrlf=false"]
    try:
        subprocess.run([*git, "init", "-q"], cwd=step, check=True, capture_output=True)
        subprocess.run([*git, "add", "solution"], cwd=step, check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("git is not installed")
    (step / "solution" / "extra.py").write_text("X = 1\n", encoding="utf-8")
    subprocess.run([*git, "add", "solution"], cwd=step, check=True, capture_output=True)
    (step / "solution" / "extra.py").unlink()
    assert "solution/extra.py is missing from the reference" in refused(step)


def link(path: Path, target: Path | str) -> None:
    try:
        path.symlink_to(target, target_is_directory=True)
    except OSError:  # Windows without developer mode makes no links
        pytest.skip("this system does not let us make a symbolic link")


def failing_copy(monkeypatch, error: OSError, after: int = 1):
    """Make shutil.copyfile raise `error` once `after` files are copied."""
    real, copied = shutil.copyfile, []

    def copyfile(src, dst, *args, **kwargs):
        if len(copied) >= after:
            error.filename = str(src)
            raise error
        copied.append(src)
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(shutil, "copyfile", copyfile)


def elsewhere(step: Path) -> Path:
    """A folder beside the step."""
    (step.parent / "elsewhere").mkdir()
    return step.parent / "elsewhere"


def held_open():
    error = PermissionError(errno.EACCES, "The process cannot access the file")
    error.winerror = 32  # what Windows sets for a file another process has open
    return error


def failing_swap(monkeypatch):
    real = Path.rename

    def rename(self, target):
        if self.name == catchup.NEW:  # the staged folder cannot take the starter's place
            raise PermissionError(errno.EACCES, "Permission denied", str(target))
        return real(self, target)

    monkeypatch.setattr(Path, "rename", rename)


# what goes wrong -> (what the one line says, what it must not say)
REFUSALS = {
    "no-compile": (
        lambda step, mp: (step / "solution" / "thing.py").write_text("def f(:\n", encoding="utf-8"),
        ["thing.py does not compile (SyntaxError)"],
    ),
    "link-up": (
        lambda step, mp: link(step / "starter" / "up", ".."),
        ["starter/up is a link to ", "a folder that holds the link itself", "delete that link"],
    ),
    "link-out": (
        lambda step, mp: link(step / "starter" / "data", elsewhere(step)),
        ["starter/data is a link to ", "outside the step"],
    ),
    "disk-full": (
        lambda step, mp: failing_copy(mp, OSError(errno.ENOSPC, "No space left on device")),
        ["the disk is full; free some space and run the command again", "starter is unchanged"],
    ),
    "unreadable": (
        lambda step, mp: failing_copy(mp, PermissionError(errno.EACCES, "Denied"), after=0),
        ["could not read ", "permission denied; give yourself read and"],
    ),
    "held-open": (
        lambda step, mp: failing_copy(mp, held_open(), after=0),
        ["another program has it open; close editors or terminals"],
    ),
    "swap": (
        lambda step, mp: failing_swap(mp),
        ["could not replace ", "(your starter is unchanged)"],
    ),
}


@pytest.mark.process
@pytest.mark.parametrize("case", REFUSALS)
def test_a_refusal_is_one_line_and_leaves_no_backup_that_looks_whole(case, step, monkeypatch):
    make, said = REFUSALS[case]
    make(step, monkeypatch)
    message = refused(step)
    assert all(part in message for part in said), message
    assert "close editors" not in message or case == "held-open", message
    assert backups(step) == ([] if case != "swap" else ["starter-20261129-080000"])


@pytest.mark.process
def test_a_killed_backup_keeps_a_name_that_says_incomplete(step, monkeypatch):
    def interrupted(src, dst, *args, **kwargs):
        Path(dst).write_bytes(b"")  # the 0-byte file a kill leaves
        raise KeyboardInterrupt

    monkeypatch.setattr(shutil, "copyfile", interrupted)
    with pytest.raises(KeyboardInterrupt):
        catchup.catch_up(step, now=NOW)
    assert backups(step) == ["starter-20261129-080000-incomplete"]
    assert not (step / catchup.LOCK).exists()
    monkeypatch.undo()
    backup, _ = catchup.catch_up(step, now=NOW)  # the next run never reuses that name
    assert backup.name == "starter-20261129-080000-2"
    assert (backup / "mine.py").read_text(encoding="utf-8") == "# my own work\n"


def test_a_second_catch_up_while_one_runs_is_refused(step):
    (step / catchup.LOCK).write_text("pid 1\n", encoding="utf-8")
    before = snapshot(step / "starter")
    with pytest.raises(catchup.CatchUpError, match="another catch-up of .*step-99 is running"):
        catchup.catch_up(step, now=NOW)
    assert snapshot(step / "starter") == before and (step / catchup.LOCK).exists()


@pytest.mark.process  # a catch-up that goes ahead asks git about the reference
def test_a_lock_left_by_a_killed_catch_up_is_taken_over_after_ten_minutes(step):
    lock = step / catchup.LOCK
    lock.write_text("pid 1\n", encoding="utf-8")
    old = lock.stat().st_mtime - catchup.STALE - 1
    os.utime(lock, (old, old))  # a run killed (power cut, kill -9) eleven minutes ago
    catchup.catch_up(step, now=NOW)
    assert not lock.exists() and snapshot(step / "starter") == snapshot(step / "solution")


@pytest.mark.process
def test_a_run_killed_between_its_two_renames_is_recovered_and_no_starter_claims_no_backup(step):
    (step / "starter").rename(step / catchup.OLD)  # the student's folder, moved aside
    backup, _ = catchup.catch_up(step, now=NOW)
    assert (backup / "mine.py").read_text(encoding="utf-8") == "# my own work\n"
    assert not (step / catchup.OLD).exists()
    assert catchup.caught_up(step / "starter", step / "solution")
    shutil.rmtree(step / "starter")
    backup, message = catchup.catch_up(step, now=NOW)
    assert (
        backup is None and "saved" not in message and backups(step) == ["starter-20261129-080000"]
    )
    assert (step / "starter" / "thing.py").is_file()


def test_the_command_answers_a_refusal_in_one_line(step, monkeypatch, capsys):
    shutil.rmtree(step / "solution")
    monkeypatch.setattr(catchup, "course_step", lambda name: catchup.at(step))
    with pytest.raises(SystemExit) as exit_info:
        catchup.main(["step-99"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 1 and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and "solution is missing" in err


def test_a_folder_that_is_not_a_step_is_not_a_step(tmp_path):
    for name in ("lab-01", "notes", ".hidden"):
        (tmp_path / name / "tests").mkdir(parents=True)
    shutil.rmtree(tmp_path / "notes" / "tests")
    (tmp_path / "notes" / "ideas.md").write_text("mine\n", encoding="utf-8")
    (tmp_path / "step-07").mkdir()
    (tmp_path / "step-07" / "step.toml").write_text('title = "x"\n', encoding="utf-8")
    assert course.step_names(tmp_path) == ["lab-01", "step-07"]
    with pytest.raises(ValueError, match="unknown step 'notes'; valid steps: lab-01, step-07"):
        course.course_step("notes", tmp_path)


@pytest.mark.process
def test_catch_up_writes_the_empty_predictions_and_keeps_the_students_own(step):
    """predictions.toml is the student's record: catch-up keeps it, backs it up, and it alone
    keeps the step from being caught up no more than the template does."""
    template, mine = 'leaks = ""  # how many?\n', 'leaks = "6"  # how many?\n'
    (step / "solution" / "predictions.toml").write_text(template, encoding="utf-8")
    predicted = step / "starter" / "predictions.toml"
    _, message = catchup.catch_up(step, now=NOW)
    assert predicted.read_text(encoding="utf-8") == template
    assert "predictions" not in message, message  # nothing of the student's to keep
    predicted.write_text(mine, encoding="utf-8")
    (step / "starter" / "thing.py").write_text("# edited again\n", encoding="utf-8")
    backup, message = catchup.catch_up(step, now=NOW)
    assert predicted.read_text(encoding="utf-8") == mine
    assert (backup / "predictions.toml").read_text(encoding="utf-8") == mine
    assert "Your predictions stay as you wrote them: " in message, message
    assert (step / "solution" / "predictions.toml").read_text(encoding="utf-8") == template
    already = f"{shown(step / 'starter')} already holds the reference solution; nothing changed."
    assert catchup.catch_up(step, now=NOW) == (None, already)


@pytest.mark.process
def test_catch_up_backs_up_installs_and_never_overwrites_a_backup(step, monkeypatch):
    monkeypatch.setenv("PIXI_PROJECT_ROOT", str(REPO_ROOT))
    first, message = catchup.catch_up(step, now=NOW)
    assert first == step / "backups" / "starter-20261129-080000"
    assert f"is saved in {shown(first)}/ (git does not track backups/" in message.splitlines()[0]
    assert (first / "mine.py").read_text(encoding="utf-8") == "# my own work\n"
    assert catchup.caught_up(step / "starter", step / "solution") and "check-step-99" in message
    assert sorted(p.name for p in step.iterdir()) == "backups run.py solution starter tests".split()
    assert catchup.catch_up(step, now=NOW)[0] is None  # twice does no harm
    (step / "starter" / "thing.py").write_text("# edited again\n", encoding="utf-8")
    second, _ = catchup.catch_up(step, now=NOW)
    assert backups(step) == [first.name, first.name + "-2"]
    assert (second / "thing.py").read_text(encoding="utf-8") == "# edited again\n"
    if shutil.which("git") and (REPO_ROOT / ".git").exists():  # and this .gitignore says so
        ignored = ["git", "check-ignore", "-q", "steps/lab-01/backups/starter-x/attention.py"]
        assert subprocess.run(ignored, cwd=REPO_ROOT).returncode == 0


@pytest.mark.process
@pytest.mark.parametrize("pixi", [True, False], ids=["pixi", "python"])
def test_the_message_names_the_command_of_the_students_path(step, monkeypatch, pixi):
    monkeypatch.delenv("PIXI_PROJECT_ROOT", raising=False)
    if pixi:
        monkeypatch.setenv("PIXI_PROJECT_ROOT", str(REPO_ROOT))
    _, message = catchup.catch_up(step, now=NOW)
    python = f"Next: {interpreter()} -m pytest "
    assert ("Next: pixi run check-step-99" if pixi else python) in message
