"""Load a step's starter or solution by path, so two steps' `attention.py` never clash."""

import hashlib
import importlib
import itertools
import os
import sys
import tokenize
import traceback
from pathlib import Path
from types import ModuleType
from unittest import mock

from common import SOLUTIONS_DIR, STEPS_DIR, shown

IMPLS = ("solution", "starter")  # pytest's --impl and common.run's --impl offer these
_overrides: dict[tuple[str, str], ModuleType] = {}
_fresh_ids = itertools.count()


class ImplImportError(ImportError):
    """A starter or solution file that does not import; the message is one line."""


def py_files(folder: Path) -> list[Path]:
    """The .py files under `folder`, sorted; a link to a folder is not followed (it may loop)."""
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        found += [Path(root) / f for f in files if f.endswith(".py")]
    return sorted(found)


def source(path: Path) -> str:
    """A Python file's text as Python decodes it (a BOM, a coding cookie); bad bytes replaced."""
    try:
        with tokenize.open(path) as f:
            return f.read()
    except (SyntaxError, UnicodeDecodeError):  # Python will not import it: the loader says why
        return path.read_bytes().decode("utf-8", errors="replace")


def _step(name: str):
    """The registry's step or checkpoint `name` (common.course imports this module, so here)."""
    from common.course import course_step

    return course_step(name)


def _import(package: str, folder: Path, module: str) -> ModuleType:
    """Import `package.module`; any failure (SystemExit too) becomes a one-line ImplImportError."""
    try:
        return importlib.import_module(f"{package}.{module}")
    except (Exception, SystemExit) as exc:
        where, line = folder / (module.replace(".", "/") + ".py"), None
        for frame in traceback.extract_tb(exc.__traceback__):  # the deepest line in `folder`
            if Path(frame.filename).is_relative_to(folder):
                where, line = Path(frame.filename), frame.lineno
        msg = str(exc).partition("\n")[0]
        if isinstance(exc, SyntaxError):  # the place is said once, up front, not in the message
            where, line, msg = Path(exc.filename or where), exc.lineno, exc.msg
        if isinstance(exc, SystemExit):
            msg = f"it calls sys.exit({exc.code!r}) as it is imported; delete that call"
        if isinstance(exc, ModuleNotFoundError) and exc.name and "." not in exc.name:
            near = {folder, where.parent}  # the step's folder, and the folder of the importing file
            if any((d / f"{exc.name}.py").is_file() or (d / exc.name).is_dir() for d in near):
                msg += (
                    f" (a file next to this one: import it relatively: from .{exc.name} import ...)"
                )
            else:
                msg += f" (no package {exc.name!r} is installed here: the course's packages are in requirements.txt)"
        raise _one_line(where, line, type(exc).__name__, msg) from exc


def _one_line(where: Path, line: int | None, error: str, msg: str) -> ImplImportError:
    loc = f"{shown(where)}:{line}" if line else shown(where)
    return ImplImportError(f"{loc} does not import: {error}: {msg}")


def check_syntax(path: Path) -> None:
    """Compile `path` without running it; a SyntaxError becomes the one-line ImplImportError."""
    try:  # bytes: a BOM or coding cookie, as Python reads
        compile(path.read_bytes(), str(path), "exec")
    except SyntaxError as exc:
        raise _one_line(path, exc.lineno, "SyntaxError", exc.msg) from exc


class UndeclaredStepError(ValueError):
    """A step loads another step's module that its step.toml's [uses] does not name."""


def _caller_step() -> str | None:
    """The step whose file (under steps/) called into this module: the nearest such frame."""
    roots = {str(STEPS_DIR) + os.sep, str(STEPS_DIR.resolve()) + os.sep}
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        for root in roots:
            if name.startswith(root):
                return name[len(root) :].split(os.sep, 1)[0]
        frame = frame.f_back
    return None


def declared(step: str, module: str) -> None:
    """Raise UndeclaredStepError when a step's file loads another step's undeclared `module`."""
    caller = _caller_step()
    if caller is None or caller == step or not (STEPS_DIR / caller / "step.toml").is_file():
        return
    if module not in _step(caller).uses.get(step, []):
        raise UndeclaredStepError(
            f"{caller} loads {step}'s {module} without declaring it: add {module!r} to "
            f"{step} = [...] under [uses] in steps/{caller}/step.toml"
        )


def load(step: str, module: str, impl: str = "solution") -> ModuleType:
    """Return module `module` (dotted, e.g. 'exercises.wrong_mask') of a step's starter or solution."""
    if impl not in IMPLS:
        raise ValueError(f"impl must be one of {', '.join(IMPLS)}, got {impl!r}")
    if (step, module) in _overrides:
        return _overrides[(step, module)]
    declared(step, module)
    folder = _step(step).impl(impl)
    return load_from(folder, module, package_name(folder))


def reference(name: str, module: str) -> ModuleType:
    """An earlier step's reference `module` (its solution/, or beside it): the one route a later
    step takes to code it builds on, declared in its step.toml's [uses]."""
    declared(name, module)
    found = _step(name)
    own = found.folder / f"{module}.py"  # course material of the step, not a TODO's code
    if own.is_file() and not (found.solution / own.name).is_file():
        return load_from(found.folder, module, package_name(found.folder))
    return load(name, module, "solution")


def package_name(folder: Path, copy: int | None = None) -> str:
    """The package a folder's files load under: steps/step-04/solution -> _course_step_04_solution,
    solutions/step-03 -> _course_checkpoint_step_03; `copy`: _course_fresh_<n>."""
    if copy is not None:
        return f"_course_fresh_{copy}"
    folder = folder.resolve()
    for root, prefix in ((STEPS_DIR, ""), (SOLUTIONS_DIR, "checkpoint_")):
        if folder.is_relative_to(root) and folder != root:
            return "_course_" + prefix + "_".join(folder.relative_to(root).parts).replace("-", "_")
    return "_course_at_" + hashlib.sha256(str(folder).encode()).hexdigest()[:12]  # elsewhere


def load_from(folder: Path, module: str, package: str) -> ModuleType:
    """Import `module` from an arbitrary implementation folder under the package name `package`."""
    existing = sys.modules.get(package)
    if existing is None:
        sys.modules[package] = registered = ModuleType(package)
        registered.__path__ = [str(folder)]  # a package whose modules are the files in `folder`
    elif [folder.resolve()] != [Path(p).resolve() for p in getattr(existing, "__path__", [])]:
        # Reusing a name for another folder would silently hand back the other folder's code.
        raise ValueError(f"package {package!r} already loads {existing.__path__}, not {folder}")
    return _import(package, folder, module)


def load_fresh(folder: Path, module: str) -> ModuleType:
    """A new, uncached copy of `module` from `folder`: patching it changes nothing else."""
    return load_from(folder, module, package_name(folder, copy=next(_fresh_ids)))


def load_file(path: Path) -> ModuleType:
    """Import one file (a step's run.py) as a module of its folder's package: the same for all."""
    return load_from(path.parent, path.stem, package_name(path.parent))


def override(step: str, module: str, replacement: ModuleType):
    """Inside `with`, make `load(step, module)` return `replacement` (to run suites on broken code)."""
    return mock.patch.dict(_overrides, {(step, module): replacement})
