"""The paper's optimizer: Adam(beta1=0.9, beta2=0.98, epsilon=1e-9) on the schedule of section 5.3."""

import keras
import tensorflow as tf

from t2t_repro.train.schedule import NoamSchedule


class FusedAdam(keras.optimizers.Adam):
    """Keras' Adam with each dense update made by TensorFlow's one-kernel ResourceApplyAdam.

    Same arithmetic as keras.optimizers.Adam (m += (g - m)(1 - beta1), v += (g^2 - v)(1 - beta2),
    var -= alpha m / (sqrt(v) + epsilon), alpha = lr sqrt(1 - beta2^t) / (1 - beta1^t)), and the same
    variables and checkpoints; Keras' version spends about ten elementwise passes over every weight-sized
    tensor per step, the kernel one. Sparse gradients and AMSGrad fall back to Keras' update (the trainer hands
    it neither: it densifies the gradients).

    `count_offset` is added to the update count of Adam's bias correction (0: Adam's own count): a warm-started
    run with a fresh Adam at a kept step count (-that step), or with the parent's Adam while its step count
    restarts (+the parent's step) (`t2t_repro.train.warm_start`).
    """

    def __init__(self, *args, count_offset=0, **kwargs):
        super().__init__(*args, **kwargs)
        self.count_offset = count_offset

    def update_step(self, gradient, variable, learning_rate):
        if self.amsgrad or isinstance(gradient, tf.IndexedSlices):
            if self.count_offset:
                raise ValueError("Keras' own Adam update counts from its iterations only: no count_offset")
            return super().update_step(gradient, variable, learning_rate)
        dtype = variable.dtype
        step = tf.cast(self.iterations + 1 + self.count_offset, dtype)
        index = self._get_variable_index(variable)
        return tf.raw_ops.ResourceApplyAdam(
            var=variable.handle,
            m=self._momentums[index].value.handle,
            v=self._velocities[index].value.handle,
            beta1_power=tf.pow(tf.cast(self.beta_1, dtype), step),
            beta2_power=tf.pow(tf.cast(self.beta_2, dtype), step),
            lr=tf.cast(learning_rate, dtype),
            beta1=tf.cast(self.beta_1, dtype),
            beta2=tf.cast(self.beta_2, dtype),
            epsilon=tf.cast(self.epsilon, dtype),
            grad=tf.cast(gradient, dtype),
        )


def make_optimizer(hparams, schedule_offset=0, adam_offset=0):
    """Adam on the paper's schedule (the schedule counts optimizer updates); the offsets are a warm-started
    run's (`t2t_repro.train.warm_start.WarmStart`), 0 for any other."""
    schedule = NoamSchedule(hparams.d_model, hparams.warmup_steps, hparams.learning_rate_scale, schedule_offset)
    return FusedAdam(
        count_offset=adam_offset,
        learning_rate=schedule,
        beta_1=hparams.adam_beta1,
        beta_2=hparams.adam_beta2,
        epsilon=hparams.adam_epsilon,
    )
