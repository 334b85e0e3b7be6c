"""Predictions the student writes before a run (starter/predictions.toml): the run answers, nothing grades.

The protocol: CONTRIBUTING.md, "Predictions"."""

import tomllib
from dataclasses import dataclass
from pathlib import Path

from common import shown
from common.course import course_step
from common.course.todos import split_id

FILE = "predictions.toml"  # in starter/ (the student's) and solution/ (the empty template)
EMPTY = ""  # an empty slot, as the template writes it


@dataclass(frozen=True)
class Answer:
    """What a run measured for one prediction slot, in the step's words."""

    key: str  # the slot's name in predictions.toml
    what: str  # what was measured, e.g. "the raw scores' std at d_k = 64"
    measured: float | int | str | None  # None: this run did not measure it
    shown: str = ""  # how the run prints the measured value (default: as it is)
    waits: str = ""  # when measured is None: why, e.g. "TODO(step-04 4.2.4) not written yet"


def path(step: str, impl: str = "starter") -> Path:
    """The predictions file of a step: the student's (starter) or the empty template (solution)."""
    return course_step(step).impl(impl) / FILE


def slots(step: str) -> list[str]:
    """The slots a step offers: the keys of its template, in order (none without a template)."""
    template = course_step(step).marked / FILE  # solution/'s, or an open step's todos/
    return list(tomllib.loads(template.read_text(encoding="utf-8"))) if template.is_file() else []


def read(step: str) -> tuple[dict, str | None]:
    """(the student's predictions, or {}; a one-line problem with the file, or None)."""
    mine = path(step)
    if not mine.is_file():
        restore = f"git checkout -- {shown(mine)}"
        return {}, f"{shown(mine)} is missing: every slot counts as empty (restore it: {restore})"
    try:
        return tomllib.loads(mine.read_text(encoding="utf-8")), None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        return {}, f"{shown(mine)} is not valid TOML ({exc}): fix it; until then no slot is read"


def written(value) -> bool:
    """Is a slot filled in? A missing one or an empty string (or only spaces) is not."""
    return value is not None and not (isinstance(value, str) and not value.strip())


def _number(value) -> float | None:
    """A written number: 8, 7.95, "8", "211,072", "1_000"; None if it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(str(value).strip().replace(",", "").replace("_", ""))
    except ValueError:
        return None


def _words(value) -> str:
    """A choice as compared: case, commas, spaces and hyphens do not matter."""
    return " ".join(str(value).lower().replace("-", " ").replace(",", " ").split())


def compare(value, answer: Answer) -> str:
    """One line: the prediction (or "no prediction written") before the measured answer."""
    measured = answer.shown or f"{answer.measured}"
    said = f"you wrote {value}" if written(value) else "no prediction written"
    if answer.measured is None:
        return f"{said}; not measured yet: {answer.waits}"
    if not written(value):
        return f"{said}; measured {measured}"
    if isinstance(answer.measured, str):
        same = _words(value) == _words(answer.measured)
        return f"{said}; measured {measured} ({'the same answer' if same else 'another answer'})"
    guess = _number(value)
    if guess is None:
        return f"you wrote {value!r}, which is not a number; measured {measured}"
    # against the value as printed, so that the difference is the one the student reads
    printed = _number(answer.shown) if answer.shown else None
    truth = float(answer.measured) if printed is None else printed
    off = guess - truth
    relative = f", {abs(off) / abs(truth):.0%}" if truth else ""
    by = f"{off:+,.0f}" if abs(off) >= 100 else f"{off:+.3g}"  # counts in digits, not 1.1e+04
    return f"{said}; measured {measured} (off by {by}{relative})"


def report(step: str, answers: list[Answer]) -> list[str]:
    """The run's lines: each slot's prediction beside its measured answer."""
    if not answers:
        return []
    mine, problem = read(step)
    lines = [f"Your predictions ({shown(path(step))}) and what this run measured:"]
    if problem:
        lines.append(f"  {problem}")
    lines += [f"  {a.key}, {a.what}: {compare(mine.get(a.key), a)}" for a in answers]
    lines.append("  (your own record: nothing grades a prediction)")
    return lines


def unpredicted(step: str, todos: list[str]) -> dict[str, tuple[str, ...]]:
    """TODO id -> the slots step.toml [predictions] asks before it still empty (none: left out)."""
    asked, (mine, _) = course_step(step).predictions, read(step)
    empty = {
        t: [s for s in asked.get(split_id(t)[1], []) if not written(mine.get(s))] for t in todos
    }
    return {t: tuple(slots) for t, slots in empty.items() if slots}


def progress_note(step: str) -> str:
    """For `progress`: '; predictions written: 2 of 6', or '' for a step without slots."""
    if not (keys := slots(step)):
        return ""
    mine, _ = read(step)
    return f"; predictions written: {sum(written(mine.get(k)) for k in keys)} of {len(keys)}"
