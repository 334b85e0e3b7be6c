"""A Gradescope autograder for one step: `python -m tools.autograder lab-01` writes the zip to upload.

Its root holds setup.sh (Python 3.12, the pip path from requirements.lock with its hashes, the
course editable) and run_autograder (grades /autograder/submission on a contained copy and writes
/autograder/results/results.json), beside the course files the grade needs.
"""

import argparse
import stat
import sys
import zipfile
from pathlib import Path

from common import OUT_DIR, REPO_ROOT, SOLUTIONS_DIR, STEPS_DIR, shown
from common.course import course, describe
from common.loader import step_dir

# The course files the grade runs on; steps/ and solutions/ are added as the step needs them
FILES = ["pyproject.toml", "requirements.lock", "conftest.py", "LICENSE"]
FOLDERS = ["common", "tools"]
SKIPPED = {"__pycache__", "starter", "backups", ".catch-up.lock", ".starter-new", ".starter-old"}

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, as root, in /autograder/source, when it builds the autograder image.
set -euo pipefail
cd "$(dirname "$0")"
py=$(command -v python3.12 || true)
if [ -z "$py" ]; then  # Ubuntu 24.04's Python is 3.12; on 22.04 it comes from the deadsnakes PPA
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3.12 python3.12-venv \\
    || { apt-get install -y -qq software-properties-common && add-apt-repository -y ppa:deadsnakes/ppa \\
         && apt-get update -qq && apt-get install -y -qq python3.12 python3.12-venv; }
  py=$(command -v python3.12)
fi
"$py" -m venv /autograder/venv
/autograder/venv/bin/python -m pip install --quiet --upgrade pip
# Every package from the hashed lock: pip refuses any file whose hash is not in it
/autograder/venv/bin/python -m pip install --quiet --require-hashes -r requirements.lock
/autograder/venv/bin/python -m pip install --quiet --no-deps --no-build-isolation -e .
/autograder/venv/bin/python -m common.envreport
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this for every submission: grade it on a contained copy, write results.json.
# AUTOGRADER_ROOT and AUTOGRADER_PYTHON stand in for /autograder and its venv (the course's tests).
set -uo pipefail
root="${{AUTOGRADER_ROOT:-/autograder}}"
python="${{AUTOGRADER_PYTHON:-$root/venv/bin/python}}"
cd "$root/source"
mkdir -p "$root/results"
# stdout (the check's own screen, for you) is shown to instructors only: stdout_visibility hidden
exec "$python" -m tools.grade {step} "$root/submission" --format gradescope --screen \\
  --out "$root/results/results.json"
"""


def _add(z: zipfile.ZipFile, path: Path, name: str, mode: int = 0o644) -> None:
    """One file into the zip under `name`, with its Unix mode (so run_autograder stays executable)."""
    info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))  # the same bytes every build
    info.external_attr = (stat.S_IFREG | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    z.writestr(info, path.read_bytes() if isinstance(path, Path) else path)


def _tree(z: zipfile.ZipFile, folder: Path, prefix: str) -> None:
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if path.is_file() and not SKIPPED & set(rel.parts) and path.suffix != ".pyc":
            _add(z, path, f"{prefix}/{rel.as_posix()}")


def bundle(step: str, out: Path) -> Path:
    """Write the autograder zip for `step` to `out`; return it."""
    here = describe(step_dir(step))
    needed = [s for s in course() if s.order <= here.order]  # the step and what it builds on
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w") as z:
        _add(z, SETUP, "setup.sh", 0o755)
        _add(z, RUN.format(step=step), "run_autograder", 0o755)
        for name in FILES:
            _add(z, REPO_ROOT / name, name)
        for name in FOLDERS:
            _tree(z, REPO_ROOT / name, name)
        for s in needed:
            root = "steps" if s.folder.parent == STEPS_DIR else "solutions"
            _tree(z, s.folder, f"{root}/{s.name}")
        if (SOLUTIONS_DIR / "README.md").is_file():
            _add(z, SOLUTIONS_DIR / "README.md", "solutions/README.md")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.autograder", description=__doc__.split("\n")[0]
    )
    parser.add_argument("step")
    parser.add_argument(
        "--out", type=Path, help="the zip to write (default out/autograder-<step>.zip)"
    )
    args = parser.parse_args(argv)
    try:
        step_dir(args.step)
    except ValueError as exc:
        parser.error(str(exc))
    out = bundle(args.step, args.out or OUT_DIR / f"autograder-{args.step}.zip")
    print(
        f"wrote {shown(out)}: upload it as the assignment's autograder (Gradescope: Configure Autograder, zip file upload)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
