"""Label-smoothed cross entropy over real (non-padding) target tokens (section 5.4)."""

import functools

import tensorflow as tf

from t2t_repro.special_tokens import PAD_ID

# Added to the logits of padding rows of the vocabulary: exp() of it underflows to exactly 0.
MASK_VALUE = -1e9


def label_smoothed_cross_entropy(labels, logits, smoothing):
    """Sum of the smoothed cross entropy over real target tokens, and the number of those tokens.

    The target distribution is `(1 - smoothing) * one_hot(label) + smoothing / vocab_size`, the uniform
    smoothing of Szegedy et al. (2016) that section 5.4 cites. Positions whose label is PAD_ID carry no loss.
    Returning (sum, count) rather than a mean lets replicas and micro-batches be combined exactly; the
    loss per real target token is sum / count.

    Args:
        labels: int [batch, length].
        logits: float [batch, length, vocab_size].
        smoothing: epsilon_ls.
    Returns:
        (loss_sum, token_count), float32 scalars.
    """
    vocab_size = tf.shape(logits)[-1]
    flat_logits = tf.reshape(tf.cast(logits, tf.float32), [-1, vocab_size])
    return _sum_over_real_tokens(
        labels, lambda flat_labels: _smoothed_token_losses(flat_logits, flat_labels, smoothing)
    )


def projected_label_smoothed_cross_entropy(labels, states, output_matrix, smoothing, vocab_size=None):
    """`label_smoothed_cross_entropy(labels, states @ output_matrix[:vocab_size]^T, smoothing)`, with the
    projection inside.

    The training step's form of the loss: the decoder's final states and the pre-softmax matrix (the shared
    embedding matrix, section 3.4) come in, and the gradient flows to both without the [tokens, vocab]
    gradient of the logits ever being formed (see `_projected_token_losses`). The products run in the states'
    dtype (bfloat16 or float16 under mixed precision); the softmax statistics and the loss are float32.

    Args:
        labels: int [batch, length].
        states: float [batch, length, d_model].
        output_matrix: float [rows, d_model]; logits are states times its transpose.
        smoothing: epsilon_ls.
        vocab_size: the real vocabulary, when output_matrix has padding rows past it (never predicted, no
            smoothing mass); None: every row is real.
    Returns:
        (loss_sum, token_count), float32 scalars.
    """
    flat_states = tf.reshape(states, [-1, tf.shape(states)[-1]])
    matrix = tf.cast(output_matrix, tf.float32)
    rows = output_matrix.shape[0]
    padding = 0 if vocab_size is None else rows - vocab_size
    return _sum_over_real_tokens(
        labels, lambda flat_labels: _projected_token_losses(flat_states, matrix, flat_labels, smoothing, padding)
    )


def _sum_over_real_tokens(labels, token_losses_of):
    """(sum of token_losses_of(flat labels) over the positions whose label is not PAD_ID, their count)."""
    flat_labels = tf.reshape(labels, [-1])
    weights = tf.cast(tf.not_equal(flat_labels, PAD_ID), tf.float32)
    return tf.reduce_sum(token_losses_of(flat_labels) * weights), tf.reduce_sum(weights)


def _softmax_statistics(logits):
    """(exp(z - max z), its row sums, logsumexp(z) per row) for logits z [tokens, vocab]."""
    row_max = tf.reduce_max(logits, axis=-1, keepdims=True)
    shifted_exp = tf.exp(logits - row_max)
    normalizer = tf.reduce_sum(shifted_exp, axis=-1)
    return shifted_exp, normalizer, tf.math.log(normalizer) + row_max[:, 0]


@tf.function(jit_compile=True)
def _half_softmax_statistics(half_logits, row_bias):
    """`_softmax_statistics(float32(half_logits) + row_bias)` with exp(z - max z) returned in half_logits' dtype,
    the factor of both backward products under mixed precision.

    The statistics are float32 as in `_softmax_statistics`. XLA fuses the casts, the max, the exp and the sum
    into about two passes over the half-precision logits. As separate TensorFlow ops they were seven passes over
    [tokens, vocab]: a cast to float32, the max, the subtraction, the exp, the sum, and a cast back to the half
    type for each backward product. XLA compiles it once per batch shape.
    """
    shifted_exp, normalizer, log_normalizer = _softmax_statistics(tf.cast(half_logits, tf.float32) + row_bias)
    return tf.cast(shifted_exp, half_logits.dtype), normalizer, log_normalizer


