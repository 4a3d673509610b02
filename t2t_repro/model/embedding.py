"""Token embeddings shared with the pre-softmax projection (section 3.4) and positional encodings (3.5)."""

import math

import keras
import numpy as np
import tensorflow as tf


class TokenEmbedding(keras.layers.Layer):
    """A learned [vocab_size, d_model] matrix used both to embed ids and as the pre-softmax projection.

    Section 3.4: embedding outputs are multiplied by sqrt(d_model), and one matrix may serve the source
    embedding, the target embedding and the output projection (`project`, logits = x E^T).

    Args:
        vocab_size: number of token ids.
        d_model: embedding width.

    Call arguments:
        ids: integer tensor of any shape; returns its embeddings times sqrt(d_model).

    Example:
        >>> embedding = TokenEmbedding(vocab_size=100, d_model=16)
        >>> embedding.project(embedding(tf.constant([[3, 4]]))).shape
        TensorShape([1, 2, 100])
    """

    def __init__(self, vocab_size, d_model, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.d_model = d_model

    def build(self, input_shape=None):
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.vocab_size, self.d_model),
            initializer=keras.initializers.RandomNormal(stddev=self.d_model**-0.5),
        )
        self.built = True

    def call(self, ids):
        return tf.gather(self.embeddings, ids) * math.sqrt(self.d_model)

    def transposed_matrix(self, dtype):
        """E^T [d_model, vocab_size] in `dtype`, for `project` to multiply by many times (decoding steps)."""
        if not self.built:
            self.build()
        return tf.transpose(tf.cast(self.embeddings, dtype))

    def project(self, x, transposed_matrix=None):
        """float32 logits over the vocabulary: x times the transposed embedding matrix, multiplied in x's dtype
        (the compute dtype of a mixed-precision model) and returned in float32 for the softmax.

        `transposed_matrix`: E^T from `transposed_matrix`, made once for a decoding loop. A matmul told to
        transpose E reads it transposed at every call, several times slower than multiplying by E^T stored so
        when the rows are few (a decoding step); the products are the same."""
        if not self.built:
            self.build()
        # One 2-D matmul over all positions: a batched matmul against the shared matrix would make its
        # gradient materialise one [vocab_size, d_model] product per sentence before summing them.
        flat = tf.reshape(x, [-1, self.d_model])
        if transposed_matrix is None:
            logits = tf.matmul(flat, tf.cast(self.embeddings, x.dtype), transpose_b=True)
        else:
            logits = tf.matmul(flat, transposed_matrix)
        logits = tf.reshape(logits, tf.concat([tf.shape(x)[:-1], [self.vocab_size]], axis=0))
        return tf.cast(logits, tf.float32)

    def get_config(self):
        config = super().get_config()
        config.update(vocab_size=self.vocab_size, d_model=self.d_model)
        return config


def position_range(length, start):
    """int32 positions [start, start + length): a range of the length alone shifted by start, so that XLA compiles
    it where start changes from step to step (a decoding loop)."""
    return start + tf.range(length)


def sinusoid_position_encoding(length, d_model, start=0):
    """PE[pos, 2i] = sin(pos / 10000^(2i/d_model)), PE[pos, 2i+1] = cos(same) for pos in [start, start+length).

    Section 3.5, with even dimensions sines and odd dimensions cosines, interleaved as the formula says.
    Returns a float32 tensor [length, d_model]; `length` and `start` may be tensors. Made in float32 also for
    a mixed-precision model (which adds it in its compute dtype): positions past 256 are not exact in bfloat16.
    """
    positions = tf.cast(position_range(length, start), tf.float32)[:, tf.newaxis]
    pair_index = np.arange(d_model) // 2  # i for dimensions 2i and 2i+1
    inverse_frequency = tf.constant(1.0 / np.power(10000.0, 2.0 * pair_index / d_model), tf.float32)
    angles = positions * inverse_frequency[tf.newaxis, :]
    is_even = tf.constant(np.arange(d_model) % 2 == 0)
    return tf.where(is_even, tf.sin(angles), tf.cos(angles))


class PositionEncoding(keras.layers.Layer):
    """Adds position information to a sequence of embeddings: sinusoids (section 3.5) or learned (Table 3 E).

    Args:
        d_model: embedding width.
        kind: "sinusoid" or "learned".
        max_position: the number of learned positions (learned only; sinusoids extend to any length).

    Call arguments:
        x: [batch, length, d_model] embeddings.
        start: position of x's first element (non-zero when decoding one position at a time).
    """

    def __init__(self, d_model, kind="sinusoid", max_position=1024, **kwargs):
        super().__init__(**kwargs)
        if kind not in ("sinusoid", "learned"):
            raise ValueError(f"unknown position encoding {kind!r}")
        self.d_model = d_model
        self.kind = kind
        self.max_position = max_position

    def build(self, input_shape=None):
        if self.kind == "learned":
            self.position_embeddings = self.add_weight(
                name="position_embeddings",
                shape=(self.max_position, self.d_model),
                initializer=keras.initializers.RandomNormal(stddev=self.d_model**-0.5),
            )
        self.built = True

    def call(self, x, start=0):
        length = tf.shape(x)[1]
        if self.kind == "sinusoid":
            positions = sinusoid_position_encoding(length, self.d_model, start)
        else:
            positions = tf.gather(self.position_embeddings, position_range(length, start))
        return x + tf.cast(positions, x.dtype)[tf.newaxis]

    def get_config(self):
        config = super().get_config()
        config.update(d_model=self.d_model, kind=self.kind, max_position=self.max_position)
        return config
