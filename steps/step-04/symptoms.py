"""Step 4's curated bugs (step.toml [mutation]): each one's Head replaces head.py's."""

from types import ModuleType

from common.broken import BUGS, Bug, broken_head

__all__ = ["BUGS", "broken"]  # BUGS: the rows of the handout's symptom table, in its order


def broken(fresh: ModuleType, bug: Bug) -> ModuleType:
    """Make a freshly imported copy of head.py commit `bug`: its Head is the broken one."""
    fresh.Head = broken_head(fresh.Head, bug)
    return fresh
