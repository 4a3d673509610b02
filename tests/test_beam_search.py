"""Beam search: its logic on a hand-made table of log-probabilities (exhaustive optimality, length penalty, EOS,
length limit and how cut hypotheses rank, early stop, n-best order, greedy decoding, batch independence, the
state following the beams), the two-stage top-k against tf.math.top_k, then on a real tiny Transformer (the
cache against recomputation, the maximum lengths, the ranking of cut hypotheses through DecodeSettings)."""

import itertools
import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_repro.decode.beam_search import beam_search, length_penalty
from t2t_repro.decode.top_k import chunk_length, top_k
from t2t_repro.decode.transformer_search import beam_decode, compiled_search
from t2t_repro.decode_settings import DecodeSettings
from t2t_repro.hparams_type import HParams
from t2t_repro.model import build_transformer
from t2t_repro.special_tokens import EOS_ID, PAD_ID


def table(sentences, vocab_size, seed=1, eos_bias=0.0):
    """log P(next token | sentence, previous token) [sentences, vocab, vocab], PAD impossible, EOS favoured by
    `eos_bias`."""
    logits = np.random.default_rng(seed).normal(size=[sentences, vocab_size, vocab_size])
    logits[..., EOS_ID] += eos_bias
    logits[..., PAD_ID] = -np.inf
    return logits - np.log(np.exp(logits).sum(-1, keepdims=True))


def table_scorer(log_probs):
    """A scoring function reading `log_probs` [sentences, vocab, vocab] (a float32 tensor).

    The state carries each row's sentence and the ids the row was given so far: a search that did not reorder
    the state along the beams it keeps would fail the check."""

    def symbols_to_logits_fn(ids, step, state):
        tf.debugging.assert_equal(state["seen"], ids[:, :step], message="the state did not follow its beam")
        next_log_probs = tf.gather_nd(log_probs, tf.stack([state["row"], ids[:, step]], 1))
        return next_log_probs, {"row": state["row"], "seen": ids[:, : step + 1]}

    return symbols_to_logits_fn


def sentence_table_scorer(log_probs, beam_size):
    """`table_scorer`, but each row's sentence read from the sentence state (one entry per sentence): a search
    that dropped sentences from its state but not from the sentence state would read other sentences' rows."""
    scorer = table_scorer(log_probs)

    def symbols_to_logits_fn(ids, step, state, sentences):
        tf.debugging.assert_equal(tf.repeat(sentences["sentence"], beam_size), state["row"])
        return scorer(ids, step, state)

    return symbols_to_logits_fn


@tf.function
def _search(log_probs, beam_size, max_lengths, alpha, eos_id=EOS_ID, unfinished_compete=False, drop_finished=False):
    rows = tf.repeat(tf.range(len(log_probs)), beam_size)
    state = {"row": rows, "seen": tf.zeros([len(log_probs) * beam_size, 0], tf.int32)}
    scorer, sentences = table_scorer(log_probs), None
    if drop_finished:
        scorer, sentences = sentence_table_scorer(log_probs, beam_size), {"sentence": tf.range(len(log_probs))}
    return beam_search(scorer, tf.fill([len(log_probs)], PAD_ID), beam_size, max_lengths, log_probs.shape[-1],
                       alpha, states=state, eos_id=eos_id, unfinished_compete=unfinished_compete,
                       sentence_states=sentences, drop_finished=drop_finished)


def search(log_probs, beam_size, max_lengths, alpha, eos_id=EOS_ID, unfinished_compete=False, drop_finished=False):
    """The table's hypotheses [sentences, beam_size, length] and scores, as numpy arrays."""
    ids, scores = _search(tf.constant(log_probs, tf.float32), beam_size, tf.constant(max_lengths, tf.int32), alpha,
                          eos_id, unfinished_compete, drop_finished)
    return ids.numpy(), scores.numpy()


