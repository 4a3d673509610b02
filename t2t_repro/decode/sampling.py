"""Ancestral sampling from a Transformer: each output token drawn from the model's next-token distribution at
a temperature, restricted to its K most likely tokens (top-k) or to its nucleus (top-p, the fewest most likely
tokens whose probability reaches P), until EOS or the maximum length.

    ids, log_probs = sample(model, inputs, settings, SamplingSettings("topk:10"), seeds)
    # ids [batch, nbest, length] (PAD after a sample ends), log_probs [batch, nbest], most likely first
    search = sampling_search(model, settings, SamplingSettings("topp:0.9", temperature=0.8, seed=3))

A sample is decoded as the beam search decodes a hypothesis (`t2t_repro.decode.transformer_search`): the same
self-attention cache, the same maximum length (input length + extra_length, section 6.1), the same next-token
log-probabilities with PAD removed (`t2t_repro.decode.log_probs`). Its score is its log-probability under the
model, log P(Y | X) at temperature 1 and unrestricted, the number t2t-repro-decoder --score_file gives it: not
length-normalised, and not the probability of drawing it. With nbest N, N samples are drawn per input and
returned most likely first.

A problem's output constraint (parsing's trees on the source words, `t2t_repro.decode.tree_constraint`) holds
for samples as for the beam search's hypotheses: each token is drawn among the allowed ones only, with their
log-probabilities as they are (not renormalised), so every sample is a well-formed tree and its score is still
its log-probability under the model; `constrained_output=False` samples freely.

The candidates of a step are ranked as the beam search ranks a beam's: by the hypothesis' log-probability with
each token, ties to the lower id. So top-k with K = 1 takes the token the greedy search (beam size 1) takes, and
its outputs are the greedy search's.

Randomness: every sample owns a stream of uniform numbers, one a step, from a stateless generator seeded by
the seed, the sample's index and the source ids (`sample_seeds`). A sentence's samples therefore depend on the
seed, the model and the sentence alone: not on the batch it is decoded in (whose shape changes the rounding
of their log-probabilities, in the last digits) nor on its line, so the same command gives the same bytes, and
the interactive decoder samples for a line what the file decoder samples for it. The same sentence twice gets
the same samples. A token is drawn by inverting the cumulative distribution of the
kept candidates at the step's uniform number.
"""

import dataclasses
import hashlib

import numpy as np
import tensorflow as tf

from t2t_repro.decode.beam_search import state_invariant, write_column
from t2t_repro.decode.compiled import compiled_for_model
from t2t_repro.decode.decode_text import batch_results, padded_batch
from t2t_repro.decode.log_probs import next_token_log_probs
from t2t_repro.decode.top_k import top_k
from t2t_repro.decode.transformer_search import max_output_lengths
from t2t_repro.decode.tree_constraint import constrain
from t2t_repro.decode_settings import TOP_P
from t2t_repro.special_tokens import EOS_ID, PAD_ID


def sample_seeds(seed, sources, samples):
    """int32 [len(sources), samples, 2]: the stateless random seed of each sample of each source (id lists)."""
    seeds = np.empty([len(sources), samples, 2], np.int32)
    for row, ids in enumerate(sources):
        for k in range(samples):
            digest = hashlib.blake2b(f"{seed}/{k}/{','.join(map(str, ids))}".encode(), digest_size=8).digest()
            seeds[row, k] = np.frombuffer(digest, np.int32)
    return seeds


def _drawing_function(sampling, vocab_size):
    """draw(hypothesis log-probs [rows], next-token log-probs [rows, vocab], uniforms [rows]) -> tokens [rows]."""
    method, value = sampling.parsed
    candidates = vocab_size if method == TOP_P else min(value, vocab_size)

    def draw(hypothesis_log_probs, log_probs, uniforms):
        _, tokens = top_k(hypothesis_log_probs[:, tf.newaxis] + log_probs, candidates)
        logits = tf.gather(log_probs, tokens, batch_dims=1) / sampling.temperature
        if method == TOP_P:
            # Keep a candidate while the more likely ones before it do not reach P: the nucleus.
            before = tf.math.cumsum(tf.nn.softmax(logits), axis=1, exclusive=True)
            logits = tf.where(before < value, logits, float("-inf"))
        probabilities = tf.nn.softmax(logits)
        cumulative = tf.math.cumsum(probabilities, axis=1)
        below = tf.math.count_nonzero(cumulative <= uniforms[:, tf.newaxis] * cumulative[:, -1:], axis=1,
                                      dtype=tf.int32)
        # Candidates without probability (PAD, outside the nucleus) come last: never drawn, even when rounding
        # puts the uniform number at the very end of the distribution.
        possible = tf.math.count_nonzero(probabilities > 0, axis=1, dtype=tf.int32)
        return tf.gather(tokens, tf.minimum(below, possible - 1), batch_dims=1)

    return draw


