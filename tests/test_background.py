"""Every step's Python background: its topics run as scripts and as marimo notebooks, the handout
shows what they print, and `python -m common.background` refuses bad input and stops cleanly.
(Here, not in a step's tests/: the topics are no one's TODO, so these pass on the starter.)"""

import difflib
import functools
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from common import STEPS_DIR, background
from common.docs import read_block
from tests.background_server import Server, refused, repo_state, session_processes

STEPS = background.steps_with_background()
TOPICS = [topic for step in STEPS for topic in background.topics(step)]
FIX = "if the change is meant, run `python -m common.background --write-docs`"


def topic_id(topic: Path) -> str:
    return f"{topic.parents[1].name}/{topic.stem}"


@functools.cache
def printed(topic: Path, output=background.output) -> str:
    """What the topic prints, run once per test process (by the command's own `output`)."""
    return output(topic)


def readme(topic: Path) -> Path:
    return topic.parents[1] / "README.md"


def test_topics_are_numbered_in_order_and_none_is_taught_twice():
    assert {"lab-01", "step-04"} <= set(STEPS)
    for step in STEPS:
        numbers = [int(t.name[:2]) for t in background.topics(step)]
        assert numbers == list(range(1, len(numbers) + 1)), step
    names = [t.stem[3:] for t in TOPICS]  # a later step covers only what earlier ones have not
    assert len(set(names)) == len(names), sorted(names)


@pytest.mark.parametrize("step", STEPS)
def test_the_handout_has_one_foldout_per_topic_linking_to_the_live_version(step):
    text = (STEPS_DIR / step / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"<!-- BEGIN (background-\S+) -->", text)
    assert blocks == [background.block_name(t) for t in background.topics(step)]
    for topic in background.topics(step):
        live = f"Live: `pixi run background {step}`, then open `{topic.name}`"
        assert live in text, f"the foldout of {topic.name} should say how to open it live"
    assert f"python -m common.background {step}" in text  # the twin without pixi


@pytest.mark.parametrize("topic", TOPICS, ids=topic_id)
def test_the_handout_shows_what_the_topic_prints_the_same_every_time(topic):
    shown, out = read_block(readme(topic), background.block_name(topic)), printed(topic)
    assert out.strip() and out.isascii()  # ASCII: a Windows console prints it as is
    fresh = background.block(out)  # a topic that prints anything unseeded differs from its block
    diff = difflib.unified_diff(shown.splitlines(), fresh.splitlines(), lineterm="")
    assert shown == fresh, (
        f"README.md's block differs from the run (seed whatever is random); {FIX}\n"
        + "\n".join(diff)
    )


@pytest.mark.parametrize("topic", TOPICS, ids=topic_id)
def test_topics_are_marimo_notebooks_with_explanations(topic):
    source = topic.read_text(encoding="utf-8")
    assert "\napp = marimo.App(" in source and 'if __name__ == "__main__":\n    app.run()' in source
    cells = re.split(r"\n@app\.cell", source)[1:]
    prose = [c for c in cells if "mo.md(" in c]
    assert len(prose) >= 2 and len(cells) - len(prose) >= 2, "explain, then let them run code"
    assert all(c.startswith("(hide_code=True)") for c in prose), "show the prose, not its code"


