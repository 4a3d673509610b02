"""Parsing with the words themselves in the linearised tree (ptb_sample_parsing's target_tags=words): the source's
pieces are written in order where tags would stand, one vocabulary for both sides, and the decoder forced onto
them, so that every output is a tree on the sentence's own words."""

import json
import re

import numpy as np
import pytest
import tensorflow as tf

from conftest import PTB_SAMPLE_SPLIT, run_cli_in_process, write_ptb_sample_zip
from test_parse_constraint import tree_leaves
from t2t_repro import catalog
from t2t_repro.data import ptb_tree
from t2t_repro.data.tree_tokens import TreeTokens
from t2t_repro.decode.beam_search import beam_search
from t2t_repro.decode.tree_constraint import allowed_tokens_with_words, constrain
from t2t_repro.special_tokens import EOS_ID, PAD_ID

# One vocabulary of 12 ids: PAD, EOS, UNK, (S )S (NP )NP, then pieces: 7, 8 and 9 start a word, 10 and 11 go on.
OPEN_S, CLOSE_S, OPEN_NP, CLOSE_NP = range(3, 7)
NAMES = {OPEN_S: "(S", CLOSE_S: ")S", OPEN_NP: "(NP", CLOSE_NP: ")NP"}
TOKENS = TreeTokens(target_vocab_size=12, source_vocab_size=12, openers=(OPEN_S, OPEN_NP),
                    closers=(CLOSE_S, CLOSE_NP), slots=(), word_starts=(7, 8, 9), words_in_target=True)
SOURCES = [[7, 10, 11, 8, 9, EOS_ID, PAD_ID],  # 3 words, the first in 3 pieces
           [9, EOS_ID, PAD_ID, PAD_ID, PAD_ID, PAD_ID, PAD_ID],
           [8, 8, 10, 7, 9, 9, EOS_ID]]


def tree_on(ids, source):
    """True when `ids` (ending in EOS) are one tree of matching brackets whose other tokens are `source`'s pieces."""
    return tree_leaves(ids, TOKENS) == [piece for piece in source if piece > EOS_ID]


def _search(beam_size, seed, extra_length=30):
    inputs = tf.constant(SOURCES, tf.int32)
    max_lengths = tf.reduce_sum(tf.cast(inputs != PAD_ID, tf.int32), axis=1) + extra_length
    table = tf.constant(np.random.default_rng(seed).normal(size=[64, 12]) * 3, tf.float32)

    def scoring(ids, step, states, sentences):
        last = tf.gather(ids, tf.fill([tf.shape(ids)[0]], step), batch_dims=1)
        return tf.gather(table, (last * 7 + step) % 64), states

    scoring, sentences = constrain(scoring, {}, TOKENS, inputs, max_lengths, beam_size, normalized=False)
    ids, scores = tf.function(lambda: beam_search(scoring, tf.zeros([3], tf.int32), beam_size, max_lengths, 12, 0.3,
                                                  normalized=True, sentence_states=sentences, drop_finished=True))()
    return ids.numpy().tolist(), scores.numpy()


@pytest.mark.parametrize("beam_size", [1, 4])
def test_every_hypothesis_is_a_tree_on_the_source_pieces_whatever_the_scores(beam_size):
    for seed in range(3):
        ids, scores = _search(beam_size, seed)
        for source, hypotheses, row in zip(SOURCES, ids, scores):
            assert np.isfinite(row).all()
            for hypothesis in hypotheses:
                assert tree_on(hypothesis, source), [NAMES.get(token, token) for token in hypothesis]


def test_a_word_once_begun_is_written_to_its_end():
    def allowed_after(prefix, source=SOURCES[0], max_length=40):
        ids = tf.constant([[PAD_ID] + prefix + [PAD_ID] * 3], tf.int32)
        mask = allowed_tokens_with_words(TOKENS, ids, tf.constant(len(prefix)), tf.constant([source], tf.int32),
                                         tf.constant([max_length]))
        return {NAMES.get(token, token) for token in np.flatnonzero(mask.numpy()[0])}

    assert allowed_after([]) == {"(S", "(NP"}
    assert allowed_after([OPEN_S]) == {"(S", "(NP", 7}  # the first word's first piece, or a bracket
    assert allowed_after([OPEN_S, 7]) == {10} and allowed_after([OPEN_S, 7, 10]) == {11}  # no bracket inside a word
    assert allowed_after([OPEN_S, 7, 10, 11]) == {"(S", "(NP", 8}  # the root closes only after the last word
    assert allowed_after([OPEN_S, OPEN_NP, 7, 10, 11]) == {"(S", "(NP", 8, ")NP"}
    assert allowed_after([OPEN_S, 7, 10, 11, 8, 9]) == {")S"}
    assert allowed_after([OPEN_S, 7, 10, 11, 8, 9, CLOSE_S]) == {EOS_ID}
    assert allowed_after([OPEN_S, 7, 10], max_length=8) == {11}


