"""Reading a model's weights back from a checkpoint prefix (training or averaged), and the prefix's step."""

import tensorflow as tf

from t2t_repro.errors import UserError


def checkpoint_step(path):
    """The step number in a checkpoint prefix such as .../ckpt-1200."""
    return int(path.rsplit("-", 1)[1])


def restore_model(model, checkpoint_prefix):
    """Restores the weights of the built `model` from `checkpoint_prefix`; returns `model`.

    Only the model is read (a training checkpoint's optimizer and data position are skipped); a checkpoint
    that lacks any of the model's weights or holds them in other shapes is a UserError."""
    try:
        tf.train.Checkpoint(model=model).restore(checkpoint_prefix).expect_partial().assert_existing_objects_matched()
    except (AssertionError, tf.errors.OpError, ValueError) as error:
        raise UserError(f"checkpoint {checkpoint_prefix} does not fit the run's model: {error}") from None
    return model
