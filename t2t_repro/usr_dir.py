"""A user's own problems and hparams sets, imported from a directory outside the package (`--t2t_usr_dir`).

    names = import_usr_dir("~/my_t2t")   # {"problems": ["my_problem"], "hparams": ["my_tiny"]}

As tensor2tensor's flag of that name: DIR is a Python package directory (an `__init__.py` that imports its
modules, relatively: `from . import my_problem`) or a single `.py` file, and importing it registers problems
and hparams sets with the usual decorators (`t2t_repro.registry.register_problem`, `register_hparams`). It is
imported under a name of its own (`t2t_repro_usr_<dir name>_<hash of its path>`), so it never shadows or is shadowed by another
module of the same name. Importing the same path again in one process does nothing and returns the same names.

Every mistake is one line: a path that does not exist or is not a package or a `.py` file, and an exception
raised while importing the user's code, named by the user's file and line (the deepest frame of the user's
files). Set T2T_REPRO_VERBOSE=1 to see the full traceback as well.
"""

import hashlib
import importlib.util
import os
import sys
import traceback

from t2t_repro import hparams as _built_in_hparams  # noqa: F401 - registered before the user's, which may import them
from t2t_repro import problems as _built_in_problems  # noqa: F401
from t2t_repro.errors import UserError, first_line
from t2t_repro.registry import HPARAMS, PROBLEMS

MODULE_PREFIX = "t2t_repro_usr"
VERBOSE_VARIABLE = "T2T_REPRO_VERBOSE"
_IMPORTED = {}  # absolute path -> the names its import registered


def import_usr_dir(path):
    """Imports the user directory (or .py file) `path` once; returns {"problems": [...], "hparams": [...]}, the
    names its import registered."""
    path = os.path.abspath(os.path.expanduser(os.fspath(path)))
    if path in _IMPORTED:
        return _IMPORTED[path]
    spec = _module_spec(path)
    before = (set(PROBLEMS.names()), set(HPARAMS.names()))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except UserError:  # a registration mistake, already one line naming both definitions
        del sys.modules[spec.name]
        raise
    except BaseException as error:
        del sys.modules[spec.name]
        if not isinstance(error, (Exception, SystemExit)):  # KeyboardInterrupt: the user stopping the tool
            raise
        raise user_code_error(f"--t2t_usr_dir={path}: importing it", error, path) from None
    names = {"problems": sorted(set(PROBLEMS.names()) - before[0]),
             "hparams": sorted(set(HPARAMS.names()) - before[1])}
    _IMPORTED[path] = names
    return names


def user_code_error(what, error, path):
    """The one-line UserError for `error`, raised by the user's code under `path` (a directory or a .py file)
    while doing `what`: it names the user's file and line, the exception and its message; a SystemExit (the
    code called sys.exit) is named as such, since it would end the tool without a word. The traceback is
    printed first when T2T_REPRO_VERBOSE=1."""
    if os.environ.get(VERBOSE_VARIABLE, "") not in ("", "0"):
        traceback.print_exception(error)
    place = _failure_place(error, path)
    if isinstance(error, SystemExit):
        happened = f"called sys.exit({error.code!r}) at {place}, which would end the tool without a word"
    else:
        happened = f"failed at {place}: {type(error).__name__}: {first_line(error, '(no message)')}"
    return UserError(f"{what} {happened} (set {VERBOSE_VARIABLE}=1 for the traceback)")


def user_directory_of(error):
    """The imported user directory (or .py file) whose code raised `error` (the deepest traceback frame in one),
    or None when the error did not pass through a user's code."""
    found = None
    for frame in traceback.extract_tb(error.__traceback__):
        filename = os.path.abspath(frame.filename)
        for path in _IMPORTED:
            if filename == path or filename.startswith(path + os.sep):
                found = path
    return found


def imported_names():
    """{"problems": [...], "hparams": [...]}: every name registered by the user directories imported so far."""
    return {kind: sorted(name for names in _IMPORTED.values() for name in names[kind]) for kind in ("problems",
                                                                                                      "hparams")}


def _module_spec(path):
    """The import spec of a package directory or a .py file; UserError for anything else."""
    if os.path.isdir(path):
        init = os.path.join(path, "__init__.py")
        if not os.path.isfile(init):
            raise UserError(f"--t2t_usr_dir={path} is not a Python package: it has no __init__.py (it should import "
                            "the modules that register your problems and hparams sets: from . import my_problem)")
        return importlib.util.spec_from_file_location(_module_name(path), init, submodule_search_locations=[path])
    if os.path.isfile(path) and path.endswith(".py"):
        return importlib.util.spec_from_file_location(_module_name(path), path)
    if not os.path.exists(path):
        raise UserError(f"--t2t_usr_dir={path}: no such file or directory")
    raise UserError(f"--t2t_usr_dir={path} is neither a Python package directory nor a .py file")


def _module_name(path):
    """A module name of the user's path that no other module has: two directories may share a base name."""
    base = os.path.splitext(os.path.basename(path))[0]
    safe = "".join(c if c.isalnum() else "_" for c in base)
    return f"{MODULE_PREFIX}_{safe}_{hashlib.sha256(path.encode()).hexdigest()[:8]}"


def _failure_place(error, path):
    """"file:line" of the failure in the user's code: a syntax error's own place, else the deepest traceback
    frame in a file under `path` (a .py file: that file)."""
    if isinstance(error, SyntaxError) and error.filename:
        return f"{error.filename}:{error.lineno}"
    root = path if os.path.isdir(path) else os.path.dirname(path)
    place = path
    for frame in traceback.extract_tb(error.__traceback__):
        if os.path.abspath(frame.filename).startswith(root + os.sep):
            place = f"{frame.filename}:{frame.lineno}"
    return place


