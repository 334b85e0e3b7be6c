"""`pixi run watch <step>` (common/watch.py): the check again on every save, as a student runs it in
a terminal, on a pristine copy of the steps (the working tree is never touched)."""

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from common import REPO_ROOT, watch
from common.course import step_names
from common.watch import changed, clear, main, syntax_error
from tools import pristine

FOOTER = b"Ctrl-C stops."  # the last line of every screen the watcher draws


def read_until(fd: int, screens: int, seconds: float, seen: bytes = b"") -> bytes:
    """What the terminal shows until `screens` screens are drawn or `seconds` pass."""
    end = time.monotonic() + seconds
    while seen.count(FOOTER) < screens and time.monotonic() < end:
        if select.select([fd], [], [], 0.2)[0]:
            try:
                seen += os.read(fd, 65536)
            except OSError:  # the child closed the terminal
                break
    return seen


@pytest.mark.process
@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal is POSIX (pty)")
def test_two_saves_in_a_burst_redraw_once_and_ctrl_c_exits_0(tmp_path):
    steps = pristine(step_names(), tmp_path)
    layers = steps / "lab-02" / "starter" / "layers.py"
    text = layers.read_text(encoding="utf-8")
    master, slave = os.openpty()  # the student's terminal
    env = os.environ | {"COURSE_STEPS_DIR": str(steps), "COLUMNS": "100"}
    child = subprocess.Popen(
        [sys.executable, "-m", "common.watch", "lab-02"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=REPO_ROOT,
        env=env,
        start_new_session=True,
    )
    os.close(slave)
    try:
        seen = read_until(master, 1, 120)
        assert seen.count(FOOTER) == 1, f"expected the first screen, got:\n{seen.decode()[-2000:]}"
        time.sleep(1.0)  # the watcher starts watching once its first screen is drawn
        layers.write_text(text + "\n", encoding="utf-8")  # two saves, 1 ms apart: one burst
        layers.write_text(text, encoding="utf-8")
        seen = read_until(master, 2, 120, seen)
        time.sleep(1.0)  # a third screen, if the burst were two runs, would start by now
        child.send_signal(signal.SIGINT)  # Ctrl-C
        code = child.wait(30)
        seen = read_until(master, 3, 2, seen).decode("utf-8", errors="replace")
    finally:
        if child.poll() is None:
            child.kill()
        os.close(master)
    assert seen.count(FOOTER.decode()) == 2, seen  # the first screen and one for the burst
    assert seen.count("\x1b[2J") == 2, "expected the terminal cleared before each screen"
    assert seen.count("lab-02 with your starter:") == 2 and "layers.py saved" in seen, seen
    assert code == 0 and "Traceback" not in seen and "KeyboardInterrupt" not in seen, seen
    assert seen.rstrip().endswith("Stopped watching steps/lab-02/starter."), seen[-300:]
    assert layers.read_text(encoding="utf-8") == text, "expected the starter as it was saved"


def test_a_syntax_error_is_one_line_naming_the_file_and_line(tmp_path):
    starter = tmp_path / "starter"
    starter.mkdir()
    (starter / "layers.py").write_text("def f(:\n    pass\n", encoding="utf-8")
    line = syntax_error(starter)
    assert "\n" not in line and "layers.py:1: SyntaxError:" in line and "save again" in line, line
    (starter / "layers.py").write_text("x = 1\n", encoding="utf-8")
    assert syntax_error(starter) is None, "expected no line for a file that compiles"


def test_only_the_starters_own_files_trigger_a_check():
    changes = {(1, "/s/starter/layers.py"), (2, "/s/starter/__pycache__/layers.cpython-312.pyc")}
    changes |= {(2, "/s/starter/predictions.toml"), (1, "/s/starter/.layers.py.swp")}
    assert changed(Path("/s/starter"), changes) == ["layers.py", "predictions.toml"]


def test_an_unknown_step_names_the_steps_and_exits_2(capsys):
    assert main(["lab-99"]) == 2
    out = capsys.readouterr().out
    assert "no step 'lab-99'" in out and "lab-02" in out and "usage:" in out, out


def test_output_to_a_file_keeps_every_screen_without_terminal_codes(capsys, monkeypatch):
    clear()  # capsys's stdout is no terminal, as a file or a pipe is not
    assert capsys.readouterr().out == "", "expected no clear-screen codes outside a terminal"
    cls = []
    monkeypatch.setattr(watch.os, "system", cls.append)
    with monkeypatch.context() as windows:
        windows.setattr(watch.os, "name", "nt")
        clear()  # Windows clears with cls, which would write its form feed into the file
    assert cls == [], f"expected no cls outside a console, got {cls}"


def test_a_save_is_acknowledged_at_once_with_its_time_before_the_check_runs(capsys, monkeypatch):
    import watchfiles

    steps = {"now": "12:00:01"}  # the clock: the save's time, then the check's end 6 s later
    before_check = []

    def slow_check(folder, extra):
        before_check.append(capsys.readouterr().out)  # what the student saw while it ran
        steps["now"] = "12:00:07"
        return "lab-02 with your starter: ...\n"

    def one_save(starter, **options):
        before_check.clear()  # the first screen's own check is not the save's
        steps["now"] = "12:00:01"
        yield {(1, str(starter / "layers.py"))}

    monkeypatch.setattr(watch, "run_check", slow_check)
    monkeypatch.setattr(watch.time, "strftime", lambda form: steps["now"])
    monkeypatch.setattr(watchfiles, "watch", one_save)
    assert watch.watch("lab-02", []) == 0
    assert "[layers.py saved 12:00:01] Checking again" in before_check[0], before_check
    footer = capsys.readouterr().out.strip().splitlines()[-2]
    assert footer.startswith("[layers.py saved 12:00:01, checked 12:00:07] Watching"), footer
