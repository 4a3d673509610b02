"""The checkpoints of a directory: listing them, telling a damaged one from one of another model, restoring a
model's weights (training or averaged checkpoint), and the trainer's upkeep of its directory (leftovers of
interrupted writes, the `checkpoint` index file, damaged checkpoints kept aside).

A checkpoint is a prefix such as O/checkpoints/ckpt-1200 with the files ckpt-1200.index and
ckpt-1200.data-00000-of-00001 (one per shard). Which one is newest is read from the files present, not from
the `checkpoint` index file, so a lost or damaged index loses nothing.
"""

import glob
import os
import re

import tensorflow as tf

from t2t_repro import safe_write
from t2t_repro.errors import UserError, first_line

INDEX_FILE = "checkpoint"
# What restoring a damaged or foreign checkpoint raises: a truncated data file gives IndexError ("Read less
# bytes than requested"), a damaged .index a DataLossError, other variables a ValueError or AssertionError.
RESTORE_ERRORS = (AssertionError, IndexError, ValueError, tf.errors.OpError)
_FILE_PATTERN = re.compile(r"^(ckpt-\d+)\.(?:index|data-\d+-of-(\d+))$")
_LEFTOVER_PATTERN = re.compile(r"^ckpt-\d+_temp$")  # what TensorFlow writes a checkpoint in before renaming
_ASIDE_PREFIX = "damaged-"


def checkpoint_step(path):
    """The step number in a checkpoint prefix such as .../ckpt-1200."""
    return int(path.rsplit("-", 1)[1])


def checkpoint_prefixes(directory, complete=True):
    """The checkpoint prefixes in `directory`, oldest step first: those with an .index file (complete=True,
    what a reader can use), or those with any file (complete=False, what a writer must not overwrite)."""
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []
    matches = [_FILE_PATTERN.match(name) for name in names]
    prefixes = {m.group(1) for m in matches if m and (not complete or m.group(0).endswith(".index"))}
    return [os.path.join(directory, prefix) for prefix in sorted(prefixes, key=checkpoint_step)]


def latest_checkpoint(directory):
    """The newest complete checkpoint prefix in `directory`, or None when there is none."""
    prefixes = checkpoint_prefixes(directory)
    return prefixes[-1] if prefixes else None


def _data_files(prefix):
    return sorted(glob.glob(glob.escape(prefix) + ".data-*"))


def find_damage(prefix):
    """What is wrong with the files of checkpoint `prefix` ("ckpt-20.data-00000-of-00001 is truncated or
    unreadable: ..."), or None when each of them reads (then a failed restore means another model)."""
    index = prefix + ".index"
    if not os.path.exists(index):
        return f"{index} is missing"
    try:
        reader = tf.train.load_checkpoint(prefix)
        dtypes = reader.get_variable_to_dtype_map()
    except RESTORE_ERRORS as error:
        return f"{index} is unreadable: {first_line(error)}"
    data = _data_files(prefix)
    shards = {m.group(2) for m in map(_FILE_PATTERN.match, map(os.path.basename, data)) if m}
    if not data:
        return f"{prefix}.data-* is missing"
    if len(shards) != 1 or len(data) != int(shards.pop()):
        return f"some of the data files of {prefix} are missing (present: {', '.join(map(os.path.basename, data))})"
    try:
        for name, dtype in dtypes.items():
            if dtype != tf.variant:  # the data position, which the reader cannot turn into an array
                reader.get_tensor(name)
    except RESTORE_ERRORS as error:
        return f"{' / '.join(data)} is truncated or unreadable: {first_line(error)}"
    return None


def restore_newest(prefixes, restore, usable, mismatch):
    """Restores the newest of `prefixes` that restores and is `usable()` after restoring (finite weights), as
    the trainer resumes and `--checkpoint=latest` reads; returns it (None: there were none) and the newer ones
    that are damaged, as [(prefix, what is wrong)].

    `restore(prefix)` raises one of RESTORE_ERRORS when it fails; a checkpoint whose files all read but that
    does not restore is another model's, and raises `mismatch(prefix, error)` (an exception) at once."""
    damaged = []
    for prefix in reversed(prefixes):
        try:
            restore(prefix)
        except RESTORE_ERRORS as error:
            damage = find_damage(prefix)
            if damage is None:
                raise mismatch(prefix, error) from None
            damaged.append((prefix, damage))
            continue
        if usable():
            return prefix, damaged
        damaged.append((prefix, "it holds non-finite (NaN or Inf) weights"))
    return None, damaged


