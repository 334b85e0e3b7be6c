"""tools.grading.submission: lab-01's starter files found wherever students put them (flat, nested, in a
zip of a folder or a zip of a zip, beside Finder's leftovers), what is missing and what is stray
named, and the zips that would write outside their folder or fill the disk refused."""

import zipfile
from pathlib import Path

import pytest

from common.course import course_step
from common.loader import py_files
from tools.grading.submission import LIMIT, UNPACKED, SubmissionError, match

STARTER = course_step("lab-01").starter
# The starter's files, as the grade asks for them: ["attention.py", "exercises/wrong_mask.py"]
WANTED = sorted(
    p.relative_to(course_step("lab-01").solution).as_posix()
    for p in py_files(course_step("lab-01").solution)
)


def files(layout: dict[str, str]) -> dict[str, bytes]:
    """Submitted path -> bytes: each wanted starter file (the value) placed at its path (the key)."""
    return {path: (STARTER / wanted).read_bytes() for path, wanted in layout.items()}


def folder(dest: Path, content: dict[str, bytes]) -> Path:
    """A folder holding `content` (path -> bytes)."""
    for name, data in content.items():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_bytes(data)
    return dest


def zipped(dest: Path, content: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> Path:
    """A zip holding `content` (path in the zip -> bytes), compressed with `method`."""
    with zipfile.ZipFile(dest, "w", method) as z:
        for name, data in content.items():
            z.writestr(name, data)
    return dest


def assert_whole(m) -> None:
    """Every starter file found, each the starter's own bytes, nothing missing."""
    assert sorted(m.files) == WANTED and m.missing == [], m
    for wanted, path in m.files.items():
        assert path.read_bytes() == (STARTER / wanted).read_bytes(), (wanted, path)


def test_the_wanted_files_are_lab_01s_starter_files():
    assert WANTED == ["attention.py", "exercises/wrong_mask.py"]


def test_a_flat_upload_is_matched_by_name(tmp_path):
    """Gradescope's drag-and-drop: wrong_mask.py at the root, not in exercises/."""
    sub = folder(tmp_path / "sub", files({"attention.py": WANTED[0], "wrong_mask.py": WANTED[1]}))
    m = match(sub, tmp_path / "scratch", WANTED)
    assert_whole(m)
    assert m.files["exercises/wrong_mask.py"] == sub / "wrong_mask.py" and m.stray == [], m


def test_a_nested_folder_is_matched(tmp_path):
    """The whole repository's path to the starter, as a student who zips from the top uploads it."""
    prefix = "llm-internals/steps/lab-01/starter"
    sub = folder(tmp_path / "sub", files({f"{prefix}/{w}": w for w in WANTED}))
    m = match(sub, tmp_path / "scratch", WANTED)
    assert_whole(m)
    assert m.stray == [], m


def test_a_zip_of_a_folder_with_macosx_leftovers_is_matched_and_the_leftovers_ignored(tmp_path):
    """What macOS's Compress makes: the folder, __MACOSX/ resource forks and .DS_Store."""
    content = files({f"starter/{w}": w for w in WANTED}) | {
        "__MACOSX/starter/._attention.py": b"\x00\x05\x16\x07",
        "__MACOSX/starter/exercises/._wrong_mask.py": b"\x00\x05\x16\x07",
        "starter/.DS_Store": b"\x00\x00\x00\x01Bud1",
        "starter/__pycache__/attention.cpython-312.pyc": b"\x00",
    }
    m = match(zipped(tmp_path / "sub.zip", content), tmp_path / "scratch", WANTED)
    assert_whole(m)
    assert m.stray == [], m


def test_a_zip_holding_a_zip_is_unpacked(tmp_path):
    """A student zips the zip they made: the inner zip's files are found, named under it."""
    inner = zipped(tmp_path / "starter.zip", files({f"starter/{w}": w for w in WANTED}))
    outer = zipped(tmp_path / "sub.zip", {"starter.zip": inner.read_bytes(), "notes.txt": b"hi"})
    m = match(outer, tmp_path / "scratch", WANTED)
    assert_whole(m)
    assert m.stray == ["notes.txt"], m


def test_a_missing_file_is_named_and_the_rest_matched(tmp_path):
    sub = folder(tmp_path / "sub", files({"attention.py": "attention.py"}))
    m = match(sub, tmp_path / "scratch", WANTED)
    assert m.missing == ["exercises/wrong_mask.py"], m
    assert m.files == {"attention.py": sub / "attention.py"}, m


def test_stray_files_are_named_and_a_second_copy_says_which_was_taken(tmp_path):
    """The copy whose path ends with the starter's path wins over a shallower one; the other is
    stray, with the one taken named."""
    content = files(
        {
            "exercises/wrong_mask.py": WANTED[1],
            "wrong_mask.py": WANTED[1],
            "attention.py": WANTED[0],
            "old/attention.py": WANTED[0],
        }
    )
    sub = folder(tmp_path / "sub", content | {"notes.txt": b"my notes"})
    m = match(sub, tmp_path / "scratch", WANTED)
    assert_whole(m)
    assert m.files == {w: sub / w for w in WANTED}, m
    assert m.stray == [
        "notes.txt",
        "old/attention.py (not used: attention.py was taken for attention.py)",
        "wrong_mask.py (not used: exercises/wrong_mask.py was taken for exercises/wrong_mask.py)",
    ], m


def test_a_link_is_not_followed(tmp_path):
    """A link to a file outside the submission (here another starter's) is named, never read."""
    sub = folder(tmp_path / "sub", files({"attention.py": WANTED[0]}))
    (sub / "wrong_mask.py").symlink_to(STARTER / WANTED[1])
    m = match(sub, tmp_path / "scratch", WANTED)
    assert m.missing == ["exercises/wrong_mask.py"], m
    assert m.stray == ["wrong_mask.py (a link, not followed)"], m


@pytest.mark.parametrize("name", ["../attention.py", "/tmp/attention.py", "a/../../attention.py"])
def test_a_zip_path_that_escapes_is_refused(tmp_path, name):
    sub = zipped(tmp_path / "sub.zip", files({name: WANTED[0]}))
    with pytest.raises(SubmissionError, match="holds a path outside it"):
        match(sub, tmp_path / "scratch", WANTED)
    assert not (tmp_path / "attention.py").exists()


def test_a_zip_bomb_and_oversized_files_are_refused(tmp_path):
    """Zeros compress to almost nothing: the unpacked size is what counts, in every zip."""
    bomb = zipped(tmp_path / "bomb.zip", {"attention.py": bytes(UNPACKED + 1)})
    assert bomb.stat().st_size < 100_000
    with pytest.raises(SubmissionError, match=f"unpacks to more than {UNPACKED} bytes"):
        match(bomb, tmp_path / "scratch-1", WANTED)
    inner = zipped(tmp_path / "sub.zip", {"starter.zip": bomb.read_bytes()})
    with pytest.raises(SubmissionError, match=f"unpacks to more than {UNPACKED} bytes"):
        match(inner, tmp_path / "scratch-2", WANTED)
    big = folder(tmp_path / "big", {"attention.py": b"#" * (LIMIT + 1)})
    with pytest.raises(SubmissionError, match=f"larger than {LIMIT} bytes"):
        match(big, tmp_path / "scratch-3", WANTED)


def test_an_unusable_submission_is_one_line(tmp_path):
    (tmp_path / "notes.zip").write_bytes(b"not a zip")
    with pytest.raises(SubmissionError, match="neither a folder nor a zip file"):
        match(tmp_path / "notes.zip", tmp_path / "scratch", WANTED)
    empty = folder(tmp_path / "empty", {"README.txt": b"hello"})
    with pytest.raises(SubmissionError, match=r"none of the starter's files .*: README.txt$"):
        match(empty, tmp_path / "scratch", WANTED)


def test_a_whole_clone_uploaded_is_graded_on_its_starter_not_its_solution(tmp_path):
    """steps/lab-01/solution/attention.py is as deep as the starter's: the starter's is taken."""
    content = files({f"llm-internals/steps/lab-01/starter/{w}": w for w in WANTED})
    content |= {"llm-internals/steps/lab-01/solution/attention.py": b"# the reference\n"}
    content |= {"llm-internals/.venv/lib/attention.py": b"# not the student's\n"}
    sub = folder(tmp_path / "sub", content)
    m = match(sub, tmp_path / "scratch", WANTED)
    assert_whole(m)
    taken = "llm-internals/steps/lab-01/starter/attention.py"
    assert m.stray == [
        f"llm-internals/steps/lab-01/solution/attention.py (not used: {taken} was taken for attention.py)"
    ], m


def test_a_zip_inside_the_submission_that_cannot_be_unpacked_is_named_not_fatal(tmp_path):
    content = files({w: w for w in WANTED}) | {"old.zip": b"PK\x03\x04 not really a zip"}
    sub = folder(tmp_path / "sub", content)
    m = match(sub, tmp_path / "scratch", WANTED)
    assert_whole(m)
    assert m.stray == ["old.zip"], m  # not a zip after all: a stray file, named
    old = zipped(tmp_path / "old.zip", {"attention.py": b"print('old')\n"}, zipfile.ZIP_STORED)
    data = bytearray(old.read_bytes())
    data[data.index(b"print")] ^= 0xFF  # a damaged file inside an intact zip: its CRC fails
    (sub / "old.zip").write_bytes(bytes(data))
    m = match(sub, tmp_path / "scratch-2", WANTED)
    assert_whole(m)
    assert m.stray == ["old.zip (cannot be unpacked: Bad CRC-32 for file 'attention.py')"], m
