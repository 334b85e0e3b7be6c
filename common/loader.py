"""Load a step's starter or solution by path, so two steps' `attention.py` never clash."""

import contextlib
import hashlib
import importlib
import itertools
import sys
import traceback
import warnings
from pathlib import Path
from types import ModuleType
from unittest import mock

from common import SOLUTIONS_DIR, STEPS_DIR, py_files, shown, source  # noqa: F401 (re-exported)

IMPLS = ("solution", "starter")  # pytest's --impl and common.run's --impl offer these
_overrides: dict[tuple[str, str], ModuleType] = {}
_fresh_ids = itertools.count()


class ImplImportError(ImportError):
    """A starter or solution file that does not import; the message is one line."""


def folder_of(step: str, impl: str = "solution") -> Path:
    """The folder of a step's implementation (steps/<step>/<impl>), or of a checkpoint (its code
    is its folder, solutions/<step>); found from the folders, not the registry."""
    if impl not in IMPLS:
        raise ValueError(f"impl must be one of {', '.join(IMPLS)}, got {impl!r}")
    if (STEPS_DIR / step).is_dir():
        return STEPS_DIR / step / impl
    if (SOLUTIONS_DIR / step).is_dir():
        return SOLUTIONS_DIR / step
    names = sorted(
        p.parent.name for root in (STEPS_DIR, SOLUTIONS_DIR) for p in root.glob("*/step.toml")
    )
    raise ValueError(f"unknown step {step!r}; valid steps: {', '.join(names)}")


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
            where, line, msg = Path(exc.filename or where), exc.lineno, _syntax_said(exc)
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
        raise _one_line(path, exc.lineno, "SyntaxError", _syntax_said(exc)) from exc


def _syntax_said(exc: SyntaxError) -> str:
    """A SyntaxError's message, saying so when it is a warning the check's filter made an error
    (`if p is 1:` compiles, with a SyntaxWarning, outside the check)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(Path(exc.filename).read_bytes(), exc.filename, "exec")
    except (SyntaxError, OSError, TypeError, ValueError):
        return exc.msg  # an error in any case (or its file is gone)
    return f"{exc.msg} (Python only warns of it; the check refuses what Python warns of)"


def load(step: str, module: str, impl: str = "solution") -> ModuleType:
    """Return module `module` (dotted, e.g. 'exercises.wrong_mask') of a step's starter or solution."""
    if (step, module) in _overrides:
        return _overrides[(step, module)]
    folder = folder_of(step, impl)
    return load_from(folder, module, package_name(folder))


def reference(name: str, module: str) -> ModuleType:
    """An earlier step's reference `module` (its solution/, or beside it): the one route a later
    step takes to code it builds on, declared in its step.toml's [uses] (tests/test_uses.py)."""
    solution = folder_of(name)
    folder = solution.parent if solution.name == "solution" else solution
    own = folder / f"{module}.py"  # course material of the step, not a TODO's code
    if own.is_file() and not (solution / own.name).is_file():
        return load_from(folder, module, package_name(folder))
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


def own_objects(module: ModuleType) -> dict[str, int]:
    """Each function and class `module` defines, and each attribute of those classes, by identity:
    a test compares with them, so a call that rebinds one (`KVCache.append = ...`) is seen."""
    found = {}
    for name, value in vars(module).items():
        if getattr(value, "__module__", None) == module.__name__:
            found[name] = id(value)
            if isinstance(value, type):
                found |= {f"{name}.{k}": id(v) for k, v in vars(value).items()}
    return found


@contextlib.contextmanager
def kept_whole(module: ModuleType):
    """Yield `module`; after the test, fail if its code rebound what the module defines."""
    made = own_objects(module)
    yield module
    now = own_objects(module)
    # a dunder added is Python's own cache (copy adds __slotnames__ to a class it copies from)
    added = [k for k in now.keys() - made.keys() if not k.rpartition(".")[2].startswith("__")]
    if changed := sorted([k for k in made if now.get(k) != made[k]] + added):
        raise AssertionError(
            f"{module.__name__.rpartition('.')[2]}.{changed[0]} was rebound while the test ran: "
            "a TODO's code changes no function or class of its module (the tests compare with them)"
        )
