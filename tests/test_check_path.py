"""tools.check_path: the path a replayed screen takes through the course's modules (issue 34)."""

import pytest

from common import REPO_ROOT
from tools.check_path import report, short, traced
from tools.screens import SCREENS, recording


@pytest.mark.parametrize("name", ["lab-01", "no scale"])
def test_a_replayed_screen_parses_each_file_once_and_writes_nothing(name, monkeypatch):
    """Drawing the screen reads each solution file's regions once and writes no file; traced, it
    draws the recorded screen."""
    monkeypatch.setenv("PIXI_PROJECT_ROOT", str(REPO_ROOT))  # recorded as inside a pixi task
    screen, record = recording(name)
    drawn, path = traced(record)
    assert drawn == "\n".join(screen.splitlines()[:-1]) + "\n"
    assert path.parsed and len(path.parsed) == len(set(path.parsed)), path.parsed
    assert path.writes == [], path.writes
    assert path.hops and path.hops[0][0] == "tools.screens", path.hops[:3]


def test_the_status_asks_the_regions_parser_nothing_per_todo():
    """Optional-ness is read once per TODO when the regions are parsed: no status <-> todos hops."""
    _, path = traced(recording("lab-01")[1])
    assert ("common.status", "common.todos") not in path.hops, short(path.hops)


def test_a_back_and_forth_is_one_line_with_its_count():
    hops = [("a", "b"), ("b", "a"), ("a", "b"), ("b", "a"), ("a", "c"), ("c", "b")]
    assert short(hops) == ["a <-> b x2", "a -> c", "c -> b"]


def test_the_report_counts_what_it_lists():
    lines = report(SCREENS / "step-06.json")
    assert lines[0].startswith("step-06.json: ") and " hops (" in lines[0], lines[0]
    assert len(lines) > 1 and all(line.startswith("  ") for line in lines[1:]), lines