def damage_details(damaged):
    """"ckpt-20: what is wrong; ckpt-15: ..." for [(prefix, what is wrong)]."""
    return "; ".join(f"{os.path.basename(prefix)}: {damage}" for prefix, damage in damaged)


def restore_error(prefix, error, mismatch):
    """The UserError for a failed restore of `prefix`: the damaged file named, else `mismatch` and the error."""
    damage = find_damage(prefix)
    if damage:
        return UserError(f"checkpoint {prefix} is damaged: {damage}")
    return UserError(f"checkpoint {prefix} {mismatch}: {first_line(error)}")


def checkpoint_reader(prefix):
    """tf.train.load_checkpoint(prefix); a damaged checkpoint is a UserError naming the damaged file."""
    try:
        return tf.train.load_checkpoint(prefix)
    except RESTORE_ERRORS as error:
        raise restore_error(prefix, error, "cannot be read") from None


def read_model(model, checkpoint_prefix):
    """Restores the weights of the built `model` from `checkpoint_prefix` (only the model: a training
    checkpoint's optimizer and data position are skipped); raises one of RESTORE_ERRORS when it fails."""
    tf.train.Checkpoint(model=model).restore(checkpoint_prefix).expect_partial().assert_existing_objects_matched()


def restore_model(model, checkpoint_prefix):
    """Restores the weights of the built `model` from `checkpoint_prefix`; returns `model`.

    A checkpoint that lacks any of the model's weights or holds them in other shapes is a UserError, and so is
    a damaged one (naming the damaged file)."""
    try:
        read_model(model, checkpoint_prefix)
    except RESTORE_ERRORS as error:
        raise restore_error(checkpoint_prefix, error, "does not fit the run's model") from None
    return model


def all_finite(variables):
    """True when every floating-point variable of `variables` is finite (no NaN or Inf)."""
    floating = [v for v in variables if tf.as_dtype(v.dtype).is_floating]
    return bool(tf.reduce_all([tf.reduce_all(tf.math.is_finite(v)) for v in floating]))


# ---------------------------------------------------------------------------------------------------------------
# The trainer's upkeep of its checkpoint directory.


def remove_write_leftovers(directory):
    """Removes the `ckpt-N_temp` directories that a checkpoint write interrupted by a crash leaves behind;
    returns their paths. (Only the trainer that owns `directory` may call this: it is not writing one now.)"""
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return []
    leftovers = [os.path.join(directory, name) for name in sorted(names) if _LEFTOVER_PATTERN.match(name)]
    for path in leftovers:
        safe_write.remove(path)
    return leftovers


def read_index(directory):
    """The checkpoint paths the `checkpoint` index file lists (oldest first, the latest last), or None when it
    is missing or unreadable."""
    try:
        state = tf.train.get_checkpoint_state(directory)
    except (ValueError, UnicodeDecodeError, tf.errors.OpError):
        return None
    if state is None:
        return None
    listed = [path for path in state.all_model_checkpoint_paths if path != state.model_checkpoint_path]
    return [*listed, state.model_checkpoint_path]


def write_index(directory, prefixes):
    """Writes the `checkpoint` index file (atomically) listing `prefixes`, oldest first, the last as latest;
    removes it when `prefixes` is empty."""
    path = os.path.join(directory, INDEX_FILE)
    if not prefixes:
        safe_write.remove(path)
        return
    names = [os.path.basename(prefix) for prefix in prefixes]
    # tf.train.CheckpointManager rotates (deletes beyond max_to_keep) only the checkpoints with a timestamp.
    times = [os.path.getmtime(prefix + ".index") for prefix in prefixes]
    safe_write.write_lines(path, [
        f'model_checkpoint_path: "{names[-1]}"', *(f'all_model_checkpoint_paths: "{name}"' for name in names),
        *(f"all_model_checkpoint_timestamps: {time!r}" for time in times),
    ])


def keep_aside(prefix):
    """Moves the files of checkpoint `prefix` into a new directory `damaged-ckpt-N[.K]` beside them (so that no
    later checkpoint of the same step overwrites them, and no reader takes them); returns that directory."""
    directory, name = os.path.split(prefix)
    aside = os.path.join(directory, _ASIDE_PREFIX + name)
    count = 1
    while os.path.lexists(aside):
        aside = os.path.join(directory, f"{_ASIDE_PREFIX}{name}.{count}")
        count += 1
    os.makedirs(aside)
    for path in glob.glob(glob.escape(prefix) + ".*"):
        if _FILE_PATTERN.match(os.path.basename(path)):
            os.rename(path, os.path.join(aside, os.path.basename(path)))
    return aside
