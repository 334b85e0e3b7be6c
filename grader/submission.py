"""A submission as students make them, matched to the starter's files by name wherever they sit.

`match(submission, dest, wanted)` takes a folder or a zip (flat files, a nested folder, a zip
holding a zip, Finder's `__MACOSX` and other stray files) and says which submitted file stands
for each starter file, which starter files are missing and which submitted files are not the
starter's. Zip paths that escape, zip bombs, links and oversized submissions are refused or
skipped, never followed.
"""

import os
import shutil
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

LIMIT = 1_000_000  # bytes: the chosen files together (a starter is a few kB)
FILE_LIMIT = 200_000  # bytes: one chosen file (the largest reference file is 23 kB): the grader
# parses and diffs each, and one attribute chain or a file of identical lines makes that deep or
# quadratic (the rest of the way, engine.texts's time and memory limits bound it)
UNPACKED = 20 * LIMIT  # bytes: everything unpacked from the zips together (a zip bomb stops here)
ENTRIES = 10_000  # files in the zips together: a zip of empty files is a bomb too
DEPTH = 3  # zips inside zips: the upload, a zip in it, and one more
JUNK = {"__MACOSX", "__pycache__", ".DS_Store", "Thumbs.db", "desktop.ini"}


class SubmissionError(ValueError):
    """A submission that cannot be graded (not a zip, no starter file in it, too large): one line."""


@dataclass
class Matched:
    """Which submitted file stands for each starter file, and what was left over."""

    files: dict[str, Path] = field(default_factory=dict)  # wanted rel path -> submitted file
    missing: list[str] = field(default_factory=list)  # wanted rel paths found nowhere
    stray: list[str] = field(default_factory=list)  # submitted files that are not the starter's


@dataclass
class _Found:
    """What unpacking found: each file by its path in the submission, and what was skipped."""

    files: dict[PurePosixPath, Path] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # links and unreadable zips, with why
    unpacked: int = 0  # bytes unpacked so far, over every zip
    entries: int = 0  # files unpacked so far, over every zip
    zips: int = 0  # zips unpacked so far: each gets its own folder
    upload: Path | None = None  # the submission itself: a zip that cannot be unpacked is fatal


def _ignored(rel: PurePosixPath) -> bool:
    """Files no student means to submit: Finder's and Windows' leftovers, caches, dot-files."""
    return any(part in JUNK or part.startswith(".") for part in rel.parts) or rel.suffix == ".pyc"


def _unzip(archive: Path, dest: Path, shown: str, found: _Found) -> None:
    """Unpack `archive` into the new folder `dest`: no path may leave it, no link is made, and the
    sizes and entry counts over every zip stay under the limits."""
    try:
        with zipfile.ZipFile(archive) as z:
            infos = z.infolist()
            found.entries += len(infos)
            found.unpacked += sum(i.file_size for i in infos)
            if found.entries > ENTRIES:
                raise SubmissionError(f"{shown} holds more than {ENTRIES} files")
            if found.unpacked > UNPACKED:
                raise SubmissionError(f"{shown} unpacks to more than {UNPACKED} bytes")
            for info in infos:
                name = PurePosixPath(info.filename.replace("\\", "/"))
                if name.is_absolute() or ".." in name.parts:
                    raise SubmissionError(f"{shown} holds a path outside it: {info.filename}")
                if info.is_dir():
                    continue
                if stat.S_ISLNK(info.external_attr >> 16):  # a link: its target is never read
                    found.skipped.append(f"{shown}/{name} (a link, not followed)")
                    continue
                target = dest / name
                target.parent.mkdir(parents=True, exist_ok=True)
                with z.open(info) as src, target.open("wb") as out:  # zipfile stops at file_size
                    shutil.copyfileobj(src, out)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, RuntimeError, EOFError, OSError) as exc:
        # RuntimeError: an encrypted entry; OSError: a name that is both a file and a folder
        raise SubmissionError(f"{shown} cannot be unpacked: {exc}") from None


