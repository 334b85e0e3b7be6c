"""Repo-wide pytest wiring: the `--impl` switch and a one-line report for a starter that won't import."""

import os
from pathlib import Path

import pytest

from common import STEPS_DIR
from common.loader import IMPL_ENV, IMPLS, ImplImportError, load, step_names
from common.reports import REPORTS


def pytest_addoption(parser):
    parser.addoption(
        "--impl",
        choices=IMPLS,
        default=None,
        help="implementation the step tests run against (default: solution)",
    )


def pytest_configure(config):
    impl = config.getoption("--impl") or os.environ.get(IMPL_ENV) or "solution"
    if impl not in IMPLS:
        raise pytest.UsageError(f"{IMPL_ENV} must be one of {', '.join(IMPLS)}, got {impl!r}")
    os.environ[IMPL_ENV] = impl


def pytest_report_header(config):
    return f"implementation under test: {os.environ[IMPL_ENV]} (choose with --impl)"


def _steps_under_test(config) -> list[str]:
    """Steps whose folder is inside, or contains, a path given on the command line."""
    paths = [Path(a.split("::")[0]).resolve() for a in config.args] or [Path.cwd()]
    chosen = []
    for step in step_names():
        folder = (STEPS_DIR / step).resolve()
        if any(p.is_relative_to(folder) or folder.is_relative_to(p) for p in paths):
            chosen.append(step)
    return chosen


def pytest_sessionstart(session):
    """Import every module of the chosen implementation first, so a broken file is one line."""
    impl = os.environ[IMPL_ENV]
    for step in _steps_under_test(session.config):
        folder = STEPS_DIR / step / impl
        for path in sorted(folder.rglob("*.py")):
            module = path.relative_to(folder).with_suffix("").as_posix().replace("/", ".")
            try:
                load(step, module, impl)
            except ImplImportError as exc:
                raise pytest.UsageError(str(exc)) from None


def pytest_terminal_summary(terminalreporter, config):
    """Print the reports tests left behind (Step 4's proof scorecard, for one)."""
    for title, text in config.stash.get(REPORTS, []):
        terminalreporter.write_sep("=", title)
        terminalreporter.write_line(text)
