"""Reports that tests leave for the end of a pytest run; the repo's conftest.py prints them."""

import pytest

REPORTS = pytest.StashKey[list[tuple[str, str]]]()


def add_report(config: pytest.Config, title: str, text: str) -> None:
    """Queue `text` to be printed under `title` in pytest's terminal summary."""
    config.stash.setdefault(REPORTS, []).append((title, text))
