"""Beam search: the cache against full recomputation, exhaustive optimality, the length penalty, batch
independence, n-best order, greedy decoding and early termination."""

import functools
import itertools
import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_repro.decode.beam_search import beam_search, length_penalty, search
from t2t_repro.model import Transformer
from t2t_repro.special_tokens import EOS_ID, PAD_ID

TINY = dict(num_layers=1, d_model=16, d_ff=32, num_heads=4, d_k=4, d_v=4, dropout=0.0)


@functools.lru_cache(maxsize=None)
def tiny_model(vocab_size, seed=1, eos_bias=0.0):
    """A random tiny Transformer, shared between tests and never modified by them.

    `eos_bias` is added to the EOS logit (in the cached, uncached and teacher-forced paths alike) so that
    hypotheses end before the maximum length. Most tests run `search` eagerly: for models this small that is
    faster than tracing; the compiled path is what the cache and batch tests check."""
    keras.utils.set_random_seed(seed)
    model = Transformer(vocab_size, **TINY)
    one = tf.ones([1, 1], tf.int32)
    model({"inputs": one, "targets": one})
    if eos_bias:
        project = model.output_projection.project
        bias = tf.one_hot(EOS_ID, vocab_size) * eos_bias
        model.output_projection.project = lambda x: project(x) + bias
    return model


def sequence_scores(model, source, sequences, alpha):
    """log P(sequence | source) / length_penalty(|sequence|) by teacher forcing, PAD excluded as in the search."""
    scores = []
    memory, memory_bias = model.encode(tf.constant([source], tf.int32))
    for sequence in sequences:
        decoder_inputs = tf.constant([[PAD_ID] + list(sequence[:-1])], tf.int32)
        logits = model.decode(decoder_inputs, memory, memory_bias)[0].numpy().astype(np.float64)
        logits[:, PAD_ID] = -np.inf
        peak = logits.max(-1, keepdims=True)
        log_probs = logits - peak - np.log(np.exp(logits - peak).sum(-1, keepdims=True))
        total = sum(log_probs[i, token] for i, token in enumerate(sequence))
        scores.append(total / length_penalty(len(sequence), alpha))
    return np.array(scores)


def strip(ids):
    """A hypothesis without its PAD tail, as a tuple."""
    return tuple(int(t) for t in ids if t != PAD_ID)


def test_length_penalty_matches_hand_computation():
    assert length_penalty(1, 0.6) == pytest.approx(1.0)
    assert length_penalty(7, 0.6) == pytest.approx(2.0**0.6)  # (5 + 7) / 6 = 2
    assert length_penalty(13, 0.6) == pytest.approx(3.0**0.6)
    assert length_penalty(25, 1.0) == pytest.approx(5.0)
    assert length_penalty(40, 0.0) == pytest.approx(1.0)
    np.testing.assert_allclose(length_penalty(tf.constant([1, 7, 13]), 0.6).numpy(), [1.0, 2**0.6, 3**0.6], rtol=1e-6)


def test_cached_and_uncached_give_identical_hypotheses_and_scores():
    model = tiny_model(12, eos_bias=1.0)
    inputs = tf.constant([[4, 5, 6, 1, 0], [7, 3, 9, 10, 1], [8, 1, 0, 0, 0]])
    cached_ids, cached_scores = beam_search(model, inputs, beam_size=4, alpha=0.6, extra_length=4, nbest=4)
    full_ids, full_scores = beam_search(
        model, inputs, beam_size=4, alpha=0.6, extra_length=4, nbest=4, use_cache=False
    )
    np.testing.assert_array_equal(cached_ids.numpy(), full_ids.numpy())
    np.testing.assert_allclose(cached_scores.numpy(), full_scores.numpy(), rtol=1e-5)
    assert np.any(cached_ids.numpy() == EOS_ID), "the test should cover hypotheses that end with EOS"


@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_wide_beam_returns_the_exhaustive_best(alpha):
    # Vocabulary of 5 (PAD, EOS, 2, 3, 4): at most 3 tokens, so 1 + 3 + 9 ended sequences and 27 cut at the
    # maximum length. A beam of 9 never drops an alive prefix, so its n-best must be the exhaustive n-best.
    model = tiny_model(5, seed=3, eos_bias=1.5)
    source = [3, EOS_ID]
    max_length = len(source) + 1
    words = (2, 3, 4)
    sequences = [p + (EOS_ID,) for n in range(max_length) for p in itertools.product(words, repeat=n)]
    sequences += list(itertools.product(words, repeat=max_length))
    exhaustive = sequence_scores(model, source, sequences, alpha)
    order = np.argsort(-exhaustive, kind="stable")

    ids, scores = search(model, tf.constant([source]), beam_size=9, alpha=alpha, extra_length=1, nbest=9)
    found = [strip(row) for row in ids.numpy()[0]]
    assert found == [sequences[i] for i in order[:9]]
    np.testing.assert_allclose(scores.numpy()[0], exhaustive[order[:9]], rtol=1e-5)


