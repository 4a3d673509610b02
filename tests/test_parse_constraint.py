"""Decoding parsing outputs within the tree constraint: every hypothesis a well-formed tree with one tag per source
word, by construction, whatever the scores; the search otherwise unchanged."""

import numpy as np
import pytest
import tensorflow as tf

from t2t_repro.data.tree_tokens import TreeTokens
from t2t_repro.decode.beam_search import beam_search
from t2t_repro.decode.tree_constraint import allowed_tokens, constrain, source_word_counts
from t2t_repro.special_tokens import EOS_ID, PAD_ID

# A target vocabulary of 10 ids: PAD, EOS, UNK, (S )S (NP )NP (VP )VP, then the tags NN and VB; a source one of 8
# whose ids 3-5 start a word and 6-7 continue one.
OPEN_S, CLOSE_S, OPEN_NP, CLOSE_NP, OPEN_VP, CLOSE_VP, NN, VB = range(3, 11)
NAMES = {OPEN_S: "(S", CLOSE_S: ")S", OPEN_NP: "(NP", CLOSE_NP: ")NP", OPEN_VP: "(VP", CLOSE_VP: ")VP", NN: "NN",
         VB: "VB"}
TOKENS = TreeTokens(target_vocab_size=11, source_vocab_size=8, openers=(OPEN_S, OPEN_NP, OPEN_VP),
                    closers=(CLOSE_S, CLOSE_NP, CLOSE_VP), slots=(NN, VB), word_starts=(3, 4, 5))


def well_formed(ids, words):
    """True when `ids` (ending in EOS) are one tree with matching brackets and exactly `words` tags."""
    stack, slots, closed_root = [], 0, False
    for token in ids[: ids.index(EOS_ID)] if EOS_ID in ids else ids:
        if closed_root:
            return False
        if token in TOKENS.openers:
            stack.append(TOKENS.closers[TOKENS.openers.index(token)])
        elif token in TOKENS.closers:
            if not stack or stack.pop() != token:
                return False
            closed_root = not stack
        elif token in TOKENS.slots and stack:
            slots += 1
        else:
            return False
    return EOS_ID in ids and closed_root and slots == words


def _random_scoring(seed):
    """Scores that depend on the last token and the step only, drawn at random: any shape of output."""
    table = tf.constant(np.random.default_rng(seed).normal(size=[64, 11]) * 3, tf.float32)

    def scoring(ids, step, states, sentences):
        last = tf.gather(ids, tf.fill([tf.shape(ids)[0]], step), batch_dims=1)
        return tf.gather(table, (last * 7 + step) % 64), states

    return scoring


def _search(inputs, beam_size, seed, extra_length=40, constrained=True):
    inputs = tf.constant(inputs, tf.int32)
    max_lengths = tf.reduce_sum(tf.cast(inputs != PAD_ID, tf.int32), axis=1) + extra_length
    scoring, sentences, normalized = _random_scoring(seed), {}, False
    if constrained:
        scoring, sentences = constrain(scoring, sentences, TOKENS, inputs, max_lengths, beam_size, normalized=False)
        normalized = True
    run = tf.function(lambda: beam_search(scoring, tf.zeros([inputs.shape[0]], tf.int32), beam_size, max_lengths, 11,
                                          0.3, normalized=normalized, sentence_states=sentences, drop_finished=True))
    ids, scores = run()
    return ids.numpy().tolist(), scores.numpy()


SOURCES = [[3, 6, 4, 5, EOS_ID, PAD_ID, PAD_ID, PAD_ID],  # 3 words in 4 pieces
           [3, EOS_ID, PAD_ID, PAD_ID, PAD_ID, PAD_ID, PAD_ID, PAD_ID],
           [4, 4, 7, 5, 3, 3, 6, EOS_ID],
           [5, 3, 4, 5, 3, 4, 5, EOS_ID]]


def test_source_words_are_the_pieces_that_start_one():
    assert source_word_counts(TOKENS, tf.constant(SOURCES)).numpy().tolist() == [3, 1, 5, 7]


@pytest.mark.parametrize("beam_size", [1, 4])
def test_every_hypothesis_is_a_tree_on_the_words_whatever_the_scores(beam_size):
    words = [3, 1, 5, 7]
    unconstrained_ok = 0
    for seed in range(3):
        ids, scores = _search(SOURCES, beam_size, seed)
        for sentence, hypotheses in enumerate(ids):
            for k, hypothesis in enumerate(hypotheses):
                assert np.isfinite(scores[sentence, k])
                assert well_formed(hypothesis, words[sentence]), [NAMES.get(t, t) for t in hypothesis]
        free, _ = _search(SOURCES, beam_size, seed, constrained=False)
        unconstrained_ok += sum(well_formed(hypotheses[0], words[i]) for i, hypotheses in enumerate(free))
    assert unconstrained_ok < 3  # the random scores seldom make a tree on their own


def test_a_tight_length_limit_still_ends_in_a_tree_and_none_leaves_the_search_free():
    ids, _ = _search(SOURCES[:1], 4, seed=0, extra_length=3)  # 8 tokens: (S, 3 tags, )S and EOS, 2 to spare
    assert all(well_formed(hypothesis, 3) for hypothesis in ids[0])
    allowed = allowed_tokens(TOKENS, tf.zeros([1, 5], tf.int32), tf.constant(0), tf.constant([3]), tf.constant([4]))
    assert allowed.numpy().all()  # no tree of 3 words fits 4 tokens: nothing is forbidden


def test_the_next_tokens_allowed_after_a_prefix():
    def allowed_after(prefix, words=2, max_length=40):
        ids = tf.constant([[PAD_ID] + prefix + [PAD_ID] * 3], tf.int32)
        mask = allowed_tokens(TOKENS, ids, tf.constant(len(prefix)), tf.constant([words]), tf.constant([max_length]))
        return {NAMES.get(token, token) for token in np.flatnonzero(mask.numpy()[0])}

    assert allowed_after([]) == {"(S", "(NP", "(VP"}
    assert allowed_after([OPEN_S]) == {"(S", "(NP", "(VP", "NN", "VB"}  # no empty constituent
    assert allowed_after([OPEN_S, OPEN_NP, NN]) == {"(S", "(NP", "(VP", "NN", "VB", ")NP"}  # the innermost's closer
    assert allowed_after([OPEN_S, OPEN_NP, NN, NN]) == {")NP"}  # every word placed: close up
    assert allowed_after([OPEN_S, OPEN_NP, NN, CLOSE_NP, VB]) == {")S"}
    assert allowed_after([OPEN_S, NN, VB, CLOSE_S]) == {EOS_ID}
    assert allowed_after([OPEN_S, NN], max_length=5) == {"NN", "VB"}  # an opener would leave no room to close