def test_words_linearised_read_back_onto_the_words_with_tags_from_their_forms():
    tree = ptb_tree.parse_tree("(S (NP (NNP John)) (VP (VBZ has) (NP (DT a) (NN dog))) (. .))")
    tokens = ptb_tree.linearise(tree, words=True)
    assert " ".join(tokens) == "(S (NP John )NP (VP has (NP a dog )NP )VP . )S"
    back = ptb_tree.delinearise(tokens, tree.words(), leaf_words=True)
    assert back.to_ptb() == "(S (NP (XX John)) (VP (XX has) (NP (XX a) (XX dog))) (. .))"


def test_words_in_the_tree_share_one_vocabulary_and_are_the_sources_own_pieces(tmp_path):
    problem = catalog.get_problem("ptb_sample_parsing", PTB_SAMPLE_SPLIT + ",target_tags=words")
    assert problem.shared_vocabulary and problem.words_in_target
    assert all(symbol[1] in "()" for symbol in problem.vocab_user_symbols())  # no tag cuts a word ("INC.")
    problem.generate_data(tmp_path / "data", None, write_ptb_sample_zip(tmp_path / "sample"))
    vocabulary = problem.vocabularies(tmp_path / "data").target
    symbols = set(problem.vocab_user_symbols())
    brackets = {i for i in range(vocabulary.vocab_size) if vocabulary.id_to_piece(i) in symbols}
    for source, target in problem.text_pairs("dev", tmp_path / "data"):
        assert [i for i in vocabulary.encode(target) if i not in brackets] == vocabulary.encode(source)
        assert problem.evaluate([target], [target], [source])["f1"] == 100.0


def test_trainer_with_words_in_the_tree_scores_every_test_sentence(tmp_path):
    sample = write_ptb_sample_zip(tmp_path / "sample")
    result = run_cli_in_process(
        "trainer", "--problem=ptb_sample_parsing", f"--problem_overrides={PTB_SAMPLE_SPLIT},target_tags=words",
        "--hparams=transformer_tiny", "--hparams_overrides=max_length=96,num_layers=1,d_model=32,d_ff=64,num_heads=2,"
        "d_k=16,d_v=16", "--batch_tokens=256", "--train_steps=20", "--eval_decode_sentences=0", "--skip_average",
        "--skip_export", f"--manual_dir={sample}", f"--data_dir={tmp_path / 'data'}", f"--output_dir={tmp_path / 'out'}")
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["test_sentences"] == report["valid_sentences"] == 6 and report["error_sentences"] == 0
    problem = catalog.get_problem("ptb_sample_parsing", PTB_SAMPLE_SPLIT + ",target_tags=words")
    gold = [source.split() for source, _ in problem.text_pairs("test", tmp_path / "data")]
    decoded = (tmp_path / "out" / "test_decoded.txt").read_text().splitlines()
    assert [ptb_tree.parse_tree(line).words() for line in decoded] == gold


@pytest.mark.parametrize("size, message", [
    (40, r"source_vocab_size=40 is too small"),
    (9000, r"source_vocab_size=9000 cannot be reached: .* set source_vocab_size=\d+ or less"),
])
def test_the_one_vocabulary_is_sized_by_source_vocab_size_and_refused_by_that_name(tmp_path, size, message):
    sample = write_ptb_sample_zip(tmp_path / "sample")
    overrides = PTB_SAMPLE_SPLIT.replace("source_vocab_size=400", f"source_vocab_size={size}")
    result = run_cli_in_process("datagen", "--problem=ptb_sample_parsing", f"--problem_overrides={overrides}",
                                f"--manual_dir={sample}", f"--data_dir={tmp_path / 'data'}")
    assert result.returncode == 2 and re.search(message, result.stderr.strip().splitlines()[-1]), result.stderr
    assert not (tmp_path / "data" / "ptb_sample_parsing").exists()
