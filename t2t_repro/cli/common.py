"""What every console script shares: flags derived from settings dataclasses, quiet TensorFlow start-up and
one-line errors for user mistakes."""

import argparse
import contextlib
import dataclasses
import logging
import os
import sys

from t2t_repro.errors import UserError
from t2t_repro.settings import field_types, parse_value


class ArgumentParser(argparse.ArgumentParser):
    """argparse for `--name=value` flags whose mistakes end like any other user error: one line, exit 2."""

    def error(self, message):
        raise UserError(f"{message} (see {self.prog} --help)")


def add_settings_flags(parser, settings_class, defaults=None, exclude=()):
    """Adds one `--<field>` flag per field of a settings dataclass (those declared with `settings.setting`),
    typed by the field and helped by its help text. A flag not given is None, so that
    `settings.override(**values)` keeps the default; `defaults` (an instance) names the defaults in the help.
    A bool field that defaults to False is a switch."""
    types = field_types(settings_class)
    for field in dataclasses.fields(settings_class):
        if field.name in exclude or not field.metadata:
            continue
        default = getattr(defaults, field.name) if defaults is not None else field.default
        kind = types[field.name]
        flag = f"--{field.name}"
        if kind is bool and default is False:
            parser.add_argument(flag, action="store_true", default=None, help=field.metadata["help"])
            continue
        shown = "" if default is None else f" (default: {default})"
        parser.add_argument(
            flag, default=None, metavar=field.name.upper(), choices=field.metadata["choices"],
            type=lambda text, name=flag, kind=kind: parse_value(name, text, kind),
            help=field.metadata["help"] + shown,
        )


def settings_values(args, settings_class):
    """{field: flag value} of the flags `add_settings_flags` added for `settings_class` (None: not given)."""
    return {f.name: getattr(args, f.name) for f in dataclasses.fields(settings_class) if hasattr(args, f.name)}


def settings_from_flags(args, settings_class, **fields):
    """A `settings_class` of the flags given for it (flags not given keep the field defaults), plus `fields`."""
    given = {name: value for name, value in settings_values(args, settings_class).items() if value is not None}
    return settings_class(**given, **fields)


CHECKPOINT_HELP = (
    "which checkpoint of the run: averaged (the average of the last checkpoints, section 6.1), latest (the newest "
    "training checkpoint that restores; damaged newer ones are skipped), best (the best dev evaluation, "
    "OUTPUT_DIR/best), or a checkpoint: ckpt-N of OUTPUT_DIR/checkpoints or a full prefix (default: averaged when "
    "it is as new as the newest training checkpoint, else that one)"
)


def add_checkpoint_flag(parser, extra=""):
    """Adds --checkpoint, the one vocabulary of every tool that restores a run (`run.checkpoint_choice`)."""
    parser.add_argument("--checkpoint", default=None, type=_checkpoint_flag, help=extra + CHECKPOINT_HELP)