def _probabilities_and_log_normalizer(logits, labels):
    """(softmax(z) in z's dtype, logsumexp(z) per row in float32) for logits z [tokens, vocab], from one
    tf.nn.softmax: one pass over z where it computes in float32 (float32 logits; bfloat16 ones where
    `_bfloat16_softmax_is_float32_inside`), against three for `_softmax_statistics` (max, exp, sum).

    logsumexp(z) = z_label - log softmax(z)_label. Its error is that of the label's probability: float32
    rounding, or at most 2^-8 relative in bfloat16 (0.004 in the token's loss), below what the logits' own
    bfloat16 rounding puts into any statistics of them (up to 2^-8 of each logit: 0.04 at a logit of 10). If a
    label's probability underflows to 0 (a token loss above 87 nats, seen only in a diverging run), the batch's
    logsumexp is computed the long way instead; NaN stays NaN for the training step's guard.
    """
    probabilities = tf.nn.softmax(logits)
    label_probability = tf.cast(tf.gather(probabilities, labels, batch_dims=1), tf.float32)
    label_logit = tf.cast(tf.gather(logits, labels, batch_dims=1), tf.float32)
    log_normalizer = tf.cond(
        tf.reduce_any(label_probability == 0.0),
        lambda: tf.reduce_logsumexp(tf.cast(logits, tf.float32), axis=-1),
        lambda: label_logit - tf.math.log(label_probability),
    )
    return probabilities, log_normalizer


@functools.cache
def _bfloat16_softmax_is_float32_inside():
    """Whether tf.nn.softmax of bfloat16 logits on the default device computes in float32 and rounds once
    (every probability of a test row within 2^-7 of the float32 one). oneDNN's CPU kernel does, in one pass:
    26 against 49 ms for `_half_softmax_statistics` on [2048, 37000]. TensorFlow's CPU kernel without oneDNN
    (TF_ENABLE_ONEDNN_OPTS=0) was measured 15% off."""
    with tf.init_scope():
        logits = tf.cast(tf.sin(tf.range(8192, dtype=tf.float32)) * 8.0, tf.bfloat16)[tf.newaxis]
        expected = tf.nn.softmax(tf.cast(logits, tf.float32))
        relative_error = tf.abs(tf.cast(tf.nn.softmax(logits), tf.float32) - expected) / expected
        return bool(tf.reduce_max(relative_error) <= 2.0**-7)


def _smoothed_token_losses(logits, labels, smoothing):
    """-sum_k q(k) log softmax(z)(k) per row of logits [tokens, vocab], with its gradient written by hand.

    The value is logsumexp(z) - (1 - eps) z_label - eps mean_k(z), and the gradient softmax(z) - q. Written
    this way, the step keeps one [tokens, vocab] tensor (exp(z - max z)) for the backward pass, which makes
    softmax(z) - q in two elementwise passes plus a scatter on the label positions; the automatic gradient of
    the same expression makes about a dozen passes over [tokens, vocab].
    """

    @tf.custom_gradient
    def token_losses(z):
        vocab_size = tf.cast(tf.shape(z)[-1], z.dtype)
        shifted_exp, normalizer, log_normalizer = _softmax_statistics(z)
        true_logit = tf.gather(z, labels, batch_dims=1)
        loss = log_normalizer - (1.0 - smoothing) * true_logit - smoothing * tf.reduce_mean(z, axis=-1)

        def gradient(upstream):
            upstream = upstream[:, tf.newaxis]
            # upstream * (softmax(z) - eps / V), then - upstream * (1 - eps) at each row's label.
            grad = shifted_exp * (upstream / normalizer[:, tf.newaxis]) - (smoothing / vocab_size) * upstream
            label_positions = tf.stack([tf.range(tf.shape(labels)[0], dtype=labels.dtype), labels], axis=1)
            return tf.tensor_scatter_nd_sub(grad, label_positions, (1.0 - smoothing) * upstream[:, 0])

        return loss, gradient

    return token_losses(logits)


