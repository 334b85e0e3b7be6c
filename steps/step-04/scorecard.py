"""Grade proofs: run each `prove_*` against the reference Head and every broken Head, and say which bugs it caught."""

import textwrap
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import torch
import torch.nn as nn

from common.course import course_step
from common.course.bugs import Bug, broken_copy
from common.loader import reference

STEP = course_step("step-04")
HEADS = STEP.bugs()  # bugs.py BUGS: each one replacement in the reference head.py

# Each 4.2 proof answers for the broken heads that violate its own property; together they cover
# every bug that breaks a 4.2 property. A proof counts as written only when it catches all of its
# own, so an empty proof (one that asserts nothing) is never done.
OWN = {
    "prove_simplex": [
        "mask after softmax",
        "masked with 0 instead of -inf",
        "softmax over the wrong axis",
        "upper-triangular mask",
        "inverted mask",
    ],
    "prove_causality_by_perturbation": ["no mask", "mask after softmax, renormalised"],
    "prove_causality_by_gradient": [
        "no mask",
        "upper-triangular mask",
        "inverted mask",
        "diagonal excluded",
        "mask after softmax",
    ],
}


def violates_4_2(bug: Bug) -> bool:
    """Does `bug` break a 4.2 property (simplex or causality)? Its own proof must catch it then."""
    return any(bug.name in own for own in OWN.values())


class LabHead(nn.Module):
    """A Step 4 head whose attention is lab-01's module `lab`: the proofs are judged on heads that
    need none of Step 4's reference, so they grade the same where Step 4 is still open."""

    lab: ModuleType

    def __init__(self, d, d_head, T_max):
        super().__init__()
        for name in ("key", "query", "value"):  # Head's order: the same seed, the same weights
            setattr(self, name, nn.Linear(d, d_head, bias=False))  # (B, T, d) -> (B, T, d_head)
        self.register_buffer("tril", torch.tril(torch.ones(T_max, T_max)))  # (T_max, T_max)
        self.A = None

    def forward(self, x):
        T = x.shape[1]  # x: (B, T, d)
        projected = [layer(x) for layer in (self.query, self.key, self.value)]  # (B, T, d_head) x3
        out, weights = self.lab.scaled_dot_product_attention(*projected, self.lab.causal_mask(T))
        # a row that blocks every key: lab-01's softmax gives zeros, Step 4's F.softmax 0 / 0,
        # NaN in the output and in every gradient that flows through that row (a product does)
        empty = weights.sum(dim=-1, keepdim=True) == 0  # (B, T, 1)
        as_step_4 = torch.where(empty, float("nan"), 1.0)  # (B, T, 1)
        self.A = (weights * as_step_4).detach()  # (B, T, T)
        return out * as_step_4  # (B, T, d_head)


def lab_head(lab: ModuleType) -> type:
    """The LabHead class on the attention module `lab`."""
    return type("Head", (LabHead,), {"lab": lab})


# lab-01 is closed before Step 4 opens: its reference is in every class's hands
ATTENTION = reference("lab-01", "attention")
SOUND = lab_head(ATTENTION)  # every 4.2 proof must pass on it


def head_with(bug: Bug) -> type:
    """The broken head of `bug`: a LabHead on a fresh copy of lab-01's attention.py with the same
    mistake in it (lab-01's bug of the same words: Step 4's bugs are told as lab-01's)."""
    same = [b for b in reference("lab-01", "bugs").BUGS if b.breaks == bug.breaks]
    if len(same) != 1:
        raise ValueError(f"{bug.name!r}: expected one lab-01 bug with its words, got {len(same)}")
    return lab_head(broken_copy(Path(ATTENTION.__file__).parent, "attention", same[0]))


