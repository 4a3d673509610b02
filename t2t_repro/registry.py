"""Registries of Problems (data sets) and hparams sets (configurations), looked up by snake_case name.

    @register_hparams
    def transformer_base() -> HParams: ...

The registered modules are imported by explicit lists in `t2t_repro.problems` and `t2t_repro.hparams`;
`t2t_repro.catalog` imports both and looks names up (`catalog.get_hparams("transformer_base")`).
"""

import difflib
import re

from t2t_repro.errors import UserError

_SNAKE_CASE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")


class Registry:
    """A name -> object table whose unknown-name error lists the closest registered names."""

    def __init__(self, kind):
        self.kind = kind
        self._entries = {}

    def register(self, name, obj):
        if not _SNAKE_CASE.match(name):
            raise ValueError(f"{self.kind} name {name!r} is not snake_case")
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
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


def description(obj):
    """The first line of an object's docstring: its one-line description in listings."""
    doc = (obj.__doc__ or "").strip()
    return doc.splitlines()[0] if doc else ""
