"""Load a step's starter or solution by path, so two steps' `attention.py` never clash."""

import importlib
import importlib.machinery
import importlib.util
import itertools
import sys
import traceback
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

from common import REPO_ROOT, SOLUTIONS_DIR, STEPS_DIR

IMPLS = ("solution", "starter")  # pytest's --impl and common.run's --impl offer these
_overrides: dict[tuple[str, str], ModuleType] = {}
_fresh_ids = itertools.count()


class ImplImportError(ImportError):
    """A starter or solution file that does not import; the message is one line."""


def step_names(root: Path = STEPS_DIR) -> list[str]:
    """Every step folder under steps/ (or checkpoint under `root`=solutions/), sorted."""
    return sorted(p.name for p in root.iterdir() if p.is_dir() and p.name[0] not in "._")


def checkpoint_names() -> list[str]:
    """Every checkpoint folder under solutions/, sorted."""
    return step_names(SOLUTIONS_DIR)


def step_dir(step: str) -> Path:
    """The folder of `step`, or a ValueError listing the valid names."""
    if step not in step_names():
        raise ValueError(f"unknown step {step!r}; valid steps: {', '.join(step_names())}")
    return STEPS_DIR / step


def _package(name: str, folder: Path) -> str:
    """Register `folder` as an importable package called `name` (idempotent for the same folder)."""
    existing = sys.modules.get(name)
    if existing is None:
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = [str(folder)]
        sys.modules[name] = importlib.util.module_from_spec(spec)
    elif [str(folder)] != list(getattr(existing, "__path__", [])):
        # Reusing a name for another folder would silently hand back the other folder's code.
        raise ValueError(f"package {name!r} already loads {existing.__path__}, not {folder}")
    return name


def _import(package: str, folder: Path, module: str) -> ModuleType:
    """Import `package.module`, turning any failure into a one-line ImplImportError."""
    try:
        return importlib.import_module(f"{package}.{module}")
    except Exception as exc:
        where = folder / (module.replace(".", "/") + ".py")
        line = getattr(exc, "lineno", None) if isinstance(exc, SyntaxError) else None
        for frame in traceback.extract_tb(exc.__traceback__):
            if Path(frame.filename).is_relative_to(folder):
                where, line = Path(frame.filename), frame.lineno
        if isinstance(exc, SyntaxError) and exc.filename:
            where = Path(exc.filename)
        rel = where.relative_to(REPO_ROOT) if where.is_relative_to(REPO_ROOT) else where
        loc = f"{rel.as_posix()}:{line}" if line else rel.as_posix()
        msg = exc.msg if isinstance(exc, SyntaxError) else (str(exc).splitlines() or [""])[0]
        if isinstance(exc, ModuleNotFoundError) and exc.name and "." not in exc.name:
            msg += f" (a file next to this one? import it relatively: from .{exc.name} import ...)"
        raise ImplImportError(f"{loc} does not import: {type(exc).__name__}: {msg}") from exc


def load(step: str, module: str, impl: str = "solution") -> ModuleType:
    """Return module `module` (dotted, e.g. 'exercises.wrong_mask') of a step's starter or solution."""
    if impl not in IMPLS:
        raise ValueError(f"impl must be one of {', '.join(IMPLS)}, got {impl!r}")
    if (step, module) in _overrides:
        return _overrides[(step, module)]
    package = f"_course_{step.replace('-', '_')}_{impl}"
    return load_from(step_dir(step) / impl, module, package)


def load_checkpoint(name: str, module: str) -> ModuleType:
    """Return module `module` of the catch-up checkpoint solutions/<name>/."""
    if name not in checkpoint_names():
        valid = ", ".join(checkpoint_names())
        raise ValueError(f"unknown checkpoint {name!r}; valid checkpoints: {valid}")
    package = f"_course_checkpoint_{name.replace('-', '_')}"
    return load_from(SOLUTIONS_DIR / name, module, package)


def load_from(folder: Path, module: str, package: str) -> ModuleType:
    """Import `module` from an arbitrary implementation folder under the package name `package`."""
    return _import(_package(package, folder), folder, module)


def load_fresh(folder: Path, module: str) -> ModuleType:
    """A new, uncached copy of `module` from `folder`: patching it changes nothing else."""
    return load_from(folder, module, f"_course_fresh_{next(_fresh_ids)}")


def load_file(path: Path, name: str) -> ModuleType:
    """Import a single file (a step's run.py, say) under a unique module name."""
    return load_from(path.parent, path.stem, name)


@contextmanager
def override(step: str, module: str, replacement: ModuleType):
    """Make `load(step, module)` return `replacement` (used to run suites against broken code)."""
    _overrides[(step, module)] = replacement
    try:
        yield replacement
    finally:
        del _overrides[(step, module)]