def _walk(folder: Path, prefix: PurePosixPath, dest: Path, found: _Found, depth: int) -> None:
    """Every file under `folder` as `prefix`/its path; zips in it unpacked in turn (up to DEPTH)."""
    for top, dirs, names in os.walk(folder):  # links to folders are not followed
        here = Path(top)
        # not into __MACOSX/, .git/, .venv/ or caches: nothing there is a student's file
        dirs[:] = sorted(d for d in dirs if not _ignored(prefix / (here / d).relative_to(folder)))
        if depth == 0:  # an uploaded folder's files (a zip's were counted as it was unpacked)
            found.entries += len(names)
            if found.entries > ENTRIES:
                raise SubmissionError(f"the submission holds more than {ENTRIES} files")
        for name in sorted(names + [d for d in dirs if (here / d).is_symlink()]):
            path = here / name
            rel = prefix / path.relative_to(folder).as_posix()
            if _ignored(rel):
                continue
            if path.is_symlink() or not path.is_file():  # a FIFO or a device: never opened
                kind = (
                    "a link, not followed" if path.is_symlink() else "not a regular file, not read"
                )
                found.skipped.append(f"{rel} ({kind})")
            elif path.suffix.lower() == ".zip" and depth < DEPTH and zipfile.is_zipfile(path):
                _open_zip(path, rel, rel, dest, found, depth + 1)
            else:
                found.files[rel] = path


def _open_zip(
    path: Path, rel: PurePosixPath, prefix: PurePosixPath, dest: Path, found: _Found, depth: int
) -> None:
    """Unpack the zip `path` (shown as `rel`) into a fresh folder of `dest` and walk it, its files
    shown under `prefix`; a zip inside the submission that cannot be unpacked is named, not fatal
    (the size and count limits stay fatal: they guard the machine)."""
    out = dest / f"zip-{found.zips}"
    found.zips += 1
    out.mkdir(parents=True)
    try:
        _unzip(path, out, rel.as_posix(), found)
    except SubmissionError as exc:
        if path == found.upload or found.entries > ENTRIES or found.unpacked > UNPACKED:
            raise
        found.skipped.append(f"{rel} ({str(exc).removeprefix(f'{rel} ')})")
        return
    _walk(out, prefix, dest, found, depth)


def _found(submission: Path, dest: Path) -> _Found:
    """The submission's files by their paths in it: a folder walked, a zip unpacked into `dest`."""
    found = _Found(upload=submission)
    if submission.is_dir():
        _walk(submission, PurePosixPath(), dest, found, 0)
    elif zipfile.is_zipfile(submission):
        _open_zip(submission, PurePosixPath(submission.name), PurePosixPath(), dest, found, 1)
    else:
        raise SubmissionError(f"{submission.name} is neither a folder nor a zip file")
    return found


def _ends_with(rel: PurePosixPath, wanted: PurePosixPath) -> bool:
    """`rel` is `wanted` or sits in a folder that ends with `wanted`'s folders."""
    return rel.parts[-len(wanted.parts) :] == wanted.parts


def match(submission: Path, dest: Path, wanted: list[str]) -> Matched:
    """The submitted file that stands for each starter file in `wanted` (posix paths relative to
    the starter folder), found by name wherever it sits; zips are unpacked into `dest`."""
    found = _found(submission, dest)
    targets = [PurePosixPath(w) for w in wanted]
    # Each (wanted, submitted) pair of the same name, best first: a path that ends with the
    # wanted path (steps/lab-01/starter/exercises/wrong_mask.py), then the shallowest, then one in
    # a starter/ folder (a whole clone uploaded holds solution/attention.py as deep)
    pairs = sorted(
        (not _ends_with(rel, w), len(rel.parts), "starter" not in rel.parts, rel.as_posix(), w)
        for w in targets
        for rel in found.files
        if rel.name == w.name
    )
    taken: dict[PurePosixPath, PurePosixPath] = {}  # wanted -> submitted
    used: dict[PurePosixPath, PurePosixPath] = {}  # submitted -> wanted
    for *_, name, w in pairs:
        rel = PurePosixPath(name)
        if w not in taken and rel not in used:
            taken[w], used[rel] = rel, w
    result = Matched(missing=[w.as_posix() for w in targets if w not in taken])
    for rel in sorted(set(found.files) - set(used)):
        rivals = [w for w in targets if w.name == rel.name and w in taken]
        why = f" (not used: {taken[rivals[0]]} was taken for {rivals[0]})" if rivals else ""
        result.stray.append(f"{rel}{why}")
    result.stray += found.skipped
    result.files = {w.as_posix(): found.files[taken[w]] for w in targets if w in taken}
    if sum(path.stat().st_size for path in result.files.values()) > LIMIT:
        raise SubmissionError(f"the submission's starter files are larger than {LIMIT} bytes")
    for rel, path in result.files.items():
        if (size := path.stat().st_size) > FILE_LIMIT:
            raise SubmissionError(
                f"{rel} is {size // 1000} kB, over the grader's limit of "
                f"{FILE_LIMIT // 1000} kB for one file"
            )
    if not result.files:
        names = ", ".join(wanted)
        held = ", ".join(result.stray[:5]) or "no file"
        raise SubmissionError(f"the submission holds none of the starter's files ({names}): {held}")
    return result