@dataclass
class Scorecard:
    """Outcome of every proof on the reference head and on each broken head."""

    proofs: list[str]
    reference: dict[str, str]  # proof -> "pass" | "FAIL: ..." | "TODO: ..."
    results: dict[
        str, dict[str, str]
    ]  # bug name -> proof -> "caught" | "missed" | "TODO" | "error"
    bugs: list[Bug]

    def caught(self, bug: Bug) -> bool:
        """Did any proof catch `bug`?"""
        return "caught" in self.results[bug.name].values()

    def sound(self) -> bool:
        """Every proof passes on the reference head (a proof that fails there proves nothing)."""
        return all(r == "pass" for r in self.reference.values())

    def missed(self) -> list[Bug]:
        """Bugs that break a 4.2 property and that no proof caught."""
        return [b for b in self.bugs if violates_4_2(b) and not self.caught(b)]

    def written(self, proof: str) -> bool:
        """Is `proof` more than its TODO?"""
        return not self.reference[proof].startswith("TODO")

    def own_missed(self, proof: str) -> list[Bug]:
        """The bugs of `proof`'s own property (OWN) that it did not catch."""
        own = OWN.get(proof, [])
        return [b for b in self.bugs if b.name in own and self.results[b.name][proof] != "caught"]

    def render(self) -> str:
        """The scorecard as a fixed-width table with a hint for every miss."""
        width = max(len(b.name) for b in self.bugs) + 2
        cols = [p.removeprefix("prove_") for p in self.proofs]
        sizes = [max(len(c), 7) for c in cols]

        def line(label: str, cells: list[str]) -> str:
            padded = "  ".join(c.ljust(n) for c, n in zip(cells, sizes, strict=True))
            return (label.ljust(width) + padded).rstrip()

        lines = [line("", cols)]
        lines.append(line("reference Head", [self.reference[p].split(":")[0] for p in self.proofs]))
        for bug in self.bugs:
            lines.append(line(bug.name, [self.results[bug.name][p] for p in self.proofs]))
        lines.append("")
        for proof, outcome in self.reference.items():
            if not self.written(proof):
                lines.append(f"{proof}: not written yet")
                continue
            if outcome != "pass":
                lines.append(f"UNSOUND  {proof} must pass on the reference Head: {outcome}")
            for bug in self.own_missed(proof):
                lines.append(f"MISSED  {proof}: {bug.name}: {bug.breaks}. Hint: {bug.hint}")
            if proof in OWN:
                own = len(OWN[proof])
                lines.append(
                    f"{proof}: caught {own - len(self.own_missed(proof))} of the {own} "
                    "broken heads that violate its property"
                )
        for bug in self.bugs:
            if not violates_4_2(bug):
                lines.append(f"NOT A 4.2 BUG  {bug.name}: {bug.breaks}")
            elif any(map(self.written, self.proofs)) and not self.caught(bug):
                lines.append(f"MISSED  {bug.name}: {bug.breaks}. Hint: {bug.hint}")
        caught = sum(self.caught(b) for b in self.bugs if violates_4_2(b))
        total = sum(violates_4_2(b) for b in self.bugs)
        lines.append(f"score: {caught}/{total} broken heads caught that violate a 4.2 property")
        # the check's screen is 100 columns: a long reason wraps at its words, 2 deeper
        long = {i for i, line in enumerate(lines) if len(line) > 100}
        return "\n".join(
            "\n".join(textwrap.wrap(line, 100, subsequent_indent="  ")) if i in long else line
            for i, line in enumerate(lines)
        )


def _outcome(proof, head_cls) -> str:
    """'pass', or why the proof rejected (or could not judge) this head."""
    try:
        proof(head_cls)
    except NotImplementedError as exc:
        return f"TODO: {exc}"
    except AssertionError as exc:
        return f"FAIL: {str(exc).splitlines()[0] if str(exc) else 'assertion failed'}"
    except Exception as exc:  # a proof that crashes has not proved anything
        return f"error: {type(exc).__name__}: {exc}"
    return "pass"


def grade(
    proofs: ModuleType,
    reference: type,
    bugs: list[Bug] = HEADS,
    only: list[str] | None = None,
) -> Scorecard:
    """Run every `prove_*` of `proofs` (or those in `only`) on `reference` and on each broken head
    (a copy of the reference head.py with one bug in, whatever `reference` is)."""
    names = [n for n, f in vars(proofs).items() if n.startswith("prove_") and callable(f)]
    names = [n for n in names if only is None or n in only]
    on_reference = {n: _outcome(getattr(proofs, n), reference) for n in names}
    results = {}
    for bug in bugs:
        broken = head_with(bug)
        row = {}
        for n in names:
            if on_reference[n].startswith("TODO"):  # not written: nothing to run it on
                row[n] = "TODO"
                continue
            outcome = _outcome(getattr(proofs, n), broken)
            kind = outcome.split(":")[0]  # pass | FAIL | TODO | error
            row[n] = {"pass": "missed", "FAIL": "caught"}.get(kind, kind)
        results[bug.name] = row
    return Scorecard(names, on_reference, results, bugs)


def merge(cards: list[Scorecard]) -> Scorecard:
    """One scorecard from the cards of single proofs, in the order they were graded."""
    proofs = [p for card in cards for p in card.proofs]
    reference = {p: r for card in cards for p, r in card.reference.items()}
    results = {
        b.name: {p: r for card in cards for p, r in card.results[b.name].items()}
        for b in cards[0].bugs
    }
    return Scorecard(proofs, reference, results, cards[0].bugs)


def todo_or_none(card: Scorecard) -> str | None:
    """The first TODO message if any proof is still unwritten."""
    todo = [o for o in card.reference.values() if o.startswith("TODO")]
    return todo[0].removeprefix("TODO: ") if todo else None
