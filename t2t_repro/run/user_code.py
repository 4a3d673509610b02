"""The user's own problems and hparams sets (--t2t_usr_dir) a run or an export was made with, found again by
every tool that reads it: run.json and export metadata record the directory's absolute path and the names it
registered, so that a restart, the decoder, the exporters, the visualizer and the server need no flag. A flag
given anyway wins (the code has moved, say)."""

import os

from t2t_repro.errors import UserError
from t2t_repro.registry import HPARAMS, PROBLEMS
from t2t_repro.usr_dir import import_usr_dir


def import_given(path):
    """Imports the user directory `path` (None: nothing); returns (its absolute path or "", the names it
    registered), as run.json records them."""
    if not path:
        return "", {}
    names = import_usr_dir(path)
    return os.path.abspath(os.path.expanduser(path)), names


def import_recorded(recorded, names=None, given=None, what="the run"):
    """Imports the user directory `given`, else the `recorded` one (a path, "" for none), and checks that it
    still defines the `names` ({"problems": [...], "hparams": [...]}) it registered when `what` was made."""
    path = given or recorded
    if not path:
        return
    if not given and not os.path.exists(path):
        raise UserError(f"{what} was made with --t2t_usr_dir={path}, which no longer exists; pass "
                        "--t2t_usr_dir=DIR where that code is now")
    import_usr_dir(path)
    for registry, kind in ((PROBLEMS, "problems"), (HPARAMS, "hparams")):
        gone = [name for name in (names or {}).get(kind, []) if name not in registry]
        if gone:
            raise UserError(f"--t2t_usr_dir={path} no longer defines the {registry.kind} {', '.join(gone)} that "
                            f"{what} was made with")


def import_run_code(info, given=None):
    """`import_recorded` for a run (`RunInfo`): its problem and hparams set must still be defined where the
    user directory defined them."""
    used = {"problems": [info.problem], "hparams": [info.hparams_set]}
    needed = {kind: [name for name in used[kind] if name in info.usr_names.get(kind, [])] for kind in used}
    import_recorded(info.t2t_usr_dir, needed, given)