def reference_scores(log_probs, sentence, sequences, alpha):
    """log P(sequence) / length_penalty(|sequence|) for each sequence, by reading the table."""
    scores = []
    for sequence in sequences:
        previous = [PAD_ID] + list(sequence[:-1])
        total = sum(log_probs[sentence, a, b] for a, b in zip(previous, sequence))
        scores.append(total / length_penalty(len(sequence), alpha))
    return np.array(scores)


def strip(ids):
    """A hypothesis without its PAD tail, as a tuple."""
    return tuple(int(t) for t in ids if t != PAD_ID)


def rank_keys(hypotheses, scores, unfinished_compete):
    """The key each hypothesis is ranked by, best first when ascending: by default (tensor2tensor's) every one
    that ended with EOS comes before every one cut at the maximum length, then the higher score."""
    return [(0 if unfinished_compete or h[-1] == EOS_ID else 1, -score) for h, score in zip(hypotheses, scores)]


def test_length_penalty_matches_hand_computation():
    assert length_penalty(1, 0.6) == pytest.approx(1.0)
    assert length_penalty(7, 0.6) == pytest.approx(2.0**0.6)  # (5 + 7) / 6 = 2
    assert length_penalty(13, 0.6) == pytest.approx(3.0**0.6)
    assert length_penalty(25, 1.0) == pytest.approx(5.0)
    assert length_penalty(40, 0.0) == pytest.approx(1.0)
    np.testing.assert_allclose(length_penalty(tf.constant([1, 7, 13]), 0.6).numpy(), [1.0, 2**0.6, 3**0.6], rtol=1e-6)


@pytest.mark.parametrize("unfinished_compete", [False, True])
@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_wide_beam_returns_the_exhaustive_best(alpha, unfinished_compete):
    # Vocabulary of 5 (PAD, EOS, 2, 3, 4), at most 3 tokens: 1 + 3 + 9 sequences end with EOS and 27 are cut
    # at the maximum length. A beam of 9 never drops an alive prefix, so its 9 must be the exhaustive 9 best.
    log_probs = table(1, 5, seed=3, eos_bias=1.5)
    max_length = 3
    words = (2, 3, 4)
    sequences = [p + (EOS_ID,) for n in range(max_length) for p in itertools.product(words, repeat=n)]
    sequences += list(itertools.product(words, repeat=max_length))
    exhaustive = reference_scores(log_probs, 0, sequences, alpha)
    keys = rank_keys(sequences, exhaustive, unfinished_compete)
    order = sorted(range(len(sequences)), key=keys.__getitem__)

    ids, scores = search(log_probs, 9, [max_length], alpha, unfinished_compete=unfinished_compete)
    assert [strip(row) for row in ids[0]] == [sequences[i] for i in order[:9]]
    np.testing.assert_allclose(scores[0], exhaustive[order[:9]], rtol=1e-5)


@pytest.mark.parametrize("unfinished_compete", [False, True])
def test_nbest_is_ordered_distinct_scored_and_ends_at_eos(unfinished_compete):
    log_probs = table(2, 8, eos_bias=1.0)
    ids, scores = search(log_probs, 5, [6, 4], 0.6, unfinished_compete=unfinished_compete)
    for sentence, max_length in enumerate([6, 4]):
        hypotheses = [strip(row) for row in ids[sentence]]
        keys = rank_keys(hypotheses, scores[sentence], unfinished_compete)
        assert keys == sorted(keys)
        assert len(set(hypotheses)) == 5
        for hypothesis in hypotheses:  # EOS only at the end; no EOS only when cut at the maximum length
            assert EOS_ID not in hypothesis[:-1]
            assert hypothesis[-1] == EOS_ID or len(hypothesis) == max_length
        reference = reference_scores(log_probs, sentence, hypotheses, 0.6)
        np.testing.assert_allclose(scores[sentence], reference, rtol=1e-5)
    assert np.any(ids == EOS_ID), "the test should cover hypotheses that end with EOS"


