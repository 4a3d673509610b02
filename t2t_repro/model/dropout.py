"""Dropout (section 5.4) whose keep-or-drop draws are float32 in every precision."""

import keras
import tensorflow as tf


class Dropout(keras.layers.Dropout):
    """keras.layers.Dropout, except that the uniform numbers deciding which elements are dropped are drawn in
    float32 whatever the input's dtype.

    Keras draws them in the input's dtype. A bfloat16 uniform number has 8 significant bits, so under
    mixed_bfloat16 a rate of 0.1 dropped 13/128 (0.1016) of the elements, and drawing the bf16 numbers took
    longer than drawing float32 ones. In float32 the draws, the seeds and the outputs are those of Keras' layer
    (the same random stream, so runs and checkpoints made before this class reproduce exactly).
    """

    def call(self, inputs, training=False):
        if not (training and 0 < self.rate < 1) or self.noise_shape is not None:
            return super().call(inputs, training=training)
        draws = keras.random.uniform(tf.shape(inputs), dtype="float32", seed=self.seed_generator)
        kept = inputs * tf.cast(1.0 / (1.0 - self.rate), inputs.dtype)
        return tf.where(draws >= self.rate, kept, tf.zeros([], inputs.dtype))
