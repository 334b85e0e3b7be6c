"""The one step shape: a step's run.py declares `RUN = Run(...)`, and `execute` runs it for all.

What an experiment declares: CONTRIBUTING.md, "A step's run".
"""

import argparse
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import counted, shown
from common.course import predictions
from common.course.todos import optional, todo_in
from common.docs import write_block
from common.loader import load
from common.run.figures import out_dir


class Stop(Exception):
    """An experiment that cannot go on (a bad option, a damaged file, Ctrl-C): one line, a code."""

    def __init__(self, line: str, code: int = 1):
        super().__init__(line)
        self.code = code


@dataclass(frozen=True)
class Block:
    """A generated handout block, `<!-- BEGIN name -->` ... `<!-- END name -->`."""

    name: str
    write: Callable[[Any], str]  # the experiment's result -> Markdown
    title: str = ""  # printed above the block in the run's output (default: "(name)")
    # a common.docs comparator when a fresh run reproduces it
    check: Callable[[str, str], bool] | None = None
    record: bool = True  # False: printed only, never written into the handout (timings)
    # result -> what a fresh run is checked on, when the block holds more (the machine it ran on)
    compared: Callable[[Any], str] | None = None


@dataclass(frozen=True)
class Figure:
    """A figure of the run: out/<step>/<name>.png (`<name>_quick.png` with --quick)."""

    name: str
    draw: Callable[[Any, Path], Path]  # (result, path) -> the path written


@dataclass(frozen=True)
class Slot:
    """A slot of the step's predictions.toml that an experiment's result answers."""

    key: str
    what: str  # what the run measured, in the step's words
    value: Callable[[Any], Any]  # result -> the measured value
    shown: Callable[[Any], str] = str  # how the value is printed
    quick: str = ""  # what replaces `what` under --quick, when a --quick run measures another thing


@dataclass
class Context:
    """What an experiment's compute gets: the run's options and the results computed so far."""

    step: str
    impl: str = "solution"
    quick: bool = False
    args: argparse.Namespace | None = None
    results: dict[str, Any] = field(default_factory=dict)
    waiting: dict[str, str] = field(default_factory=dict)  # experiment -> the TODO id it waits for

    def load(self, module: str):
        """The module of this step's code being run (the reference or the student's starter)."""
        return load(self.step, module, self.impl)

    def option(self, name: str, default=None):
        """A step option from step.toml's [run.options] (its default when tests call compute)."""
        return getattr(self.args, name, default) if self.args is not None else default


@dataclass(frozen=True)
class Experiment:
    """One experiment of a step's run: what it needs, what it computes, what it writes."""

    name: str
    todos: tuple[str, ...]  # the TODO ids it needs: a skip line names the first one not written
    compute: Callable[[Context], Any]  # may raise NotImplementedError from a TODO not written
    blocks: tuple[Block, ...] = ()
    figures: tuple[Figure, ...] = ()
    slots: tuple[Slot, ...] = ()
    uses: tuple[str, ...] = ()  # earlier experiments whose results compute reads
    verdict: Callable[[Any, Context], str | None] | None = None  # a FAIL line, or None
    docs: bool = False  # computed for the handout only (--write-docs, the docs test), not a run
    waiting: str = ""  # printed under its skip line while its own TODO waits (predict first)
    skip: Callable[[Context], str | None] | None = None  # why an option leaves it out, or None

    @property
    def checked(self) -> bool:
        return any(b.check is not None for b in self.blocks)


@dataclass(frozen=True)
class Run:
    """A step's run: its experiments, in the order a student meets their TODOs."""

    step: str
    experiments: tuple[Experiment, ...]
    threads: int | None = 1  # torch's threads while computing: fixed, so a run repeats bit for bit

    def __post_init__(self):
        names = [e.name for e in self.experiments]
        for seen in (names, [b.name for e in self.experiments for b in e.blocks]):
            if twice := sorted({n for n in seen if seen.count(n) > 1}):
                raise ValueError(f"{self.step}'s run: names must be unique, got {twice} twice")
        for i, e in enumerate(self.experiments):
            if late := [u for u in e.uses if u not in names[:i]]:
                raise ValueError(
                    f"{self.step}'s {e.name} uses {late}: expected earlier experiments"
                )


@dataclass
class Outcome:
    """What a run computed: results by experiment, and for each one that waits, its TODO."""

    results: dict[str, Any]
    waiting: dict[str, str]  # experiment -> the TODO id it waits for
    skipped: dict[str, str] = field(default_factory=dict)  # experiment -> the option leaving it out

    def blocks(self, run: Run, kind: str = "all") -> dict[str, tuple[Block, str]]:
        """The written blocks of the experiments that ran: all, 'checked' or 'recorded'."""
        keep = {
            "all": lambda b: True,
            "checked": lambda b: b.check is not None,
            "recorded": lambda b: b.record,
        }[kind]
        return {
            b.name: (b, b.write(self.results[e.name]))
            for e in run.experiments
            if e.name in self.results
            for b in e.blocks
            if keep(b)
        }


