"""Shared helpers for every step: implementation loader, seeding, environment report, figures."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
STEPS_DIR = REPO_ROOT / "steps"
SOLUTIONS_DIR = REPO_ROOT / "solutions"
OUT_DIR = REPO_ROOT / "out"
