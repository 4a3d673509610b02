"""Versioned export directories in the layout TensorFlow Serving expects: `base/<N>/`, integer N, newest served.

A version is written into a hidden temporary directory inside `base` (same filesystem) and renamed to the next
free integer only when complete, so a reader (TensorFlow Serving polls `base`) never sees a half-written
version, and a failed or interrupted export leaves no version behind. Temporary directories are named
`.tmp-export-<pid>-...`, which TensorFlow Serving ignores (not an integer); those of processes that no longer
run are removed by the next export.
"""

import errno
import json
import os

from t2t_repro import safe_write
from t2t_repro.errors import UserError
from t2t_repro.serve.export_files import read_export_metadata

_TEMP_PREFIX = ".tmp-export-"


def list_versions(base):
    """The integer versions under `base`, ascending (directories named by a non-negative integer)."""
    try:
        names = os.listdir(base)
    except FileNotFoundError:
        return []
    return sorted(int(name) for name in names if name.isdigit() and os.path.isdir(os.path.join(base, name)))


def latest_version_dir(base):
    """The path of the newest version under `base`; UserError if there is none."""
    if os.path.exists(base) and not os.path.isdir(base):
        raise UserError(f"{base} is a file, not an export directory (one holding version directories 1/, 2/, ...)")
    try:
        versions = list_versions(base)
    except OSError as error:
        raise UserError(f"cannot read export directory {base}: {error.strerror}") from None
    if not versions:
        if not os.path.isdir(base):
            raise UserError(f"{base} does not exist: export a model there with t2t-repro-exporter")
        raise UserError(f"{base} holds no version directory (1/, 2/, ...): export a model there with "
                        "t2t-repro-exporter")
    return os.path.join(base, str(versions[-1]))


def same_export_as_newest(base, metadata, ignored=("exported_at", "checkpoint")):
    """The newest version under `base` when its export metadata equals `metadata` (JSON-ready) but for the
    `ignored` keys (when, and the checkpoint's path, which moves with the run), i.e. it holds the same weights
    (their sha256 is in the metadata) with the same settings;
    else None. Exporting the same model again then writes nothing: a re-run of a finished run does not pile up
    identical versions, and what the server serves does not change."""
    versions = list_versions(base)
    if not versions:
        return None
    newest = os.path.join(base, str(versions[-1]))
    existing = read_export_metadata(newest)
    if not existing.get("weights_sha256"):
        return None

    def kept(values):
        return {key: value for key, value in values.items() if key not in ignored}

    return newest if kept(existing) == kept(json.loads(json.dumps(metadata))) else None


def unwritten_version_error(what, base, error):
    """The UserError for a version that could not be written (`what`: e.g. "a SavedModel") because of `error`,
    an OSError or a TensorFlow error (a full disk, say): nothing was published."""
    reason = " ".join(str(getattr(error, "strerror", None) or getattr(error, "message", error)).split())
    return UserError(f"could not write {what} under {base} ({reason}); no version was published")


def write_new_version(base, write):
    """Calls `write(path)` on a temporary directory, then publishes it as `base/<latest + 1>`; returns that path.

    Any failure (an exception, KeyboardInterrupt) removes the temporary directory and re-raises: no version
    appears. Two exports racing for the same number both succeed, with different numbers.
    """
    try:
        os.makedirs(base, exist_ok=True)
        temporary = safe_write.unique_directory_in(base, _TEMP_PREFIX)  # removes those of dead exports
    except OSError as error:
        raise UserError(f"cannot write to export directory {base}: {error.strerror}") from None
    try:
        write(temporary)
        os.chmod(temporary, 0o755)  # mkdtemp makes it private; servers often run as another user
        while True:
            versions = list_versions(base)
            target = os.path.join(base, str(versions[-1] + 1 if versions else 1))
            try:
                os.rename(temporary, target)
                return target
            except OSError as error:
                # Another export took this number between listing and renaming: take the next one.
                if error.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise UserError(f"cannot publish export version {target}: {error.strerror}") from None
    except BaseException:
        safe_write.remove(temporary)
        raise