@pytest.mark.process
@pytest.mark.slow  # marimo's linter in a child process: 2 s idle, 10 s on a busy machine
def test_marimo_check_finds_nothing_in_any_topic():
    # marimo's own linter: one definition per name, cells it can run, nothing it would rewrite
    cmd = [sys.executable, "-m", "marimo", "check", "--strict", *map(str, TOPICS)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and not done.stdout.strip(), done.stdout + done.stderr


@pytest.mark.process
def test_a_topic_runs_as_a_script_from_anywhere(tmp_path):
    # the handout's command; this one imports no torch, so the child process is cheap
    topic = STEPS_DIR / "step-04" / "background" / "04_one_line.py"
    done = subprocess.run(
        [sys.executable, str(topic)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.replace("\r\n", "\n") == printed(topic)


def test_write_docs_rewrites_a_stale_block_and_nothing_else(tmp_path, monkeypatch):
    monkeypatch.setattr(background, "output", printed)  # each topic run once per process
    step, topic = "step-04", background.topics("step-04")[-1]
    name = background.block_name(topic)
    text = readme(topic).read_text(encoding="utf-8")
    stale = text.replace(read_block(readme(topic), name), "```text\nold output\n```\n")
    copy = tmp_path / "README.md"
    copy.write_text(stale, encoding="utf-8", newline="\n")
    assert background.write_docs(step, copy) == [name]
    assert read_block(copy, name) == background.block(printed(topic))
    assert background.write_docs(step, copy) == []


# --- the command ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, said",
    [(argv, f"steps with one: {', '.join(STEPS)}\n") for argv in (["step-99"], ["step-03"], [])]
    + [(["step-04", "--port", p], f"from 1 to 65535, got {p!r}\n") for p in ("0", "65536", "http")],
)
def test_a_step_without_a_background_or_a_bad_port_is_one_line(argv, said, capsys):
    with pytest.raises(SystemExit) as exit_:
        background.main(argv)
    err = capsys.readouterr().err.splitlines(keepends=True)
    assert exit_.value.code == 2 and err[-1].endswith(said), err
    assert "--port" in argv or len(err) == 1, err  # argparse adds its usage line above a bad port


def test_a_busy_port_picks_another_and_says_which():
    with socket.socket() as busy:
        busy.bind((background.HOST, 0))
        busy.listen()
        taken = busy.getsockname()[1]
        port, note = background.choose_port(taken)
        assert port != taken
        assert note == f"port {taken} is busy; using port {port} instead"
    assert background.choose_port(port) == (port, None)


def test_the_copies_are_made_once_and_edited_ones_are_kept(tmp_path):
    folder, kept = background.prepare("step-04", tmp_path)
    topics = background.topics("step-04")
    assert kept == [] and sorted(p.name for p in folder.glob("*.py")) == [t.name for t in topics]
    assert "auto_instantiate = true" in (tmp_path / "pyproject.toml").read_text(encoding="utf-8")
    edited = folder / topics[0].name
    edited.write_text("# the student's own version\n", encoding="utf-8")
    folder, kept = background.prepare("step-04", tmp_path)
    assert kept == [edited] and edited.read_text(encoding="utf-8").startswith("# the student's")
    assert all((folder / t.name).read_bytes() == t.read_bytes() for t in topics[1:])


@pytest.mark.process
@pytest.mark.slow  # a marimo server starts and stops: about 3 s
@pytest.mark.skipif(os.name == "nt", reason="Ctrl-C is a console event on Windows, not SIGINT")
def test_the_browser_opens_a_busy_port_is_avoided_ctrl_c_stops_all_and_the_repo_stays_clean(
    tmp_path,
):
    before = repo_state()
    with socket.socket() as busy:
        busy.bind((background.HOST, 0))
        busy.listen()
        taken = busy.getsockname()[1]
        # the "browser" is a script that writes down the address it was asked to open
        opened = tmp_path / "opened.txt"
        record = f"import sys; open({str(opened)!r}, 'w').write(sys.argv[1])"
        browser = f"{shlex.quote(sys.executable)} -c {shlex.quote(record)} %s"
        server = Server("--port", str(taken), workspace=tmp_path / "workspace", browser=browser)
        try:
            note = server.wait_for("is busy")
            url = server.url()
            port = int(re.search(r":(\d+)/", url)[1])
            assert note.strip() == f"port {taken} is busy; using port {port} instead"
            deadline = time.monotonic() + 30
            while not (opened.is_file() and opened.stat().st_size) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert opened.read_text(encoding="utf-8") == url  # the browser got the address
            with urllib.request.urlopen(url, timeout=10) as page:
                assert page.status == 200 and b"marimo" in page.read()
            assert server.interrupt() == 0
            server.wait_for("has stopped")
        finally:
            server.close()
    assert refused(url), "the server still answers after Ctrl-C"
    if Path("/proc/self/stat").exists():
        assert session_processes(server.proc.pid) == [], "a server or kernel process survived"
    assert repo_state() == before, "the server wrote into the repository"
