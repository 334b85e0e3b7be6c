"""The values recorded into the steps' tests (tools/recorded.py) are what the reference gives now,
and a block that drifted from it is named with the command that writes it again."""

import shutil

from tools import recorded


def test_every_recorded_block_is_what_the_reference_gives():
    assert recorded.BLOCKS, "no recorded block: the writer lists none"
    assert recorded.stale() == [], "python -m tools.recorded --write"


def test_a_block_that_no_longer_holds_the_reference_is_named(tmp_path, monkeypatch, capsys):
    path, name, made = recorded.BLOCKS[0]
    copy = shutil.copy(path, tmp_path / path.name)
    text = copy.read_text(encoding="utf-8")
    copy.write_text(text.replace("0: 3e-05,", "0: 3.1e-05,", 1), encoding="utf-8")
    monkeypatch.setattr(recorded, "BLOCKS", [(copy, name, made)])
    assert recorded.main([]) == 1
    assert f"{name} (python -m tools.recorded --write)" in capsys.readouterr().out
    assert recorded.main(["--write"]) == 0 and recorded.stale() == []
