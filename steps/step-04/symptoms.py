"""Step 4's curated bugs (step.toml [mutation]): each one's Head replaces head.py's."""

from types import ModuleType

from common.bugs import Bug
from common.loader import reference

catalogue = reference("lab-01", "broken")  # steps/lab-01/broken.py: every attention bug
BUGS = catalogue.BUGS

__all__ = ["BUGS", "broken"]  # BUGS: the rows of the handout's symptom table, in its order


def broken(fresh: ModuleType, bug: Bug) -> ModuleType:
    """Make a freshly imported copy of head.py commit `bug`: its Head is the broken one."""
    fresh.Head = catalogue.broken_head(fresh.Head, bug)
    return fresh