def sample(model, inputs, settings, sampling, seeds, constraint=None):
    """Ancestral sampling as TensorFlow ops, for use inside a `tf.function`.

    Args:
        model: a `t2t_repro.model.Transformer`.
        inputs: int32 [batch, source_length] source ids, each ending in EOS, 0-padded.
        settings: a `DecodeSettings`: extra_length, and nbest, the samples per input (its beam settings are
            not used).
        sampling: a `SamplingSettings` with a sampling method.
        seeds: int32 [batch, nbest, 2], each sample's random seed (`sample_seeds`).
        constraint: the problem's output constraint (`TreeTokens`), applied unless settings.constrained_output is
            False; None: none.

    Returns:
        ids: int32 [batch, nbest, length], most likely first; positions after a sample's end are PAD (0).
        log_probs: float32 [batch, nbest], each sample's log-probability under the model.
    """
    inputs = tf.convert_to_tensor(inputs, tf.int32)
    samples, vocab_size = settings.nbest, model.vocab_size
    batch = tf.shape(inputs)[0]
    # Row s * samples + k is sample k of sentence s, as the model's scoring function lays out beams.
    sentence_max_lengths = max_output_lengths(model, inputs, settings.extra_length)
    max_lengths = tf.repeat(sentence_max_lengths, samples)
    longest = tf.reduce_max(max_lengths)
    symbols_to_logits_fn, cache, sentences = model.scoring_function(inputs, samples)
    normalized = False  # True: the scoring function gives log-probabilities (-inf where the constraint forbids)
    if constraint is not None and settings.constrained_output:
        symbols_to_logits_fn, sentences = constrain(symbols_to_logits_fn, sentences, constraint, inputs,
                                                    sentence_max_lengths, samples, normalized=False)
        normalized = True
    uniforms = tf.map_fn(lambda seed: tf.random.stateless_uniform([longest], seed), tf.reshape(seeds, [-1, 2]),
                         fn_output_signature=tf.float32)
    draw = _drawing_function(sampling, vocab_size)

    def body(step, ids, log_probs, done, cache):
        logits, cache = symbols_to_logits_fn(ids, step, cache, sentences)
        next_log_probs = tf.reshape(logits if normalized else next_token_log_probs(logits, vocab_size),
                                    [-1, vocab_size])
        tokens = tf.where(done, PAD_ID, draw(log_probs, next_log_probs, uniforms[:, step]))
        log_probs += tf.where(done, 0.0, tf.gather(next_log_probs, tokens, batch_dims=1))
        done = done | tf.equal(tokens, EOS_ID) | (step + 1 >= max_lengths)
        return step + 1, write_column(ids, step + 1, tokens), log_probs, done, cache

    rows = batch * samples
    loop_vars = (tf.constant(0), tf.fill([rows, longest + 1], PAD_ID), tf.zeros([rows]), tf.zeros([rows], tf.bool),
                 cache)
    invariants = (tf.TensorShape([]), tf.TensorShape([None, None]), tf.TensorShape([None]),
                  tf.TensorShape([None]), tf.nest.map_structure(lambda x: state_invariant(x.shape), cache))
    steps, ids, log_probs, _, _ = tf.while_loop(lambda step, ids, log_probs, done, cache: tf.logical_not(
        tf.reduce_all(done)), body, loop_vars, shape_invariants=invariants)
    log_probs, order = tf.math.top_k(tf.reshape(log_probs, [batch, samples]), k=samples)
    ids = tf.gather(tf.reshape(ids[:, 1 : steps + 1], [batch, samples, -1]), order, batch_dims=1)
    return ids, log_probs


def sampling_search(model, settings, sampling, constraint=None):
    """The batch search (`t2t_repro.decode.decode_text`) that samples settings.nbest outputs per source with
    `sampling` (within a problem's output `constraint`), compiled once per model and settings; each output's score
    is its log-probability."""
    key = ("sample", dataclasses.replace(settings, max_input_length=None), dataclasses.replace(sampling, seed=0),
           constraint)
    compiled = compiled_for_model(
        model, key, lambda model, inputs, seeds: sample(model, inputs, settings, sampling, seeds, constraint),
        [tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([None, settings.nbest, 2], tf.int32)],
    )

    def run(sources):
        return batch_results(*compiled(padded_batch(sources), sample_seeds(sampling.seed, sources, settings.nbest)))

    run.model = model  # the compiled function holds the model weakly: whoever holds the search keeps it alive
    return run
