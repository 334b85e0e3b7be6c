"""Repo-wide pytest wiring: the `--impl` switch and a one-line report for a starter that won't import."""

from pathlib import Path

import pytest

from common import STEPS_DIR
from common.loader import IMPLS, ImplImportError, load, step_names
from common.reports import REPORTS


def pytest_addoption(parser):
    parser.addoption(
        "--impl",
        choices=IMPLS,
        default="solution",
        help="implementation the step tests run against (default: solution)",
    )


@pytest.fixture
def impl(request) -> str:
    """The implementation under test, from --impl: step fixtures pass it to common.loader.load."""
    return request.config.getoption("--impl")


def pytest_report_header(config):
    return f"implementation under test: {config.getoption('--impl')} (choose with --impl)"


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
    impl = session.config.getoption("--impl")
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