def _checkpoint_flag(text):
    """--checkpoint's value; an empty one is refused rather than taken silently for the default."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty: give averaged, latest, best, ckpt-N or a checkpoint prefix, or "
                                         "leave the flag out for the default")
    return text


def add_usr_dir_flag(parser, recorded=True):
    """Adds --t2t_usr_dir; `recorded`: the tool reads a run or export that records its own, which the flag
    replaces."""
    from t2t_repro.run.config import USR_DIR_HELP

    extra = "; default: the one the run (or export) was made with" if recorded else ""
    parser.add_argument("--t2t_usr_dir", default=None, help=USR_DIR_HELP + extra)


def add_ensemble_flag(parser, scope=""):
    """Adds --ensemble (read it with `ensemble_dirs`); `scope` says which engine or format it is for."""
    parser.add_argument("--ensemble", default=None, help=(
        f"{scope}comma-separated output_dirs of more runs of the same problem and vocabulary (of any size), whose "
        "models (each from its default checkpoint: the averaged one when it is as new as its newest training "
        "checkpoint, else that one) decode together with --output_dir's in one beam search: each "
        "step's next-token log-probability is the log of the mean of the models' probabilities"))


def ensemble_dirs(flag):
    """The output_dirs of an --ensemble flag ([] when it was not given); UserError for an empty entry."""
    if flag is None:
        return []
    dirs = [entry.strip() for entry in flag.split(",")]
    if not all(dirs):
        raise UserError(f"--ensemble={flag}: give comma-separated output_dirs, none of them empty")
    return dirs


def import_usr_dir(path):
    """Imports the user directory `path` (None: nothing), TensorFlow quietly loaded first (the user's code may
    import it); a mistake in it is a one-line UserError."""
    if not path:
        return
    quiet_tensorflow()
    from t2t_repro.usr_dir import import_usr_dir as import_directory

    import_directory(path)


def show_info_logs():
    """Sends the library's warnings and progress logs (e.g. the throughput) to stderr, message only, unless
    the root logger already has a handler (then that one shows them)."""
    library_logger = logging.getLogger("t2t_repro")
    library_logger.setLevel(logging.INFO)
    if not logging.getLogger().handlers and not any(
        getattr(h, "t2t_repro_cli", False) for h in library_logger.handlers
    ):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        handler.t2t_repro_cli = True
        library_logger.addHandler(handler)


@contextlib.contextmanager
def _stderr_muted():
    """Silences file descriptor 2 (C++ logging too, which Python's sys.stderr does not cover)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def quiet_tensorflow():
    """Imports TensorFlow without its C++ log lines, unless TF_CPP_MIN_LOG_LEVEL asks for them.

    TensorFlow logs informational lines while it loads (before its log-level setting takes effect) and an
    error line on every machine without CUDA; they would bury a one-line error message. So the import runs
    with stderr muted and the C++ log level defaults to 3 (errors reach the user as Python exceptions);
    TF_CPP_MIN_LOG_LEVEL=0 shows everything."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if os.environ["TF_CPP_MIN_LOG_LEVEL"] == "0" or "tensorflow" in sys.modules:
        return
    with _stderr_muted():
        import tensorflow  # noqa: F401


def ctranslate2_jobs():
    """The run layer's CTranslate2 jobs (`t2t_repro.run.ctranslate2_jobs`), TensorFlow quietly loaded; a
    UserError saying how to install CTranslate2, an optional dependency, when it is missing."""
    try:
        import ctranslate2  # noqa: F401
    except ImportError:
        raise UserError('this needs CTranslate2, which is not installed: pip install "t2t-repro[ctranslate2]" '
                        "(or pip install ctranslate2)") from None
    quiet_tensorflow()
    from t2t_repro.run import ctranslate2_jobs as jobs

    return jobs


def _user_code_message(error):
    """The one line for an exception raised inside a user directory's code (a Problem's method, say), naming the
    user's file and line; None for any other exception (a bug of this project: its traceback is wanted)."""
    if "t2t_repro.usr_dir" not in sys.modules:  # no user directory was imported
        return None
    from t2t_repro.usr_dir import user_code_error, user_directory_of

    directory = user_directory_of(error)
    if directory is None:
        return None
    return str(user_code_error(f"your code in --t2t_usr_dir={directory}", error, directory))


def run_main(main, argv=None):
    """Runs `main(argv)`; a UserError (or bad flags) ends in one line on stderr and exit status 2, and so does
    an exception raised, or a sys.exit called, by the code of a user directory (`--t2t_usr_dir`)."""
    prog = os.path.basename(sys.argv[0]) or "t2t-repro"
    try:
        return main(argv)
    except UserError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into e.g. `head`, which stopped reading
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (Exception, SystemExit) as error:  # last: the clauses above handle their own kinds
        message = _user_code_message(error)  # a user's sys.exit too: it would end the tool without a word
        if message is None:
            raise
        print(f"{prog}: error: {message}", file=sys.stderr)
        return 2
