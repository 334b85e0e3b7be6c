"""Run every background snippet here and print what it prints.

    python steps/step-04/background/render.py               # every snippet's output
    python steps/step-04/background/render.py --write-docs  # copy them into ../README.md

`--write-docs` rewrites the generated blocks `background-<snippet>` of steps/step-04/README.md;
tests/test_step04_background.py checks that each block is what its snippet prints today.
"""

import argparse
import contextlib
import io
import runpy
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
README = HERE.parent / "README.md"
REPO_ROOT = HERE.parents[2]
if str(REPO_ROOT) not in sys.path:  # run as a script, `common` is not importable otherwise
    sys.path.insert(0, str(REPO_ROOT))

from common.docs import write_block  # noqa: E402


def snippets() -> list[Path]:
    """The snippets, in the order of the handout: 01_imports.py, 02_..., ..."""
    return sorted(HERE.glob("[0-9][0-9]_*.py"))


def block_name(snippet: Path) -> str:
    """The README block that shows `snippet`'s output."""
    return f"background-{snippet.stem}"


def output(snippet: Path) -> str:
    """What `python <snippet>` prints, run in this process (the global RNG is left as it was)."""
    buffer = io.StringIO()
    with torch.random.fork_rng(devices=[]), contextlib.redirect_stdout(buffer):
        runpy.run_path(str(snippet), run_name="__main__")
    return buffer.getvalue()


def block(text: str) -> str:
    """A snippet's output as the body of its README block."""
    return f"```text\n{text.rstrip()}\n```\n"


def write_docs(readme: Path = README) -> list[str]:
    """Rewrite every snippet's block in `readme`; return the names of the blocks that changed."""
    return [
        block_name(s) for s in snippets() if write_block(readme, block_name(s), block(output(s)))
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-docs", action="store_true", help="rewrite README.md's blocks")
    if parser.parse_args(argv).write_docs:
        changed = write_docs()
        print(f"{README.name}: rewrote {', '.join(changed)}" if changed else "README.md up to date")
        return
    for snippet in snippets():
        print(f"# {snippet.name}\n{output(snippet)}")


if __name__ == "__main__":
    main()