# log P(next | previous) over PAD, EOS and the words 2 and 3, for at most two tokens: the likeliest sequence is
# "2 2" (0.72), cut at the maximum length; the likeliest that ends with EOS is "2 EOS" (0.108).
CUT_BEATS_EOS = np.log(np.array([[1e-30, 0.05, 0.9, 0.05], [1e-30, 0.3, 0.4, 0.3], [1e-30, 0.12, 0.8, 0.08],
                                 [1e-30, 0.1, 0.1, 0.8]]))[np.newaxis]


@pytest.mark.parametrize("unfinished_compete, expected", [
    # Default (tensor2tensor): hypotheses that ended with EOS first, the best cut one in the slot left.
    (False, [(2, EOS_ID), (EOS_ID,), (3, EOS_ID), (2, 2)]),
    # The option: ranked by score alone, so the likely cut "2 2" beats "2 EOS".
    (True, [(2, 2), (2, EOS_ID), (2, 3), (EOS_ID,)]),
])
def test_a_cut_hypothesis_beats_one_that_ended_with_eos_only_with_the_option(unfinished_compete, expected):
    ids, scores = search(CUT_BEATS_EOS, 4, [2], 0.0, unfinished_compete=unfinished_compete)
    hypotheses = [strip(row) for row in ids[0]]
    assert hypotheses == expected
    np.testing.assert_allclose(scores[0], reference_scores(CUT_BEATS_EOS, 0, hypotheses, 0.0), rtol=1e-5)
    best, _ = search(CUT_BEATS_EOS, 1, [2], 0.0, unfinished_compete=unfinished_compete)  # greedy: "2 2"
    assert strip(best[0, 0]) == (2, 2)


def test_with_no_hypothesis_ending_with_eos_the_cut_ones_are_returned_in_both_modes():
    no_eos = CUT_BEATS_EOS.copy()
    no_eos[..., EOS_ID] = -np.inf
    default_ids, default_scores = search(no_eos, 2, [2], 0.6)
    compete_ids, compete_scores = search(no_eos, 2, [2], 0.6, unfinished_compete=True)
    assert [strip(row) for row in default_ids[0]] == [(2, 2), (2, 3)]
    np.testing.assert_array_equal(default_ids, compete_ids)
    np.testing.assert_allclose(default_scores, compete_scores)
    assert np.all(np.isfinite(default_scores))


def test_maximum_length_is_per_sentence():
    # eos_id=-1: nothing ends early, so every hypothesis runs to its sentence's own maximum.
    ids, _ = search(table(2, 8), 2, [2, 5], 0.6, eos_id=-1)
    np.testing.assert_array_equal((ids != PAD_ID).sum(-1), [[2, 2], [5, 5]])


def test_beam_one_is_greedy_decoding():
    log_probs = table(1, 8, eos_bias=0.5)
    greedy = [PAD_ID]
    while len(greedy) <= 7 and greedy[-1] != EOS_ID:
        greedy.append(int(np.argmax(log_probs[0, greedy[-1]])))
    ids, _ = search(log_probs, 1, [7], 0.6)
    assert ids.shape[1] == 1 and strip(ids[0, 0]) == tuple(greedy[1:])


def test_search_stops_early_once_nothing_can_beat_the_finished():
    log_probs = table(1, 8, eos_bias=6.0)  # EOS all but certain at every step
    # alpha=0: an alive hypothesis can only lose probability, so it is out once below the 4th finished.
    ids, scores = search(log_probs, 4, [50], 0.0)
    assert strip(ids[0, 0])[-1] == EOS_ID
    assert ids.shape[-1] < 10, "the loop ran on although no alive hypothesis could win"
    assert math.isfinite(scores[0, 0])


def test_sentence_result_does_not_depend_on_its_batch():
    log_probs = table(3, 8, eos_bias=1.0)
    alone_ids, alone_scores = search(log_probs[1:2], 4, [5], 0.6)
    batch_ids, batch_scores = search(log_probs, 4, [9, 5, 2], 0.6)
    assert [strip(r) for r in alone_ids[0]] == [strip(r) for r in batch_ids[1]]
    np.testing.assert_allclose(alone_scores[0], batch_scores[1], rtol=1e-6)


