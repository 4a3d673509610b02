"""Beam search over a Transformer's translations, with the settings of one `DecodeSettings` (section 6.1).

    ids, scores = beam_decode(model, inputs, DecodeSettings(beam_size=4, alpha=0.6, extra_length=50, nbest=2))
    # ids [batch, nbest, length] (PAD after a hypothesis ends), scores [batch, nbest], best first

The model encodes the sources and scores the next tokens (`Transformer.scoring_function`); the search itself
(`t2t_repro.decode.beam_search`) knows no model. The model may be an `Ensemble` of Transformers
(`t2t_repro.decode.ensemble`), which scores with the mean of its models' probabilities. A sentence's outputs have at most `real input length +
extra_length` tokens (section 6.1: input length + 50), where the real length counts its non-PAD ids, so
padding added by batching changes nothing, and at most `model.max_target_length` with learned positions.

A problem may constrain the outputs (`Problem.output_constraint`): parsing's `TreeTokens` let only hypotheses
that can still become a well-formed tree on the source words grow (`t2t_repro.decode.tree_constraint`), unless
the settings turn it off (`constrained_output=False`).

`use_cache=False` recomputes the whole decoder over the prefix at every step instead of reading the
self-attention cache; it gives the same hypotheses and scores and exists to check the cache.
"""

import dataclasses

import tensorflow as tf

from t2t_repro.decode.beam_search import beam_search
from t2t_repro.decode.compiled import compiled_for_model
from t2t_repro.decode.ensemble import Ensemble
from t2t_repro.decode.tree_constraint import constrain
from t2t_repro.special_tokens import EOS_ID, PAD_ID


def max_output_lengths(model, inputs, extra_length):
    """int32 [batch]: each sentence's most output tokens, its real input length (non-PAD ids) + extra_length
    (section 6.1), at least 1 and at most the positions a model with learned positions can read."""
    real_length = tf.reduce_sum(tf.cast(tf.not_equal(inputs, PAD_ID), tf.int32), axis=1)
    max_lengths = tf.maximum(real_length + extra_length, 1)
    if model.max_target_length is not None:
        max_lengths = tf.minimum(max_lengths, model.max_target_length)
    return max_lengths


def longest_output(model, inputs, extra_length):
    """int32 scalar at least every `max_output_lengths`, known from the inputs' shape alone (as XLA needs it):
    the source length + extra_length, at least 1, at most the positions a model with learned positions can
    read. The length of the search's buffers and self-attention caches."""
    longest = tf.maximum(tf.shape(inputs)[1] + extra_length, 1)
    if model.max_target_length is not None:
        longest = tf.minimum(longest, model.max_target_length)
    return longest


def search(model, inputs, settings, use_cache=True, eos_id=EOS_ID, jit_compile=False, drop_finished=None,
           constraint=None):
    """Beam search as TensorFlow ops, for use inside a `tf.function` (e.g. an exported serving function).

    Args:
        model: a `t2t_repro.model.Transformer`, or an `Ensemble` of them.
        inputs: int32 [batch, source_length] source ids, each ending in EOS, 0-padded.
        settings: a `t2t_repro.decode_settings.DecodeSettings`: beam_size, alpha, extra_length, nbest and
            unfinished_compete.
        use_cache: False recomputes the decoder over the whole prefix at every step (slow; for checking).
        eos_id: the id that ends a hypothesis; one outside the vocabulary (e.g. -1) disables EOS (benchmarks).
        jit_compile: compile the search loop with XLA, with a self-attention cache preallocated to the longest
            output and every step in the same shapes. Its softmax over the masked positions rounds otherwise in
            the last bits: scores may differ by float rounding from the default's (the uncached decoder's), and
            near-tied hypotheses may swap. Without it the cache grows by a position a step, which on a CPU
            measured faster: without XLA nothing is written in place, and a preallocated cache would be copied
            whole at every step.
        drop_finished: stop computing a sentence once its search is done (the batch shrinks; the same
            hypotheses, scores within float rounding of a batch that carries every sentence to its end);
            None: wherever the search is not XLA-compiled, whose shapes must stay.
        constraint: the problem's output constraint (`TreeTokens`: only well-formed trees on the source
            words), applied unless settings.constrained_output is False; None: none.

    Returns:
        ids: int32 [batch, nbest, length], best first; positions after a hypothesis' end are PAD (0).
        scores: float32 [batch, nbest], log-probability / length_penalty(|Y|); -inf marks an empty slot.
    """
    inputs = tf.convert_to_tensor(inputs, tf.int32)
    max_lengths = max_output_lengths(model, inputs, settings.extra_length)
    longest = longest_output(model, inputs, settings.extra_length)
    symbols_to_logits_fn, state, sentence_state = model.scoring_function(
        inputs, settings.beam_size, longest if jit_compile else None, use_cache)
    normalized = isinstance(model, Ensemble)  # its function returns the mean's log-probabilities
    if constraint is not None and settings.constrained_output:
        symbols_to_logits_fn, sentence_state = constrain(symbols_to_logits_fn, sentence_state, constraint, inputs,
                                                         max_lengths, settings.beam_size, normalized)
        normalized = True
    ids, scores = beam_search(
        symbols_to_logits_fn,
        tf.fill(tf.shape(inputs)[:1], tf.constant(PAD_ID, tf.int32)),
        settings.beam_size,
        max_lengths,
        model.vocab_size,
        settings.alpha,
        states=state,
        eos_id=eos_id,
        unfinished_compete=settings.unfinished_compete,
        normalized=normalized,
        max_length=longest,
        jit_compile=jit_compile,
        sentence_states=sentence_state,
        drop_finished=not jit_compile if drop_finished is None else drop_finished,
    )
    return ids[:, : settings.nbest], scores[:, : settings.nbest]


def compiled_search(model, settings, use_cache=True, eos_id=EOS_ID, jit_compile=False, drop_finished=None,
                    constraint=None):
    """A `tf.function` inputs [batch, length] -> (ids, scores) of `search` with these settings (cached)."""
    # Truncating sources is not searching: settings that differ only there share one function.
    key = ("beam", dataclasses.replace(settings, max_input_length=None), use_cache, eos_id, jit_compile,
           drop_finished, constraint)
    return compiled_for_model(
        model, key,
        lambda model, inputs: search(model, inputs, settings, use_cache, eos_id, jit_compile, drop_finished,
                                     constraint),
        [tf.TensorSpec([None, None], tf.int32)],
    )


def beam_decode(model, inputs, settings, use_cache=True, eos_id=EOS_ID, jit_compile=False, drop_finished=None,
                constraint=None):
    """Runs `search` compiled (see `search` for the arguments); returns (ids, scores) tensors."""
    compiled = compiled_search(model, settings, use_cache, eos_id, jit_compile, drop_finished, constraint)
    return compiled(tf.convert_to_tensor(inputs, tf.int32))
