"""Label-smoothed cross entropy over real (non-padding) target tokens (section 5.4)."""

import tensorflow as tf

from t2t_repro.special_tokens import PAD_ID


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
    logits = tf.cast(logits, tf.float32)
    # -sum_k q'(k) log p(k) = logsumexp(z) - (1 - eps) z_label - eps mean_k(z): the same value as through
    # log_softmax, without materialising a second [tokens, vocab] tensor and its gradient.
    log_normalizer = tf.reduce_logsumexp(logits, axis=-1)
    true_logit = tf.gather(logits, labels, batch_dims=2)
    mean_logit = tf.reduce_mean(logits, axis=-1)
    token_loss = log_normalizer - (1.0 - smoothing) * true_logit - smoothing * mean_logit
    weights = tf.cast(tf.not_equal(labels, PAD_ID), tf.float32)
    return tf.reduce_sum(token_loss * weights), tf.reduce_sum(weights)
