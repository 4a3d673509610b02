"""A checkpoint of a model's weights alone, published as a whole directory: the format of averaged/ and best/.

Both hold `tf.train.Checkpoint(model=model)` as `<directory>/ckpt-<step>` (no optimizer, no data position),
which is what the decoder, the exporters and the visualizer restore. The directory is built complete in a
hidden directory beside its final place and swapped in by renames, so a reader finds the previous complete
version, the new complete one, or (for an instant, or after a crash in between) none; an interrupted swap is
repaired by the next write.

    publish_model_checkpoint(model, "O/best", 1200, {"score.json": {...}})   # -> "O/best/ckpt-1200"
"""

import glob
import os

import tensorflow as tf

from t2t_repro import safe_write
from t2t_repro.errors import UserError, first_line


def _prefixes(final):
    """The names of the directory being built beside `final` and of the previous one set aside."""
    name = os.path.basename(os.path.abspath(final))
    return f".{name}-new-", f".{name}-old-"


def repair_interrupted_swap(final):
    """Puts back a previous `final` whose replacement was interrupted between the two renames of
    `safe_write.publish_directory`. (Half-written new ones are removed by `temporary_directory_beside`.)"""
    old_prefix = _prefixes(final)[1]
    for old in sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(final)), old_prefix + "*"))):
        if not os.path.exists(final):
            os.rename(old, final)
        else:
            safe_write.remove(old)


def publish_model_checkpoint(model, directory, step, json_files=None):
    """Writes the weights of `model` as `directory`/ckpt-`step` with the JSON files `json_files` ({name:
    value}) beside them, replacing `directory` as a whole (only one this project made: `safe_write`'s rule);
    returns the checkpoint prefix. A failed write is a UserError and leaves what was there as it was."""
    final = os.fspath(directory)
    new_prefix, old_prefix = _prefixes(final)
    work = None
    safe_write.check_replaceable(final, tf.train.latest_checkpoint, remedy="name another --output_dir")
    try:
        repair_interrupted_swap(final)
        work = safe_write.temporary_directory_beside(final, new_prefix)
        # The manager also writes the `checkpoint` state file, with a path relative to its directory, that
        # tf.train.latest_checkpoint reads once the directory has its final name.
        tf.train.CheckpointManager(tf.train.Checkpoint(model=model), work, max_to_keep=1).save(checkpoint_number=step)
        for name, value in (json_files or {}).items():
            safe_write.write_json(os.path.join(work, name), value)
        safe_write.publish_directory(work, final, old_prefix, legacy=tf.train.latest_checkpoint)
    except (tf.errors.OpError, OSError) as error:
        raise UserError(f"could not write {final} ({first_line(error)}); what was there is left as it was") from None
    finally:
        if work:
            safe_write.remove(work)
    return os.path.join(final, f"ckpt-{step}")
