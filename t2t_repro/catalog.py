"""Every registered problem and hparams set, looked up by name.

    problem = catalog.get_problem("wmt_ende")
    hparams = catalog.get_hparams("transformer_big")

Importing this module imports `t2t_repro.problems` and `t2t_repro.hparams`, whose explicit import lists register
everything; an import error there is never swallowed.
"""

from t2t_repro import hparams as _registered_hparams  # noqa: F401 - registers the hparams sets
from t2t_repro import problems as _registered_problems  # noqa: F401 - registers the problems
from t2t_repro.registry import HPARAMS, PROBLEMS, description


def get_problem(name):
    """Returns a new instance of the registered Problem `name`."""
    return PROBLEMS.get(name)()


def get_hparams(name):
    """Returns the HParams of the registered set `name`."""
    return HPARAMS.get(name)()


def registry_help():
    """A listing of every registered problem and hparams set with its one-line description."""
    lines = []
    for title, registry in (("Problems", PROBLEMS), ("Hparams sets", HPARAMS)):
        lines.append(f"{title}:")
        width = max((len(n) for n in registry.names()), default=0)
        for name in registry.names():
            lines.append(f"  {name.ljust(width)}  {description(registry.get(name))}")
    return "\n".join(lines)
