"""Checkpoint averaging: one model whose weights are the mean of the last K training checkpoints.

Section 6.1: "For the base models, we used a single model obtained by averaging the last 5 checkpoints, which
were written at 10-minute intervals. For the big models, we averaged the last 20 checkpoints." K defaults to
the run's `hparams.checkpoint_average_count` (5 base, 20 big).

    path = average_checkpoints(output_dir)   # -> output_dir/averaged/ckpt-<step of the newest checkpoint>

The average holds the model weights only (`tf.train.Checkpoint(model=model)`), which is what
`run_dir.restore_run`, the decoder and the exporter read. It is written atomically: a complete new
averaged/ directory is built beside the old one and swapped in by renames, so a reader finds either the
previous complete average, the new complete one, or (for an instant, or after a crash in between) none, in
which case it falls back to the last training checkpoint; an interrupted swap is repaired on the next run.
"""

import glob
import logging
import os
import re
import shutil
import tempfile

import numpy as np
import tensorflow as tf

from t2t_repro.errors import UserError
from t2t_repro.train.run_dir import AVERAGED_DIR, CHECKPOINT_DIR, checkpoint_step, load_hparams

logger = logging.getLogger(__name__)

_TEMP_PREFIX = ".averaged-new-"
_OLD_PREFIX = ".averaged-old-"
_INDEX_PATTERN = re.compile(r"^ckpt-(\d+)\.index$")
# Where tf.train.Checkpoint(model=...) stores the source embedding: its rows are the vocabulary.
_EMBEDDING_KEY = "model/source_embedding/embeddings/.ATTRIBUTES/VARIABLE_VALUE"


def training_checkpoints(output_dir):
    """The run's training checkpoint prefixes (those with an index file), oldest step first."""
    directory = os.path.join(output_dir, CHECKPOINT_DIR)
    names = (os.path.basename(path) for path in glob.glob(os.path.join(directory, "ckpt-*.index")))
    prefixes = [os.path.join(directory, name[: -len(".index")]) for name in names if _INDEX_PATTERN.match(name)]
    return sorted(prefixes, key=checkpoint_step)


def _repair_interrupted_swap(output_dir):
    """Puts back a previous average whose replacement was interrupted, and removes half-written ones."""
    final = os.path.join(output_dir, AVERAGED_DIR)
    for old in sorted(glob.glob(os.path.join(output_dir, _OLD_PREFIX + "*"))):
        if not os.path.exists(final):
            os.rename(old, final)
        else:
            shutil.rmtree(old, ignore_errors=True)
    for temporary in glob.glob(os.path.join(output_dir, _TEMP_PREFIX + "*")):
        shutil.rmtree(temporary, ignore_errors=True)


def _vocab_size(checkpoint):
    shapes = tf.train.load_checkpoint(checkpoint).get_variable_to_shape_map()
    if _EMBEDDING_KEY not in shapes:
        raise UserError(f"checkpoint {checkpoint} holds no Transformer model (no {_EMBEDDING_KEY})")
    return shapes[_EMBEDDING_KEY][0]


def _restore(model, checkpoint):
    try:
        tf.train.Checkpoint(model=model).restore(checkpoint).expect_partial().assert_existing_objects_matched()
    except (AssertionError, tf.errors.OpError, ValueError) as error:
        raise UserError(f"checkpoint {checkpoint} does not fit the run's model: {error}") from None


def average_into(model, checkpoints):
    """Sets the floating-point weights of `model` to their mean over `checkpoints` (accumulated in float64)."""
    weights = [w for w in model.weights if np.issubdtype(np.dtype(w.dtype), np.floating)]
    sums = [np.zeros(w.shape, np.float64) for w in weights]
    for checkpoint in checkpoints:
        _restore(model, checkpoint)
        for total, weight in zip(sums, weights):
            total += np.asarray(weight.numpy(), np.float64)
    for total, weight in zip(sums, weights):
        weight.assign((total / len(checkpoints)).astype(np.dtype(weight.dtype)))
    return model


def _swap_in(output_dir, new_dir):
    final = os.path.join(output_dir, AVERAGED_DIR)
    if not os.path.exists(final):
        os.rename(new_dir, final)
        return
    old = tempfile.mkdtemp(prefix=_OLD_PREFIX, dir=output_dir)
    os.rmdir(old)
    os.rename(final, old)
    os.rename(new_dir, final)
    shutil.rmtree(old, ignore_errors=True)


def average_checkpoints(output_dir, num_last=None):
    """Averages the model weights of the last `num_last` training checkpoints of a run (by step).

    Args:
        output_dir: the run's output_dir (hparams.json and checkpoints/ckpt-N).
        num_last: how many checkpoints; None takes hparams.checkpoint_average_count. With fewer checkpoints
            than that, all are averaged and a warning says so.

    Returns:
        the prefix of the averaged checkpoint, output_dir/averaged/ckpt-<step of the newest one averaged>.
    """
    from t2t_repro.model import build_transformer

    hparams = load_hparams(output_dir)
    num_last = hparams.checkpoint_average_count if num_last is None else num_last
    if num_last < 1:
        raise UserError(f"num_last={num_last}: must be at least 1")
    checkpoints = training_checkpoints(output_dir)
    if not checkpoints:
        raise UserError(f"no training checkpoints in {os.path.join(output_dir, CHECKPOINT_DIR)}; train first")
    chosen = checkpoints[-num_last:]
    if len(chosen) < num_last:
        logger.warning("only %d training checkpoints in %s, averaging those instead of %d", len(chosen),
                       output_dir, num_last)
    step = checkpoint_step(chosen[-1])
    logger.info("averaging %d checkpoints, steps %s", len(chosen), ", ".join(str(checkpoint_step(c)) for c in chosen))

    model = average_into(build_transformer(hparams, _vocab_size(chosen[-1])), chosen)
    _repair_interrupted_swap(output_dir)
    new_dir = tempfile.mkdtemp(prefix=_TEMP_PREFIX, dir=output_dir)
    try:
        # The manager also writes the `checkpoint` state file, with a path relative to its directory, that
        # tf.train.latest_checkpoint reads once the directory has its final name.
        tf.train.CheckpointManager(tf.train.Checkpoint(model=model), new_dir, max_to_keep=1).save(
            checkpoint_number=step
        )
        _swap_in(output_dir, new_dir)
    finally:
        shutil.rmtree(new_dir, ignore_errors=True)
    return os.path.join(output_dir, AVERAGED_DIR, f"ckpt-{step}")