def test_scores_are_length_normalized_log_probabilities():
    model = tiny_model(12, eos_bias=1.0)
    source = [4, 5, 6, 1]
    ids, scores = search(model, tf.constant([source]), beam_size=3, alpha=0.6, extra_length=4, nbest=3)
    hypotheses = [strip(row) for row in ids.numpy()[0]]
    np.testing.assert_allclose(scores.numpy()[0], sequence_scores(model, source, hypotheses, 0.6), rtol=1e-5)


def test_sentence_result_does_not_depend_on_its_batch():
    model = tiny_model(12, eos_bias=1.0)
    alone = tf.constant([[4, 5, 1]])
    batch = tf.constant([[7, 3, 9, 10, 8, 6, 1], [4, 5, 1, 0, 0, 0, 0], [9, 9, 8, 7, 6, 5, 1]])
    settings = dict(beam_size=4, alpha=0.6, extra_length=3, nbest=4)
    alone_ids, alone_scores = beam_search(model, alone, **settings)
    batch_ids, batch_scores = beam_search(model, batch, **settings)
    assert [strip(r) for r in alone_ids.numpy()[0]] == [strip(r) for r in batch_ids.numpy()[1]]
    np.testing.assert_allclose(alone_scores.numpy()[0], batch_scores.numpy()[1], rtol=1e-5)


def test_maximum_length_is_input_length_plus_extra_per_sentence():
    model = tiny_model(12)
    inputs = tf.constant([[4, 1, 0, 0, 0, 0], [4, 5, 6, 7, 8, 1]])
    # eos_id=-1: nothing ends early, so every hypothesis runs to its sentence's own maximum.
    ids, _ = search(model, inputs, beam_size=2, alpha=0.6, extra_length=3, nbest=2, eos_id=-1)
    lengths = (ids.numpy() != PAD_ID).sum(-1)
    np.testing.assert_array_equal(lengths, [[5, 5], [9, 9]])


def test_nbest_is_ordered_distinct_and_led_by_the_1best():
    model = tiny_model(12, eos_bias=1.0)
    inputs = tf.constant([[4, 5, 6, 1], [8, 9, 1, 0]])
    ids, scores = search(model, inputs, beam_size=5, alpha=0.6, extra_length=4, nbest=5)
    best_ids, best_scores = search(model, inputs, beam_size=5, alpha=0.6, extra_length=4, nbest=1)
    for sentence in range(2):
        row_scores = scores.numpy()[sentence]
        assert np.all(np.diff(row_scores) <= 0)
        hypotheses = [strip(r) for r in ids.numpy()[sentence]]
        assert len(set(hypotheses)) == 5
        assert hypotheses[0] == strip(best_ids.numpy()[sentence, 0])
        assert row_scores[0] == pytest.approx(best_scores.numpy()[sentence, 0])


def test_beam_one_is_greedy_decoding():
    model = tiny_model(12, eos_bias=1.0)
    source = [4, 5, 6, 1]
    memory, memory_bias = model.encode(tf.constant([source]))
    greedy = [PAD_ID]
    while len(greedy) <= len(source) + 6 and greedy[-1] != EOS_ID:
        logits = model.decode(tf.constant([greedy]), memory, memory_bias)[0, -1].numpy()
        logits[PAD_ID] = -np.inf
        greedy.append(int(np.argmax(logits)))
    ids, _ = search(model, tf.constant([source]), beam_size=1, alpha=0.6, extra_length=6)
    assert strip(ids.numpy()[0, 0]) == tuple(greedy[1:])


def test_search_stops_early_once_nothing_can_beat_the_finished():
    model = tiny_model(12, eos_bias=6.0)  # EOS all but certain at every step
    # alpha=0: an alive hypothesis can only lose probability, so it is out once below the 4th finished.
    ids, scores = search(model, tf.constant([[4, 5, 6, 1]]), beam_size=4, alpha=0.0, extra_length=50)
    assert strip(ids.numpy()[0, 0])[-1] == EOS_ID
    assert ids.shape[-1] < 10, "the loop ran on although no alive hypothesis could win"
    assert math.isfinite(scores.numpy()[0, 0])


def test_bad_settings_are_refused():
    model = tiny_model(12)
    with pytest.raises(ValueError, match="nbest"):
        search(model, tf.constant([[4, 1]]), beam_size=2, alpha=0.6, extra_length=3, nbest=3)
    with pytest.raises(ValueError, match="beam_size"):
        search(model, tf.constant([[4, 1]]), beam_size=0, alpha=0.6, extra_length=3)
