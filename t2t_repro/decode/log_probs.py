"""The distribution every decoder here reads the next token from: the model's softmax with PAD removed.

PAD starts the decoder (the targets are shifted right with it) and pads outputs after their end; it is never
generated, so its probability is removed before the softmax. The beam search, the sampler and the scoring of
given targets all take their log-probabilities from `next_token_log_probs`, so that a hypothesis has one
log-probability whichever of them computes it (the scores the beam search reports are the scores the scorer
gives its outputs).
"""

import tensorflow as tf

from t2t_repro.special_tokens import PAD_ID


def next_token_log_probs(logits, vocab_size):
    """float32 log-probabilities [..., vocab_size] of logits (any float type), PAD's -inf."""
    not_pad = tf.one_hot(PAD_ID, vocab_size, on_value=float("-inf"), off_value=0.0)
    return tf.nn.log_softmax(tf.cast(logits, tf.float32) + not_pad)
