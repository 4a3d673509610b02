"""The paper's learning-rate schedule (section 5.3, equation 3)."""

import keras
import tensorflow as tf


def paper_learning_rate(step, d_model, warmup_steps=4000, scale=1.0):
    """lrate = scale * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5), for step >= 1 (plain Python)."""
    return scale * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


class NoamSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up for `warmup_steps` updates, then decay with the inverse square root of the step.

    Section 5.3, equation 3: `lrate = d_model^-0.5 * min(step_num^-0.5, step_num * warmup_steps^-1.5)`.
    The paper counts steps from 1; Keras passes the number of updates already applied (0 for the first), so
    update k (k = 0, 1, ...) uses the paper's step_num = k + 1.

    Args:
        d_model: the model width.
        warmup_steps: 4000 in the paper.
        scale: a constant factor on the formula (1.0 in the paper).
        step_offset: added to the update count (0 in the paper): a warm-started run whose schedule starts anew
            at a kept step count (-that step), or goes on from the parent's while its step count restarts
            (+the parent's step) (`t2t_repro.train.warm_start`).
    """

    def __init__(self, d_model, warmup_steps=4000, scale=1.0, step_offset=0):
        self.d_model = d_model
        self.warmup_steps = warmup_steps
        self.scale = scale
        self.step_offset = step_offset

    def __call__(self, iterations):
        step = tf.cast(iterations + self.step_offset, tf.float32) + 1.0
        warmup = tf.cast(self.warmup_steps, tf.float32)
        return self.scale * self.d_model**-0.5 * tf.minimum(tf.math.rsqrt(step), step * warmup**-1.5)

    def get_config(self):
        return {"d_model": self.d_model, "warmup_steps": self.warmup_steps, "scale": self.scale,
                "step_offset": self.step_offset}
