"""Repo-wide pytest wiring: `--impl` and its fixture, suite speed (xdist groups); the student's check
(a one-line report for a starter that won't import, the one-screen summary) is the plugin common/check/."""

import argparse
import gc
import os
import sys

import pytest

from common import REPO_ROOT
from common.loader import IMPLS

pytest_plugins = ["common.check"]

# Test tensors are tiny: a second intra-op thread costs more than it saves, most of all when
# pytest-xdist runs a process per core. Set before any test imports torch; children inherit it.
os.environ.setdefault("OMP_NUM_THREADS", "1")


def pytest_addoption(parser):
    help = "implementation the step tests run against (default: solution)"
    parser.addoption("--impl", choices=IMPLS, default="solution", help=help)
    parser.addoption("--full", action="store_true", help="with --impl starter: pytest's own output")
    parser.addoption(
        "--progress", action="store_true", help="with --impl starter: one line per step, exit 0"
    )
    parser.addoption("--check-record", metavar="PATH", help=argparse.SUPPRESS)  # tools/screens.py
    parser.addoption(
        "--check-json", metavar="PATH", help="with --impl starter: write each TODO's state to PATH"
    )


@pytest.fixture
def impl(request) -> str:
    """The implementation under test, from --impl: step fixtures pass it to common.loader.load."""
    return request.config.getoption("--impl")


@pytest.fixture(autouse=True)
def _gradients_on():
    """Each test starts with gradient tracking on, as a fresh process does: code that turns it off
    for good (set_grad_enabled(False) as a statement) fails the test that meets it, not every test
    after it."""
    if torch := sys.modules.get("torch"):  # a step without torch never imports it here
        torch.set_grad_enabled(True)


def pytest_configure(config):
    # the course's suite, not a student's check; a student edition has no tools/ (tools.release)
    if config.getoption("--impl") == "solution" and (REPO_ROOT / "tools").is_dir():
        from tools.process_guard import register

        register(config)  # a test that starts a process must say so: the fast tier leaves it out


@pytest.hookimpl(tryfirst=True)  # before xdist names each test by its group
def pytest_collection_modifyitems(config, items):
    """Tests that share a module- or class-scoped fixture (a grader's worker, a graded class, a
    scan of one bug) form one xdist group: with `--dist=loadgroup` one process makes it once."""
    if not getattr(config.option, "loadgroup", False):  # an xdist worker of --dist=loadgroup
        return  # elsewhere (a step's suite, the check, the grader's copies) xdist_group is unknown
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None or item.get_closest_marker("xdist_group"):
            continue
        spec = getattr(item, "callspec", None)
        shared = [
            f"{name}{spec.indices.get(name, '') if spec else ''}"
            for name in item.fixturenames
            if (defs := info.name2fixturedefs.get(name)) and defs[-1].scope in ("module", "class")
        ]
        if shared:
            item.add_marker(pytest.mark.xdist_group(f"{item.module.__name__}:{','.join(shared)}"))


def pytest_collection_finish(session):
    """Keep what is imported by now (torch, numpy) out of every later garbage collection."""
    gc.freeze()  # pytest collects five times as a session ends: 0.5 s each with torch tracked


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """Skip the garbage collection Python runs over every object as it exits (torch's, the tests')."""
    gc.freeze()  # about a second off every pytest process: nothing is collected after this


def pytest_report_header(config):
    if config.getoption("--impl") == "starter":
        return "implementation under test: starter, your code in steps/<step>/starter/"
    return [  # two lines: a screen is 100 columns
        "implementation under test: solution, the reference in steps/<step>/solution/,",
        "  not your starter (add --impl starter to test your code)",
    ]
