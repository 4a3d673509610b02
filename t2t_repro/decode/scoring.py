"""The model's log-probability of given targets, teacher-forced: what the beam search would score them.

    scorer = tensorflow_scorer(model, alpha=0.6)
    scorer([[4, 17, 9, EOS_ID]], [[12, 5, EOS_ID]])   # per pair: (log P(target | source), tokens, score)

A batch scorer is a function `scorer(sources, targets) -> results`: `sources` lists of source ids ending in
EOS, `targets` lists of target ids (ending in EOS when the target is a whole sentence); per pair, its log-
probability log P(Y | X) = sum_t log P(y_t | y_<t, X), its token count |Y| and its score log P / lp(|Y|) with
the GNMT length penalty lp(|Y|) = ((5 + |Y|) / 6) ** alpha of section 6.1.

The decoder reads the whole target at once (teacher forcing: the targets shifted right behind PAD, as in
training), in one pass instead of the beam search's one position per step. Both take the next token's log-
probabilities from `t2t_repro.decode.log_probs` (PAD removed) and the score from the beam search's own
`length_penalty`, in float32 (or the model's serving precision), so the scores of the beam search's outputs
are the scores it reported for them, to float rounding: the one-pass and the cached decoder, and the order of
the sum, round differently.
"""

import tensorflow as tf

from t2t_repro.decode.beam_search import length_penalty
from t2t_repro.decode.compiled import compiled_for_model
from t2t_repro.decode.decode_text import padded_batch
from t2t_repro.decode.log_probs import next_token_log_probs
from t2t_repro.special_tokens import PAD_ID


def score_targets(model, inputs, targets, alpha):
    """Teacher-forced scores as TensorFlow ops.

    Args:
        model: a `t2t_repro.model.Transformer`.
        inputs: int32 [batch, source_length] source ids, each ending in EOS, 0-padded.
        targets: int32 [batch, target_length] target ids, 0-padded (PAD is never a target token).
        alpha: the length penalty's exponent.

    Returns:
        log_probs: float32 [batch], log P(target | source).
        lengths: int32 [batch], the target tokens (non-PAD ids).
        scores: float32 [batch], log_probs / length_penalty(lengths, alpha), as the beam search divides.
    """
    logits = model({"inputs": inputs, "targets": targets}, training=False)
    token_log_probs = tf.gather(next_token_log_probs(logits, model.vocab_size), targets, batch_dims=2)
    real = tf.not_equal(targets, PAD_ID)
    # PAD's log-probability is -inf: selected away, not multiplied by 0 (which would give NaN).
    log_probs = tf.reduce_sum(tf.where(real, token_log_probs, 0.0), axis=1)
    lengths = tf.reduce_sum(tf.cast(real, tf.int32), axis=1)
    return log_probs, lengths, log_probs / length_penalty(lengths, alpha)


def tensorflow_scorer(model, alpha):
    """The batch scorer (see the module docstring) of `model` with the length penalty exponent `alpha`, compiled
    once per model and alpha."""
    spec = tf.TensorSpec([None, None], tf.int32)
    compiled = compiled_for_model(model, ("score", alpha),
                                  lambda model, inputs, targets: score_targets(model, inputs, targets, alpha),
                                  [spec, spec])

    def run(sources, targets):
        log_probs, lengths, scores = (t.numpy() for t in compiled(padded_batch(sources), padded_batch(targets)))
        return [(float(p), int(n), float(s)) for p, n, s in zip(log_probs, lengths, scores)]

    run.model = model  # the compiled function holds the model weakly: whoever holds the scorer keeps it alive
    run.max_target_length = model.max_target_length  # learned positions: no longer target can be read
    return run
