"""data.py opens as code cells too: run in order, as a notebook would, its cells give the corpus."""

import contextlib
import io
import re

from common import SOLUTIONS_DIR

DATA_PY = SOLUTIONS_DIR / "step-03" / "data.py"


def cells() -> list[str]:
    """The source of each `# %%` cell of data.py, the text before the first marker included."""
    return re.split(r"(?m)^(?=# %%)", DATA_PY.read_text(encoding="utf-8"))


def test_data_py_is_split_into_titled_cells():
    parts = cells()
    assert len(parts) >= 5  # the docstring, then four cells
    assert all(re.match(r"# %% \S", part) for part in parts[1:]), "every cell has a title"


def test_running_the_cells_in_order_shows_the_pipeline():
    namespace = {"__name__": "__main__"}  # what a notebook kernel sets
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        for source in cells():
            exec(compile(source, str(DATA_PY), "exec"), namespace)
    lines = printed.getvalue().splitlines()
    assert re.fullmatch(r"[\d,]+ characters, \d+ distinct: .*", lines[0]), lines[0]
    assert lines[1] == "First Citizen:"
    assert lines[-1].endswith("-> 'First Citizen:'")


def test_importing_data_prints_nothing(capsys, data):
    data.load_text()
    assert capsys.readouterr().out == ""
