"""A Gradescope autograder for one step: `python -m grader.autograder lab-01` writes the zip to upload.

Its root holds setup.sh (Python 3.12, pip pinned by hash, every package of requirements.lock with
its hash except torch, which comes as the CPU build from PyTorch's index, then the course
editable) and run_autograder (grades /autograder/submission on a contained copy within WALL
seconds and writes /autograder/results/results.json), beside the course files the grade needs.
The zip holds the step's reference, so it is written outside the repository, where no graded copy
looks.
"""

import argparse
import stat
import sys
import tempfile
import zipfile
from pathlib import Path

from common import REPO_ROOT, SOLUTIONS_DIR, STEPS_DIR, shown
from common.course import course, course_step
from common.envreport import read_pins

# The course files the grade runs on; steps/ and solutions/ are added as the step needs them
FILES = ["pyproject.toml", "requirements.lock", "conftest.py", "LICENSE"]
FOLDERS = ["common", "tools", "grader"]
SKIPPED = {"__pycache__", "starter", "backups", ".catch-up.lock", ".starter-new", ".starter-old"}
# Seconds the grade may take: below Gradescope's default limit of 600 s (Autograder settings), so
# the grader stops the submission and still writes a results.json that says why
WALL = 540
# pip itself, pinned by its hash (PyPI's pip-26.3-py3-none-any.whl): the venv's own pip is
# whatever python3.12-venv ships, and an unpinned upgrade would take whatever PyPI has that day
PIP = "pip==26.3 --hash=sha256:f3b60b20ffaadd4415ed7957212a38ac63fa4c5fa375bd0f4a797777940fad13"
# The lock without torch and the packages only PyPI's CUDA build of it needs (the README's
# "CPU-only torch" section runs this same line): every entry left keeps its hashes
CPU_LOCK = "awk '/^[a-z]/ { skip = /^(torch|triton|nvidia-|cuda-)/ } !skip' requirements.lock"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, as root, in /autograder/source, when it builds the autograder image.
set -euo pipefail
cd "$(dirname "$0")"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# Always python3.12-venv too: Ubuntu 24.04 ships python3.12 without venv and ensurepip
if ! apt-get install -y -qq python3.12 python3.12-venv; then
  # Ubuntu 22.04: Python 3.12 comes from the deadsnakes PPA
  apt-get install -y -qq software-properties-common
  add-apt-repository -y ppa:deadsnakes/ppa
  apt-get update -qq
  apt-get install -y -qq python3.12 python3.12-venv
fi
# bubblewrap contains each submission where the container allows user namespaces; where it does
# not (Docker's default seccomp profile), the grade runs the code as the user nobody instead
apt-get install -y -qq bubblewrap || echo "setup: no bubblewrap; submissions run as nobody"
python3.12 -m venv /autograder/venv
py=/autograder/venv/bin/python
echo '{pip}' > pip.lock
"$py" -m pip install --quiet --require-hashes -r pip.lock
# PyPI's Linux torch is the CUDA build (about 5.5 GB with its NVIDIA packages); the course needs
# the CPU one. The lock holds only PyPI's hashes, so: every other package from the lock, each
# file checked against its hash; then torch alone, the lock's version, from PyTorch's CPU index
# (pinned by version, not hash), --no-deps so nothing else is fetched; pip check then shows the
# CPU build needs nothing the lock did not install.
{cpu_lock} > cpu.lock
"$py" -m pip install --quiet --require-hashes -r cpu.lock
"$py" -m pip install --quiet --no-deps torch=={torch} --index-url {cpu_index}
"$py" -m pip install --quiet --no-deps --no-build-isolation -e .
"$py" -m pip check
"$py" -m common.envreport
# Which tests are each TODO's own, read off the reference once, into the image (out/): each
# submission's grade then starts from it
"$py" -m grader.grade {step} --prepare
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this for every submission: grade it on a contained copy, write results.json.
# AUTOGRADER_ROOT and AUTOGRADER_PYTHON stand in for /autograder and its venv (the course's tests).
set -uo pipefail
root="${{AUTOGRADER_ROOT:-/autograder}}"
python="${{AUTOGRADER_PYTHON:-$root/venv/bin/python}}"
cd "$root/source"
mkdir -p "$root/results"
# stdout (the check's own screen, for you) is shown to instructors only: stdout_visibility hidden.
# --wall {wall}: the submission is stopped before Gradescope's own limit, so results.json is written.
# --allow-uncontained: the container is this submission's own and is thrown away after it; where
# it allows neither bubblewrap nor the user nobody, results.json says contained: false.
exec "$python" -m grader.grade {step} "$root/submission" --format gradescope --screen \\
  --wall {wall} --allow-uncontained --out "$root/results/results.json"
"""


def setup_script(step: str = "lab-01") -> str:
    """setup.sh, with pip's pin, the CPU lock's filter, the lock's torch version and the step."""
    pins = {"pip": PIP, "cpu_lock": CPU_LOCK, "torch": read_pins()["torch"], "step": step}
    return SETUP.format(cpu_index=CPU_INDEX, **pins)


def _add(z: zipfile.ZipFile, path: Path | str, name: str, mode: int = 0o644) -> None:
    """A file (or a text) into the zip as `name`, with its Unix mode (run_autograder executable)."""
    info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))  # the same bytes every build
    info.external_attr = (stat.S_IFREG | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    z.writestr(info, path.read_bytes() if isinstance(path, Path) else path)


def _tree(z: zipfile.ZipFile, folder: Path, prefix: str, skipped: frozenset = frozenset()) -> None:
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if path.is_file() and not (SKIPPED | skipped) & set(rel.parts) and path.suffix != ".pyc":
            _add(z, path, f"{prefix}/{rel.as_posix()}")


def bundle(step: str, out: Path) -> Path:
    """Write the autograder zip for `step` to `out`; return it."""
    here = course_step(step, STEPS_DIR)
    needed = [s for s in course() if s.order <= here.order]  # the step and what it builds on
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w") as z:
        _add(z, setup_script(step), "setup.sh", 0o755)
        _add(z, RUN.format(step=step, wall=WALL), "run_autograder", 0o755)
        for name in FILES:
            _add(z, REPO_ROOT / name, name)
        for name in FOLDERS:  # the grader's own tests stay with the instructor
            _tree(
                z, REPO_ROOT / name, name, frozenset({"tests"}) if name == "grader" else frozenset()
            )
        for s in needed:
            root = "solutions" if s.checkpoint else "steps"
            _tree(z, s.folder, f"{root}/{s.name}")
        if (SOLUTIONS_DIR / "README.md").is_file():
            _add(z, SOLUTIONS_DIR / "README.md", "solutions/README.md")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m grader.autograder", description=__doc__.split("\n")[0]
    )
    parser.add_argument("step")
    help_ = "the zip to write, outside the repository (default: a new folder in the system's "
    parser.add_argument("--out", type=Path, help=help_ + "temporary folder, readable by you only)")
    args = parser.parse_args(argv)
    try:
        course_step(args.step, STEPS_DIR)
    except ValueError as exc:
        parser.error(str(exc))
    if args.out is not None and args.out.resolve().is_relative_to(REPO_ROOT.resolve()):
        parser.error(
            f"{args.out} is inside the repository: the zip holds the step's reference, which a "
            "graded copy could read there; give a path outside it"
        )
    out = (
        args.out or Path(tempfile.mkdtemp(prefix="llm-internals-")) / f"autograder-{args.step}.zip"
    )
    bundle(args.step, out)
    where = "Gradescope: Configure Autograder, zip file upload"
    print(f"wrote {shown(out)}: upload it as the assignment's autograder ({where})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
