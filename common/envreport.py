"""Environment report, printed at the top of every step run; `python -m common.envreport` checks the lock."""

import argparse
import json
import os
import platform
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

import torch
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name as normalise  # PEP 503: 'Pre_Commit' -> 'pre-commit'

from common import REPO_ROOT, command, shown
from common.docs import markdown_table, write_block

REQUIREMENTS = REPO_ROOT / "requirements.txt"  # the top-level pins
LOCK = REPO_ROOT / "requirements.lock"  # every package, generated from them by `pixi run lock-pip`
PROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
INSTALL = "python -m pip install --no-deps --no-build-isolation -e ."  # pixi install does it


def course_problem() -> str | None:
    """Why `common` would not import outside the repository's folder: no editable install of it."""
    name, fix = PROJECT["name"], command("pixi install", INSTALL)
    try:
        recorded = metadata.distribution(name).read_text("direct_url.json")  # pip's and uv's record
    except metadata.PackageNotFoundError:
        return f"{name} (the course itself) is not installed: from {shown(REPO_ROOT)}/ run {fix}"
    url = json.loads(recorded or "{}").get("url")
    where = Path(url2pathname(urlparse(url).path)) if url else None
    if where is None or not where.is_dir() or not where.samefile(REPO_ROOT):
        return (
            f"{name} is installed from {url or 'a copy'}, not from {shown(REPO_ROOT)}/: run {fix}"
        )
    return None


def read_pins(path: Path | None = None) -> dict[str, str]:
    """The `name==version` pins of requirements.txt or of the lock (markers and hashes skipped)."""
    path, pins = path or REQUIREMENTS, {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].split(";", 1)[0].strip().rstrip("\\ ")
        if line and not line.startswith("--hash="):
            if not (m := re.fullmatch(r"([\w.\-]+)==([\w.+\-]+)", line)):
                raise ValueError(f"{path.name}: not an exact pin 'name==version': {line!r}")
            pins[normalise(m[1])] = m[2]
    return pins


def cpu_name() -> str:
    """The processor model and logical core count, as far as this OS says (for the record)."""
    name, cpuinfo = "", Path("/proc/cpuinfo")  # Linux; elsewhere platform.processor() says it
    if cpuinfo.is_file():  # read first: on Linux platform.processor() starts `uname -p`
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
        models = [line for line in text.splitlines() if line.startswith("model name")]
        name = models[0].split(":", 1)[1] if models else ""
    name = name.strip() or platform.processor()
    return f"{name.strip() or 'unknown'}, {os.cpu_count()} logical cores"


def machine(threads: int | None = None) -> str:
    """What a recorded number ran on: CPU, OS, torch, threads, and the load average if known."""
    load = f", load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    used = f", {threads} torch thread{'s' if threads != 1 else ''}" if threads else ""
    return f"{cpu_name()} ({platform.system()} {platform.machine()}{load}), torch {torch.__version__}{used}"


def report() -> str:
    """The machine the numbers were produced on, and the instruction set torch dispatches to
    (another one sums in another order: a float32 result moves by a rounding unit or two)."""
    build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "CPU"
    device = "CUDA available" if torch.cuda.is_available() else "CPU only"
    return (
        f"python   {platform.python_version()} ({sys.implementation.name})\n"
        f"torch    {torch.__version__} ({build} build), running {device}\n"
        f"cpu      {cpu_name()}; torch dispatches to {torch.backends.cpu.get_cpu_capability()}\n"
        f"threads  {torch.get_num_threads()}\n"
        f"os       {platform.system()} {platform.release()} ({platform.machine()})"
    )


def check_lock(top: dict[str, str], lock: dict[str, str]):
    """(name, locked, installed-or-None) per locked package needed or installed here; unlocked names."""
    dists = {normalise(d.metadata["Name"]): d for d in reversed([*metadata.distributions()])}
    # needed: reached from the top-level pins through installed metadata (a CPU torch needs no CUDA)
    done, todo = set(), [(name, "") for name in top]  # (name, extra) pairs; the first dist wins
    while todo:
        name, extra = todo.pop()
        done.add((name, extra))
        for req in map(Requirement, dists[name].requires or [] if name in dists else []):
            if req.marker is None or req.marker.evaluate({"extra": extra}):
                todo += {(normalise(req.name), e) for e in ("", *req.extras)} - done
    wanted = {**lock, **top}
    here = {name for name, _ in done} | (wanted.keys() & dists.keys())
    rows = [(n, v, getattr(dists.get(n), "version", None)) for n, v in wanted.items() if n in here]
    return rows, sorted(dists.keys() - wanted.keys() - {PROJECT["name"]})


def pins_table() -> str:
    """The README's table of pins, generated from requirements.txt."""
    return markdown_table(["Package", "Version"], [[n, v] for n, v in read_pins().items()])


def main(argv: list[str] | None = None) -> int:
    """Print the report, the top-level pins, any DRIFT from the lock and a summary; 1 on drift."""
    parser = argparse.ArgumentParser(prog="pixi run env", description=__doc__)
    parser.add_argument("--write-docs", action="store_true", help="rewrite README.md's pins table")
    if parser.parse_args(argv).write_docs:
        changed = write_block(REPO_ROOT / "README.md", "pins", pins_table())
        print("README.md pins table " + ("updated" if changed else "already up to date"))
    print(report())
    rows, unlocked = check_lock(top := read_pins(), lock := read_pins(LOCK))
    drift = [n for n, want, have in rows if (have or "").split("+")[0] != want]  # '+cpu': same
    for name, want, have in rows:
        if name in drift:
            print(f"[DRIFT] {name}=={want} " + (f"(found {have})" if have else "(missing)"))
        elif name in top:
            print(f"[OK] {name}=={want}")
    outside = f"; installed outside the lock: {', '.join(unlocked)}" if unlocked else ""
    counts = f"{len(rows) - len(drift)} OK, {len(drift)} DRIFT{outside}"
    print(f"{LOCK.name}: {len(rows)} of {len(lock)} locked packages apply here: {counts}")
    course = course_problem()  # `common` imports from a step's folder only when it is installed
    print(f"[DRIFT] {course}" if course else "[OK] the course, installed editable from this folder")
    return 1 if drift or course else 0


if __name__ == "__main__":
    sys.exit(main())
