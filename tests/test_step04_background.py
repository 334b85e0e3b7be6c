"""steps/step-04/background/: the Python background snippets run, and the handout shows their output.

These tests live here, not in steps/step-04/tests/, because the snippets are no one's TODO: every
test there must fail on the untouched starter (tests/test_contracts.py), and these pass on it.
"""

import difflib
import re
import subprocess
import sys

import pytest

from common import STEPS_DIR
from common.docs import read_block
from common.loader import load_file

BACKGROUND = STEPS_DIR / "step-04" / "background"
render = load_file(BACKGROUND / "render.py", "_course_step_04_background")
SNIPPETS = render.snippets()
FIX = "if the change is meant, run `python steps/step-04/background/render.py --write-docs`"


@pytest.fixture(scope="module")
def outputs() -> dict[str, str]:
    """What each snippet prints, by file name: each runs once, in this process."""
    return {s.name: render.output(s) for s in SNIPPETS}


def test_every_foldout_topic_has_a_snippet():
    # the lecture's seven Python foldouts, one snippet each; pytest collects none of them
    assert len(SNIPPETS) == 7
    assert not any(s.name.startswith("test") for s in SNIPPETS)
    assert SNIPPETS[0].name == "01_imports.py" and SNIPPETS[-1].name == "07_one_line.py"


def test_the_handout_has_one_block_per_snippet():
    blocks = re.findall(r"<!-- BEGIN (background-\S+) -->", render.README.read_text("utf-8"))
    assert blocks == [render.block_name(s) for s in SNIPPETS]


@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda s: s.stem)
def test_the_handout_shows_what_the_snippet_prints(snippet, outputs):
    shown = read_block(render.README, render.block_name(snippet))
    printed = render.block(outputs[snippet.name])
    diff = difflib.unified_diff(
        shown.splitlines(), printed.splitlines(), "README.md", snippet.name, lineterm=""
    )
    assert shown == printed, f"README.md's block differs from the run; {FIX}\n" + "\n".join(diff)


@pytest.mark.parametrize("snippet", SNIPPETS, ids=lambda s: s.stem)
def test_snippets_are_cells_that_print_the_same_every_time(snippet, outputs):
    source = snippet.read_text(encoding="utf-8")
    assert source.count("\n# %%") >= 2, "split the snippet into `# %%` cells"
    printed = outputs[snippet.name]
    assert printed.strip() and printed.isascii()  # ASCII: a Windows console prints it as is
    assert render.output(snippet) == printed, "seed whatever is random"


def test_a_snippet_runs_as_a_script_from_anywhere(tmp_path, outputs):
    # the handout's command; 07 imports nothing heavy, so a child process is cheap
    snippet = BACKGROUND / "07_one_line.py"
    done = subprocess.run(
        [sys.executable, str(snippet)], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert done.stdout.replace("\r\n", "\n") == outputs[snippet.name]


def test_write_docs_rewrites_a_stale_block_and_nothing_else(tmp_path):
    readme = tmp_path / "README.md"
    text = render.README.read_text(encoding="utf-8")
    name = render.block_name(SNIPPETS[-1])
    stale = text.replace(read_block(render.README, name), "```text\nold output\n```\n")
    readme.write_text(stale, encoding="utf-8", newline="\n")
    assert render.write_docs(readme) == [name]
    assert read_block(readme, name) == render.block(render.output(SNIPPETS[-1]))
    assert render.write_docs(readme) == []
