"""Checkpoint averaging: one model whose weights are the mean of the last K training checkpoints.

Section 6.1: "For the base models, we used a single model obtained by averaging the last 5 checkpoints, which
were written at 10-minute intervals. For the big models, we averaged the last 20 checkpoints." The run layer
passes K = the run's `hparams.checkpoint_average_count` (5 base, 20 big) unless told otherwise.

    path = average_checkpoints("O/checkpoints", "O/averaged", hparams, 5)   # -> O/averaged/ckpt-<newest step>

The average holds the model weights only, written as a whole directory (`publish_model_checkpoint`, the
format best/ shares), which is what the decoder, the exporters and the visualizer restore. While a new average
is swapped in, or after a crash in between, a reader finds no averaged/ and falls back to the last training
checkpoint; an interrupted swap is repaired on the next run.
"""

import logging

import numpy as np

from t2t_repro.errors import UserError
from t2t_repro.model import build_transformer
from t2t_repro.train.checkpoints import checkpoint_prefixes, checkpoint_reader, checkpoint_step, restore_model
from t2t_repro.train.model_checkpoint import publish_model_checkpoint

logger = logging.getLogger(__name__)

# Where tf.train.Checkpoint(model=...) stores the embeddings: their rows are the vocabularies.
_EMBEDDING_KEY = "model/{}_embedding/embeddings/.ATTRIBUTES/VARIABLE_VALUE"


def _vocab_sizes(checkpoint, hparams):
    """(target rows, source rows or None when shared) of the Transformer in `checkpoint`: a model whose embeddings
    are tied (hparams.shared_embedding) stores a target embedding of its own only when the sides have their own
    vocabularies."""
    shapes = checkpoint_reader(checkpoint).get_variable_to_shape_map()
    source_key, target_key = (_EMBEDDING_KEY.format(side) for side in ("source", "target"))
    if source_key not in shapes:
        raise UserError(f"checkpoint {checkpoint} holds no Transformer model (no {source_key})")
    if hparams.shared_embedding and target_key in shapes:
        return shapes[target_key][0], shapes[source_key][0]
    return shapes[source_key][0], None


def average_into(model, checkpoints):
    """Sets the floating-point weights of `model` to their mean over `checkpoints` (accumulated in float64)."""
    weights = [w for w in model.weights if np.issubdtype(np.dtype(w.dtype), np.floating)]
    sums = [np.zeros(w.shape, np.float64) for w in weights]
    for checkpoint in checkpoints:
        restore_model(model, checkpoint)
        for total, weight in zip(sums, weights):
            total += np.asarray(weight.numpy(), np.float64)
    for total, weight in zip(sums, weights):
        weight.assign((total / len(checkpoints)).astype(np.dtype(weight.dtype)))
    return model


def average_checkpoints(checkpoint_dir, averaged_dir, hparams, num_last):
    """Averages the model weights of the last `num_last` training checkpoints in `checkpoint_dir` (by step).

    Args:
        checkpoint_dir: the run's training checkpoints, ckpt-N.
        averaged_dir: where the average goes (replaced atomically).
        hparams: the run's HParams (to build the model).
        num_last: how many checkpoints. With fewer checkpoints than that, all are averaged and a warning says so.

    Returns:
        the prefix of the averaged checkpoint, averaged_dir/ckpt-<step of the newest one averaged>.
    """
    if num_last < 1:
        raise UserError(f"num_last={num_last}: must be at least 1")
    checkpoints = checkpoint_prefixes(checkpoint_dir)
    if not checkpoints:
        raise UserError(f"no training checkpoints in {checkpoint_dir}; train first")
    chosen = checkpoints[-num_last:]
    if len(chosen) < num_last:
        logger.warning("only %d training checkpoints in %s, averaging those instead of %d", len(chosen),
                       checkpoint_dir, num_last)
    step = checkpoint_step(chosen[-1])
    logger.info("averaging %d checkpoints, steps %s", len(chosen), ", ".join(str(checkpoint_step(c)) for c in chosen))

    target_rows, source_rows = _vocab_sizes(chosen[-1], hparams)
    model = average_into(build_transformer(hparams, target_rows, source_vocab_size=source_rows), chosen)
    return publish_model_checkpoint(model, averaged_dir, step)
