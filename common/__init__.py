"""Shared helpers for every step: implementation loader, seeding, environment report, figures."""

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
# COURSE_STEPS_DIR lets the contract tests point the tooling at a deliberately broken fixture.
STEPS_DIR = Path(os.environ.get("COURSE_STEPS_DIR", REPO_ROOT / "steps")).resolve()
SOLUTIONS_DIR = REPO_ROOT / "solutions"
OUT_DIR = REPO_ROOT / "out"
