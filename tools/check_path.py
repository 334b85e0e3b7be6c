"""The check's path through the course's modules: `python -m tools.check_path <screen.json>...`
replays a recorded screen (tests/screens/) under sys.setprofile and prints each hop from one of
the course's modules (common.*, tools.*) to another, by a call or by a return, with counts.

A return is a hop back into a module the path had already left: what a reader following the code
has to come back to. Each file is replayed in this process after the ones before it (their caches
stay warm), so give one file for a cold count.
"""

import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

OURS = ("common", "tools")  # the course's modules; steps/ code is not on the check's path


def _module(frame) -> str | None:
    """The course module a frame runs in (None for Python's, pytest's, this tool's own)."""
    name = frame.f_globals.get("__name__", "")
    return name if name.split(".")[0] in OURS and name != __name__ else None


def _innermost(frame) -> str | None:
    """The course module of the nearest frame at or above `frame` that is one."""
    while frame is not None and (module := _module(frame)) is None:
        frame = frame.f_back
    return module if frame is not None else None


@dataclass
class Trace:
    """The modules the replay ran in, in order, and how often it parsed TODO regions."""

    hops: list[tuple[str, str]] = field(default_factory=list)  # (from, to), calls and returns
    returns: Counter = field(default_factory=Counter)  # module -> hops back into it once left
    parsed: list[str] = field(default_factory=list)  # the file of each common.todos.parse call
    writes: list[str] = field(default_factory=list)  # files opened for writing
    _here: str | None = None
    _left: set = field(default_factory=set)

    def _move(self, to: str | None) -> None:
        if to is None or to == self._here:
            return
        if self._here is not None:
            self.hops.append((self._here, to))
            self.returns[to] += to in self._left
            self._left.add(self._here)
        self._here = to

    def profile(self, frame, event, arg):
        if event == "call":
            if frame.f_code.co_name == "parse" and _module(frame) == "common.todos":
                self.parsed.append(str(frame.f_locals.get("where")))
            self._move(_module(frame) or self._here)
        elif event == "return":
            self._move(_innermost(frame.f_back))

    def audit(self, event, args):
        if (
            event == "open"
            and self._here
            and isinstance(args[1], str)
            and set(args[1]) & set("wax+")
        ):
            self.writes.append(str(args[0]))


def traced(record: dict) -> tuple[str, Trace]:
    """(the replayed screen, the path it took; the modules it uses imported first, so an import
    is no hop)."""
    import common.screen  # noqa: F401  (and, through it, common.status and common.course)
    from tools.screens import replayed

    path = Trace()
    sys.addaudithook(lambda event, args: path.audit(event, args) if path is _active[0] else None)
    _active[0] = path
    sys.setprofile(path.profile)
    try:
        screen = replayed(record)
    finally:
        sys.setprofile(None)
        _active[0] = None
    return screen, path


_active: list = [None]  # the path the audit hook records into (a hook cannot be removed)


def short(hops: list[tuple[str, str]]) -> list[str]:
    """The hops one a line; a back-and-forth repeated in a row (a <-> b, a <-> b) is one line."""
    lines, i = [], 0
    while i < len(hops):
        a, b = hops[i]
        n = 1
        while hops[i + 2 * n : i + 2 * n + 2] == [(a, b), (b, a)]:
            n += 1
        if n > 1 or hops[i + 1 : i + 2] == [(b, a)]:
            lines.append(f"{a} <-> {b}" + (f" x{n}" if n > 1 else ""))
            i += 2 * n
        else:
            lines.append(f"{a} -> {b}")
            i += 1
    return lines


def report(file: Path) -> list[str]:
    """What one recorded screen's replay says: the counts, then the hops."""
    _, path = traced(json.loads(file.read_text(encoding="utf-8")))
    modules = {m for hop in path.hops for m in hop}
    edges = Counter(path.hops)
    returns = sum(path.returns.values())
    most = ", ".join(f"{m} {n}" for m, n in path.returns.most_common() if n)
    counts = (
        f"{file.name}: {len(path.hops)} hops ({len(edges)} distinct) across {len(modules)} "
        f"modules, {returns} returns to a module already left ({most}); TODO regions parsed "
        f"{len(path.parsed)} times in {len(set(path.parsed))} files; {len(path.writes)} files written"
    )
    return [counts, *(f"  {line}" for line in short(path.hops))]


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for name in argv:
        print("\n".join(report(Path(name))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