def compute(run: Run, ctx: Context, only: Callable[[Experiment], bool] = lambda e: True) -> Outcome:
    """Every experiment `only` keeps, in order; one that reaches a TODO not written waits."""
    from common.run.timing import torch_threads  # torch: only when computing

    outcome = Outcome(ctx.results, ctx.waiting)
    with nullcontext() if run.threads is None else torch_threads(run.threads):
        for e in run.experiments:
            if not only(e):
                continue
            if blocked := [u for u in e.uses if u in outcome.waiting]:
                outcome.waiting[e.name] = outcome.waiting[blocked[0]]
                continue
            left_out = [outcome.skipped[u] for u in e.uses if u in outcome.skipped]
            if why := (left_out[0] if left_out else e.skip and e.skip(ctx)):
                outcome.skipped[e.name] = why
                continue
            try:
                outcome.results[e.name] = e.compute(ctx)
            except NotImplementedError as exc:
                outcome.waiting[e.name] = todo_in(str(exc)) or (e.todos[0] if e.todos else str(exc))
    return outcome


def results(run: Run, impl: str = "solution", quick: bool = True) -> dict[str, Any]:
    """Every result of the run (tests call this); a TODO not written raises NotImplementedError."""
    ctx = Context(run.step, impl, quick)
    compute(run, ctx, only=lambda e: not e.docs)
    return finished(ctx)


def finished(ctx: Context) -> dict[str, Any]:
    """The results a run computed in `ctx`; a required TODO not written raises NotImplementedError."""
    if required := [t for t in ctx.waiting.values() if not optional(t)]:
        raise NotImplementedError(f"TODO({required[0]}) not written")
    return ctx.results


def fresh_blocks(run: Run) -> dict[str, tuple[str, Callable[[str, str], bool]]]:
    """The handout's checked blocks from a fresh full reference run, and how close each must be."""
    needed = {u for e in run.experiments if e.checked for u in e.uses}
    outcome = compute(run, Context(run.step), only=lambda e: e.checked or e.name in needed)
    return {
        b.name: ((b.compared or b.write)(outcome.results[e.name]), b.check)
        for e in run.experiments
        if e.name in outcome.results
        for b in e.blocks
        if b.check is not None
    }


def answers(run: Run, outcome: Outcome, quick: bool = False) -> list[predictions.Answer]:
    """Each slot's measured answer, or why this run did not measure it."""
    found = []
    for e, s in [(x, s) for x in run.experiments for s in x.slots]:
        if e.name in outcome.results:
            value = s.value(outcome.results[e.name])
            what = s.quick if quick and s.quick else s.what
            found.append(predictions.Answer(s.key, what, value, s.shown(value)))
        else:
            waits = outcome.waiting.get(e.name)
            why = f"TODO({waits}) not written" if waits else "its experiment did not run"
            why = outcome.skipped.get(e.name, why)
            found.append(predictions.Answer(s.key, s.what, None, waits=why))
    return found


def execute(run: Run, args: argparse.Namespace, ctx: Context | None = None) -> int:
    """The run as `python -m common.run <step>` prints it: blocks, figures, predictions, skips.
    A test passes its own `ctx` (made from `args`) to read what the run computed."""
    ctx = ctx or Context(run.step, args.impl, args.quick, args)
    try:
        outcome = compute(run, ctx, only=lambda e: args.write_docs or not e.docs)
    except Stop as stop:
        print(stop)
        return stop.code
    for b, text in outcome.blocks(run).values():
        print(b.title or f"({b.name})", text, sep="\n")
    folder = out_dir(run.step, args.out)
    quick = "_quick" if args.quick else ""  # a quick run's figures never overwrite the full run's
    ran = [(e, outcome.results[e.name]) for e in run.experiments if e.name in outcome.results]
    # a figure a later experiment draws again (with more in it) is drawn once, by it
    for f, result in {f.name: (f, r) for e, r in ran for f in e.figures}.values():
        print(f"wrote {f.draw(result, folder / f'{f.name}{quick}.png')}")
    print("", *predictions.report(run.step, answers(run, outcome, args.quick)), sep="\n")
    fails = [line for e, r in ran if e.verdict and (line := e.verdict(r, ctx))]
    for name, why in outcome.skipped.items():
        print(f"skipped {name}: {why}")
    for e in run.experiments:  # one line each: the experiment and its TODO (its prompt, if its own)
        if todo := outcome.waiting.get(e.name):
            prompt = [e.waiting] if e.waiting and todo in e.todos else []
            print(f"skipped {e.name}: TODO({todo}) not written yet", *prompt, sep="\n  ")
    required = [t for t in outcome.waiting.values() if not optional(t)]
    if outcome.waiting:
        left = "" if required else "; only optional TODOs are left, so this run passes"
        print(f"\n{counted(len(outcome.waiting), 'experiment', 'wait for TODOs')}{left}")
    if args.write_docs:
        record(args.readme, outcome, run)
    for line in fails:
        print(f"FAIL: {line}")
    return 1 if required or fails else 0


def record(readme: Path, outcome: Outcome, run: Run) -> None:
    """--write-docs: every recorded block into the handout, once nothing waits; say what changed."""
    if outcome.waiting:  # an experiment an option left out keeps its recorded blocks
        print(f"{readme.name} not rewritten: its numbers need every experiment")
        return
    blocks = outcome.blocks(run, "recorded")
    changed = [name for name, (_, text) in blocks.items() if write_block(readme, name, text)]
    print(f"{shown(readme)}: {', '.join(changed) or 'already up to date'}")
