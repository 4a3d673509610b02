"""Every registered problem and hparams set, looked up by name.

    problem = catalog.get_problem("wmt_ende")
    problem = catalog.get_problem("translate_files", "source_language=en,target_language=de,vocab_size=8000")
    hparams = catalog.get_hparams("transformer_big")

Importing this module imports `t2t_repro.problems` and `t2t_repro.hparams`, whose explicit import lists register
everything; an import error there is never swallowed. A user's own are added by `t2t_repro.usr_dir`.
"""

import dataclasses

from t2t_repro import hparams as _registered_hparams  # noqa: F401 - registers the hparams sets
from t2t_repro import problems as _registered_problems  # noqa: F401 - registers the problems
from t2t_repro.errors import UserError, first_line
from t2t_repro.hparams_type import HParams
from t2t_repro.registry import HPARAMS, PROBLEMS, definition_place, description
from t2t_repro.settings import apply_overrides, describe
from t2t_repro.usr_dir import imported_names


def problem_settings(name, overrides=""):
    """The settings of the registered problem `name` with `overrides` ("key=value,...") applied and checked."""
    settings_class = PROBLEMS.get(name).settings_class
    if overrides and not dataclasses.fields(settings_class):
        raise UserError(f"problem {name} takes no settings (--problem_overrides={overrides!r}); its data is fixed "
                        "by its definition: translate_files and parse_files take settings, see --problem_help")
    return apply_overrides(settings_class(), overrides, f"problem {name} setting")


def get_problem(name, overrides=""):
    """Returns a new instance of the registered Problem `name` with the settings `overrides` ("key=value,...")."""
    settings = problem_settings(name, overrides)
    return _built(PROBLEMS, name, lambda problem_class: problem_class(settings))


def recorded_problem(name, overrides, recorded_settings):
    """The problem `name` as a run recorded it: built from its recorded settings (run.json's problem_settings), so
    that a default changed since the run does not change its problem; from `overrides` when it recorded none."""
    if not recorded_settings:
        return get_problem(name, overrides)
    problem_class = PROBLEMS.get(name)
    try:
        settings = problem_class.settings_from_record(recorded_settings)
    except TypeError as error:  # a recorded setting the problem no longer has
        raise UserError(f"the run's recorded settings of problem {name} ({recorded_settings}) do not fit its "
                        f"settings now: {first_line(error)}") from None
    return _built(PROBLEMS, name, lambda registered: registered(settings))


def problem_help(name, overrides=""):
    """Every setting of the problem `name` with its value (overrides applied) and its help."""
    settings = problem_settings(name, overrides)
    if not dataclasses.fields(settings):
        return f"problem {name} takes no settings: {description(PROBLEMS.get(name))}"
    return f"problem {name}: {description(PROBLEMS.get(name))}\n{describe(settings)}"


def get_hparams(name):
    """Returns the HParams of the registered set `name`; UserError naming where the set is defined when its
    function returns something else."""
    hparams = _built(HPARAMS, name, lambda hparams_set: hparams_set())
    if not isinstance(hparams, HParams):
        raise UserError(f"hparams set {name} ({definition_place(HPARAMS.get(name))}) returned "
                        f"{type(hparams).__name__}, not HParams: derive it from a registered set, e.g. "
                        "dataclasses.replace(transformer_base(), ...)")
    return hparams


def _built(registry, name, build):
    """`build(registered object)`; an exception other than a UserError (a mistake in a user's problem or hparams
    set, e.g. a misspelt field) is one line naming where the object is defined."""
    registered = registry.get(name)
    try:
        return build(registered)
    except UserError:
        raise
    except Exception as error:
        raise UserError(f"{registry.kind} {name} ({definition_place(registered)}) failed: "
                        f"{type(error).__name__}: {first_line(error, '(no message)')}") from None


def registry_help():
    """A listing of every registered problem and hparams set with its one-line description; those registered
    by a user directory (--t2t_usr_dir) are marked "[t2t_usr_dir]"."""
    lines = []
    user = imported_names()
    for title, registry, kind in (("Problems", PROBLEMS, "problems"), ("Hparams sets", HPARAMS, "hparams")):
        lines.append(f"{title}:")
        width = max((len(n) for n in registry.names()), default=0)
        for name in registry.names():
            mark = "[t2t_usr_dir] " if name in user[kind] else ""
            lines.append(f"  {name.ljust(width)}  {mark}{description(registry.get(name))}")
    return "\n".join(lines)
