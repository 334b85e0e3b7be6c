"""Environment report, printed at the top of every step run; `python -m common.envreport` checks pins."""

import argparse
import platform
import re
import sys
from importlib import metadata
from pathlib import Path

import torch

from common import REPO_ROOT
from common.docs import markdown_table, write_block

REQUIREMENTS = REPO_ROOT / "requirements.txt"


def read_pins(path: Path | None = None) -> dict[str, str]:
    """The `name==version` pins of requirements.txt, names normalised (PEP 503)."""
    path = path or REQUIREMENTS
    pins = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([A-Za-z0-9_.+\-]+)", line)
        if not m:
            raise ValueError(f"{path.name}: expected an exact pin 'name==version', got {line!r}")
        pins[normalise(m[1])] = m[2]
    return pins


def normalise(name: str) -> str:
    """PEP 503 name normalisation: 'Pre_Commit' -> 'pre-commit'."""
    return re.sub(r"[-_.]+", "-", name).lower()


def torch_build() -> str:
    """'CPU' or 'CUDA 13.0' etc.: what the installed torch wheel was built for."""
    return f"CUDA {torch.version.cuda}" if torch.version.cuda else "CPU"


def report() -> str:
    """A short multi-line description of the machine the numbers were produced on."""
    device = "CUDA available" if torch.cuda.is_available() else "CPU only"
    return "\n".join(
        [
            f"python   {platform.python_version()} ({sys.implementation.name})",
            f"torch    {torch.__version__} ({torch_build()} build), running {device}",
            f"threads  {torch.get_num_threads()}",
            f"os       {platform.system()} {platform.release()} ({platform.machine()})",
        ]
    )


def check_pins(pins: dict[str, str]) -> list[tuple[str, str, str | None]]:
    """(name, pinned, installed-or-None) for each pin."""
    rows = []
    for name, want in pins.items():
        try:
            have = metadata.version(name)
        except metadata.PackageNotFoundError:
            have = None
        rows.append((name, want, have))
    return rows


def pins_table() -> str:
    """The README's table of pins, generated from requirements.txt."""
    return markdown_table(["Package", "Version"], [[n, v] for n, v in read_pins().items()])


def main(argv: list[str] | None = None) -> int:
    """Print the report and one [OK]/[FAIL] line per pinned package; non-zero on any FAIL."""
    parser = argparse.ArgumentParser(prog="pixi run env", description=__doc__)
    parser.add_argument("--write-docs", action="store_true", help="rewrite README.md's pins table")
    if parser.parse_args(argv).write_docs:
        changed = write_block(REPO_ROOT / "README.md", "pins", pins_table())
        print("README.md pins table " + ("updated" if changed else "already up to date"))
    print(report())
    failed = 0
    for name, want, have in check_pins(read_pins()):
        # A local build tag such as '+cpu' is the same release.
        ok = have is not None and have.split("+")[0] == want
        failed += not ok
        print(f"[{'OK' if ok else 'FAIL'}] {name}=={want}" + ("" if ok else f" (found {have})"))
    if torch.version.cuda:
        print("[NOTE] torch is a CUDA build; the course only needs the CPU build (see README).")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
