"""Layer normalization (Ba et al., 2016), used after every residual connection (section 3.1)."""

import keras
import tensorflow as tf

HALF_DTYPES = ("bfloat16", "float16")


class LayerNormalization(keras.layers.LayerNormalization):
    """keras.layers.LayerNormalization over the last axis, with its gradient written by hand.

    Same weights (gamma, beta), checkpoints and values as Keras' layer; the hand-written backward pass makes
    about half the elementwise passes of the automatic one. Other settings (several axes, RMS scaling, no
    centring or scaling) use Keras' implementation.

    gamma and beta are float32 under every policy: a half-precision policy (e.g. "bfloat16", the inference
    copy of `half_precision_weights`) becomes its mixed one here, as the normalization works in float32.
    """

    def __init__(self, *args, dtype=None, **kwargs):
        policy = keras.dtype_policies.get(dtype) if dtype is not None else None
        if policy is not None and policy.variable_dtype in HALF_DTYPES:
            dtype = f"mixed_{policy.compute_dtype}"
        super().__init__(*args, dtype=dtype, **kwargs)

    def call(self, inputs):
        last_axis = self.axis in (-1, [-1], inputs.shape.rank - 1, [inputs.shape.rank - 1])
        if not (last_axis and self.center and self.scale) or self.rms_scaling:
            return super().call(inputs)
        gamma, beta = (tf.cast(weight, tf.float32) for weight in (self.gamma, self.beta))
        outputs = normalize_last_axis(tf.cast(inputs, tf.float32), gamma, beta, self.epsilon)
        return tf.cast(outputs, self.compute_dtype)


def normalize_last_axis(x, gamma, beta, epsilon):
    """gamma * (x - mean) / sqrt(variance + epsilon) + beta over the last axis of x."""

    @tf.custom_gradient
    def normalize(x, gamma, beta):
        mean = tf.reduce_mean(x, axis=-1, keepdims=True)
        centered = x - mean
        inverse_std = tf.math.rsqrt(tf.reduce_mean(tf.square(centered), axis=-1, keepdims=True) + epsilon)
        normalized = centered * inverse_std

        def gradient(upstream):
            batch_axes = tf.range(tf.rank(upstream) - 1)
            scaled = upstream * gamma
            # d/dx of the normalization: remove the components along 1 and along `normalized`, then rescale.
            dx = inverse_std * (
                scaled
                - tf.reduce_mean(scaled, axis=-1, keepdims=True)
                - normalized * tf.reduce_mean(scaled * normalized, axis=-1, keepdims=True)
            )
            return dx, tf.reduce_sum(upstream * normalized, batch_axes), tf.reduce_sum(upstream, batch_axes)

        return normalized * gamma + beta, gradient

    return normalize(x, gamma, beta)
