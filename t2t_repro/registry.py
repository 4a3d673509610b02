"""Registries of Problems (data sets) and hparams sets (configurations), looked up by snake_case name.

    @register_hparams
    def transformer_base() -> HParams: ...

The registered modules are imported by explicit lists in `t2t_repro.problems` and `t2t_repro.hparams`;
`t2t_repro.catalog` imports both and looks names up (`catalog.get_hparams("transformer_base")`). A user's own
problems and hparams sets register with the same decorators from a directory given as `--t2t_usr_dir`
(`t2t_repro.usr_dir`). A registration mistake (a name that is not snake_case, a name registered twice) is a
UserError naming where each definition is, since it is usually made in the user's code.
"""

import difflib
import inspect
import os
import re

from t2t_repro.errors import UserError

_SNAKE_CASE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")


class Registry:
    """A name -> object table whose unknown-name error lists the closest registered names."""

    def __init__(self, kind):
        self.kind = kind
        self._entries = {}

    def register(self, name, obj):
        if not isinstance(name, str) or not _SNAKE_CASE.match(name):
            raise UserError(f"{self.kind} name {name!r} ({definition_place(obj)}) is not snake_case (e.g. my_problem)")
        if name in self._entries:
            raise UserError(f"{self.kind} {name!r} is registered twice: by {definition_place(self._entries[name])} "
                            f"and by {definition_place(obj)}; rename one")
        self._entries[name] = obj
        return obj

    def get(self, name):
        if name not in self._entries:
            close = difflib.get_close_matches(name, self._entries, n=5, cutoff=0.5)
            hint = f"closest: {', '.join(close)}" if close else f"registered: {', '.join(sorted(self._entries))}"
            raise UserError(f"unknown {self.kind} {name!r} ({hint})")
        return self._entries[name]

    def names(self):
        return sorted(self._entries)

    def __contains__(self, name):
        return name in self._entries


PROBLEMS = Registry("problem")
HPARAMS = Registry("hparams set")


def register_problem(cls):
    """Class decorator: registers a Problem subclass under its `name` attribute."""
    return PROBLEMS.register(cls.name, cls)


def register_hparams(fn):
    """Function decorator: registers a function returning HParams under the function's name."""
    return HPARAMS.register(fn.__name__, fn)


def definition_place(obj):
    """Where a registered class or function is defined: "path/to/file.py:12 (Name)", or its qualified name."""
    name = getattr(obj, "__qualname__", type(obj).__name__)
    try:
        path = inspect.getsourcefile(obj)
        line = inspect.getsourcelines(obj)[1]
    except (OSError, TypeError):
        return f"{getattr(obj, '__module__', '?')}.{name}"
    relative = os.path.relpath(path)
    return f"{path if relative.startswith('..') else relative}:{line} ({name})"


def description(obj):
    """The first line of an object's docstring: its one-line description in listings."""
    doc = (obj.__doc__ or "").strip()
    return doc.splitlines()[0] if doc else ""