@pytest.mark.parametrize("unfinished_compete", [False, True])
@pytest.mark.parametrize("beam_size", [1, 4])
def test_dropping_finished_sentences_changes_no_hypothesis_nor_score(beam_size, unfinished_compete):
    # Sentences that end at different steps: by EOS, by their maximum length, one at its first step.
    log_probs = table(6, 8, seed=3, eos_bias=-1.0)
    max_lengths = [9, 3, 12, 1, 6, 12]
    kept = search(log_probs, beam_size, max_lengths, 0.6, unfinished_compete=unfinished_compete)
    dropped = search(log_probs, beam_size, max_lengths, 0.6, unfinished_compete=unfinished_compete,
                     drop_finished=True)
    np.testing.assert_array_equal(dropped[0], kept[0])
    # The log-softmax over fewer rows may round otherwise in the last bit.
    np.testing.assert_allclose(dropped[1], kept[1], rtol=1e-6)
    lengths = (kept[0][:, 0] != PAD_ID).sum(-1)
    assert len(set(lengths)) > 2, "the test should cover sentences that end at different steps"


@pytest.mark.parametrize("k", [1, 2, 8])
def test_two_stage_top_k_gives_tf_top_k_values_and_indices_ties_included(k):
    row_length = 4 * 3000  # the candidates of 4 beams over a 3,000-token vocabulary
    assert chunk_length(row_length, k) is not None, "the test should cover the two-stage path"
    rng = np.random.default_rng(k)
    # 40 distinct values, so the best ones tie many times over; impossible beams are -inf.
    few_values = rng.integers(0, 40, size=[5, row_length]).astype(np.float32)
    few_values[1, : row_length // 2] = -np.inf
    few_values[2] = -np.inf
    # A tie between a chunk ranked second (maximum 3) and one ranked first (maximum 9) but later in the row.
    chunk = chunk_length(row_length, k)
    few_values[3] = -np.inf
    few_values[3, [0, chunk, chunk + 1]] = [3, 9, 3]
    bfloat16_rounded = tf.cast(tf.cast(rng.normal(size=[3, row_length]), tf.bfloat16), tf.float32).numpy()
    for values in (few_values, bfloat16_rounded):
        expected_values, expected_indices = tf.math.top_k(values, k=k)
        got_values, got_indices = tf.function(lambda x: top_k(x, k))(tf.constant(values))
        np.testing.assert_array_equal(got_values.numpy(), expected_values.numpy())
        np.testing.assert_array_equal(got_indices.numpy(), expected_indices.numpy())


def test_two_stage_top_k_is_left_out_where_it_gains_nothing():
    assert chunk_length(4 * 3000, 8) is not None
    assert chunk_length(1000, 8) is None  # short rows
    assert chunk_length(2 * 8191, 8) is None  # twice a prime: no chunk length between 2 and 8191
    assert chunk_length(None, 8) is None  # unknown when tracing
    values = np.random.default_rng(0).normal(size=[2, 2 * 8191]).astype(np.float32)
    np.testing.assert_array_equal(top_k(tf.constant(values), 8)[1].numpy(), tf.math.top_k(values, k=8)[1].numpy())


def test_beam_search_over_a_large_vocabulary_picks_as_one_top_k_would(monkeypatch):
    log_probs = table(2, 2048, eos_bias=2.0)  # 4 beams x 2,048 tokens: the two-stage top-k
    assert chunk_length(4 * 2048, 8) is not None
    arguments = (tf.constant(log_probs, tf.float32), 4, tf.constant([6, 4]), 0.6)
    two_stage = tf.function(_search.python_function)(*arguments)
    monkeypatch.setattr("t2t_repro.decode.beam_search.top_k", lambda values, k: tf.math.top_k(values, k=k))
    one_top_k = tf.function(_search.python_function)(*arguments)
    np.testing.assert_array_equal(two_stage[0].numpy(), one_top_k[0].numpy())
    np.testing.assert_array_equal(two_stage[1].numpy(), one_top_k[1].numpy())


def tiny_model(seed=1, vocab_size=12, **overrides):
    keras.utils.set_random_seed(seed)
    hparams = HParams(num_layers=1, d_model=16, d_ff=32, num_heads=4, d_k=4, d_v=4, dropout=0.0, **overrides)
    return build_transformer(hparams, vocab_size)


@pytest.mark.parametrize("other", [{"use_cache": False}, {"jit_compile": True}, {"drop_finished": False}])
def test_uncached_and_xla_compiled_searches_give_the_hypotheses_and_scores_of_the_default_one(other):
    # The default search's cache grows a position a step and drops finished sentences; XLA's is preallocated,
    # the unwritten positions masked, and keeps every sentence.
    model = tiny_model(seed=4)  # whose 4-best lists hold hypotheses that end with EOS
    inputs = tf.constant([[4, 5, 6, 1, 0], [7, 3, 9, 10, 1], [8, 1, 0, 0, 0]])
    settings = DecodeSettings(beam_size=4, alpha=0.6, extra_length=4, nbest=4)
    cached_ids, cached_scores = beam_decode(model, inputs, settings)
    other_ids, other_scores = beam_decode(model, inputs, settings, **other)
    np.testing.assert_array_equal(cached_ids.numpy(), other_ids.numpy())
    np.testing.assert_allclose(cached_scores.numpy(), other_scores.numpy(), rtol=1e-5)
    assert np.any(cached_ids.numpy() == EOS_ID), "the test should cover hypotheses that end with EOS"
    assert compiled_search(model, settings) is not compiled_search(model, settings, **other)


@pytest.mark.parametrize(
    "overrides, lengths",
    [({}, [5, 9]), ({"position_encoding": "learned", "max_position": 6, "max_length": 6}, [5, 6])],
)
def test_transformer_outputs_are_at_most_input_length_plus_extra_and_max_position(overrides, lengths):
    # eos_id=-1: nothing ends early; real input lengths 2 and 6, extra length 3.
    model = tiny_model(**overrides)
    inputs = tf.constant([[4, 1, 0, 0, 0, 0], [4, 5, 6, 7, 8, 1]])
    ids, _ = beam_decode(model, inputs, DecodeSettings(beam_size=2, extra_length=3, nbest=2), eos_id=-1)
    np.testing.assert_array_equal((ids.numpy() != PAD_ID).sum(-1), [[length] * 2 for length in lengths])


def test_transformer_search_ranks_cut_hypotheses_as_its_settings_say():
    model = tiny_model(seed=4)
    inputs = tf.constant([[4, 5, 6, 1, 0], [7, 3, 9, 10, 1], [8, 1, 0, 0, 0], [2, 2, 1, 0, 0]])
    settings = DecodeSettings(beam_size=4, alpha=0.6, extra_length=1, nbest=4)
    results = {}
    for compete in (False, True):
        ids, scores = beam_decode(model, inputs, settings.override(unfinished_compete=compete))
        results[compete] = [[strip(row) for row in sentence] for sentence in ids.numpy()]
        for hypotheses, sentence_scores in zip(results[compete], scores.numpy()):
            keys = rank_keys(hypotheses, sentence_scores, compete)
            assert keys == sorted(keys)
    differ = [default[0][-1] == EOS_ID and compete[0][-1] != EOS_ID for default, compete in zip(*results.values())]
    assert any(differ), "the test should cover a sentence whose best cut hypothesis beats those that ended with EOS"


def test_compiled_searches_are_kept_per_model_and_search_settings():
    model = tiny_model()
    settings = DecodeSettings(beam_size=2, nbest=2)
    assert compiled_search(model, settings) is not compiled_search(model, settings.override(unfinished_compete=True))
    assert compiled_search(model, settings) is compiled_search(model, settings.override(max_input_length=8))
    assert compiled_search(model, settings) is not compiled_search(model, settings.override(alpha=0.0))
    assert compiled_search(model, settings) is not compiled_search(model, settings, use_cache=False)