def _projected_token_losses(states, matrix, labels, smoothing, padding=0):
    """`_smoothed_token_losses(states @ matrix^T, labels, smoothing)` with its gradient written by hand.

    With z = x E^T, softmax(z) = F / n per row and u the upstream gradient per token, the gradient of the
    logits u (softmax(z) - q) gives
        dx = (u / n) (F E) - (1 - eps) u E[label] - eps u mean_k(E_k)
        dE = F^T ((u / n) x) - (1 - eps) scatter_label(u x) - (eps / V) sum_tokens(u x)
    so the row scalings land on the [tokens, d_model] side, and the two matmuls read F as the forward pass
    left it. The [tokens, vocab] gradient of the logits, three elementwise passes over it and its scatter are
    never made, and mean_k(z) is x . mean_k(E_k) instead of a pass over the logits.

    The three products take x's dtype (mixed precision); everything else is float32. F is softmax(z) itself
    (n = 1) from one tf.nn.softmax (`_probabilities_and_log_normalizer`) for float32, and for bfloat16 where
    that kernel computes in float32 (oneDNN's CPU kernel). Otherwise (float16; bfloat16 without oneDNN) F is
    exp(z - max z) in x's dtype and n its row sums, from one XLA-compiled function of float32 statistics
    (`_half_softmax_statistics`). The last `padding` rows of E are masked out of the softmax (F is 0 there) and
    out of the smoothing's mean and its gradient.
    """
    compute_dtype = states.dtype

    def product(a, b, **kwargs):
        return tf.cast(tf.matmul(tf.cast(a, compute_dtype), tf.cast(b, compute_dtype), **kwargs), tf.float32)

    @tf.custom_gradient
    def token_losses(x_in, embedding_matrix):
        x = tf.cast(x_in, tf.float32)
        real_rows = embedding_matrix
        row_bias = 0.0
        if padding:
            real_rows = embedding_matrix[:-padding]
            row_bias = tf.concat([tf.zeros([tf.shape(real_rows)[0]]), tf.fill([padding], MASK_VALUE)], axis=0)
        compute_matrix = tf.cast(embedding_matrix, compute_dtype)  # cast once for the forward and dx products
        logits = tf.matmul(x_in, compute_matrix, transpose_b=True)
        # softmax(z) = factor / normalizer per row; the factor is also that of both backward products.
        if compute_dtype == tf.float32 or (compute_dtype == tf.bfloat16 and _bfloat16_softmax_is_float32_inside()):
            biased_logits = logits + tf.cast(row_bias, compute_dtype) if padding else logits
            factor, log_normalizer = _probabilities_and_log_normalizer(biased_logits, labels)
            normalizer = 1.0
        else:
            factor, normalizer, log_normalizer = _half_softmax_statistics(logits, row_bias)
        label_rows = tf.gather(embedding_matrix, labels)
        mean_row = tf.reduce_mean(real_rows, axis=0)
        loss = (
            log_normalizer
            - (1.0 - smoothing) * tf.reduce_sum(x * label_rows, axis=-1)
            - smoothing * tf.linalg.matvec(x, mean_row)
        )

        def gradient(upstream):
            row_scale = (upstream / normalizer)[:, tf.newaxis]
            upstream = upstream[:, tf.newaxis]
            dx = (
                row_scale * product(factor, compute_matrix)
                - (1.0 - smoothing) * upstream * label_rows
                - smoothing * upstream * mean_row
            )
            weighted_x = upstream * x
            vocab_size = tf.cast(tf.shape(real_rows)[0], x.dtype)
            smoothing_part = (smoothing / vocab_size) * tf.reduce_sum(weighted_x, axis=0)
            if padding:
                smoothing_part = tf.pad(tf.broadcast_to(smoothing_part, tf.shape(real_rows)), [[0, padding], [0, 0]])
            d_matrix = product(factor, row_scale * x, transpose_a=True) - smoothing_part
            d_matrix = tf.tensor_scatter_nd_sub(d_matrix, labels[:, tf.newaxis], (1.0 - smoothing) * weighted_x)
            return tf.cast(dx, compute_dtype), d_matrix

        return loss, gradient

    return token_losses(states, matrix)
