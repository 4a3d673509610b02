"""Decoding parsing outputs within the tree constraint: every hypothesis a well-formed tree with one tag per source
word, by construction, whatever the scores; the search otherwise unchanged."""

import json

import numpy as np
import pytest
import tensorflow as tf

from t2t_repro.data.ptb_tree import PUNCTUATION_TAGS
from t2t_repro.data.tree_tokens import TreeTokens
from t2t_repro.decode.beam_search import beam_search
from t2t_repro.decode.tree_constraint import allowed_tokens, constrain, source_word_counts, source_word_tags
from t2t_repro.special_tokens import EOS_ID, PAD_ID

# A target vocabulary of 10 ids: PAD, EOS, UNK, (S )S (NP )NP (VP )VP, then the tags NN and VB; a source one of 8
# whose ids 3-5 start a word and 6-7 continue one.
OPEN_S, CLOSE_S, OPEN_NP, CLOSE_NP, OPEN_VP, CLOSE_VP, NN, VB = range(3, 11)
NAMES = {OPEN_S: "(S", CLOSE_S: ")S", OPEN_NP: "(NP", CLOSE_NP: ")NP", OPEN_VP: "(VP", CLOSE_VP: ")VP", NN: "NN",
         VB: "VB"}
TOKENS = TreeTokens(target_vocab_size=11, source_vocab_size=8, openers=(OPEN_S, OPEN_NP, OPEN_VP),
                    closers=(CLOSE_S, CLOSE_NP, CLOSE_VP), slots=(NN, VB), word_starts=(3, 4, 5))


def tree_leaves(ids, tokens=TOKENS):
    """The tokens between the brackets of `ids` (ending in EOS) when they are one tree of matching brackets (a token
    outside the root is not a tree), else None."""
    stack, leaves, closed_root = [], [], False
    for token in ids[: ids.index(EOS_ID)] if EOS_ID in ids else ids:
        if closed_root:
            return None
        if token in tokens.openers:
            stack.append(tokens.closers[tokens.openers.index(token)])
        elif token in tokens.closers:
            if not stack or stack.pop() != token:
                return None
            closed_root = not stack
        elif stack:
            leaves.append(token)
        else:
            return None
    return leaves if EOS_ID in ids and closed_root else None


def well_formed(ids, words):
    """True when `ids` (ending in EOS) are one tree with matching brackets and exactly `words` tags."""
    leaves = tree_leaves(ids)
    return leaves is not None and len(leaves) == words and all(leaf in TOKENS.slots for leaf in leaves)


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
    for seed in range(2):
        ids, scores = _search(SOURCES, beam_size, seed)
        for sentence, hypotheses in enumerate(ids):
            for k, hypothesis in enumerate(hypotheses):
                assert np.isfinite(scores[sentence, k])
                assert well_formed(hypothesis, words[sentence]), [NAMES.get(t, t) for t in hypothesis]
        free, _ = _search(SOURCES, beam_size, seed, constrained=False)
        unconstrained_ok += sum(well_formed(hypotheses[0], words[i]) for i, hypotheses in enumerate(free))
    assert unconstrained_ok < 4  # the random scores seldom make a tree on their own


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


# A tiny trained parser (`parsing_run`): the constraint on its real outputs, its search and its export.

SENTENCES = ["Mary sees the dog .", "The plan wanted to go .", "`` We gave up in Kim , '' Kim 's .",
             # Longer than any training sentence: the model alone emits the templates' trees, too few tags.
             "Mary sees the dog and the plan and the river .", "The plan wanted to go to Paris with Ruth today ."]


def tags_fit_words(text, sentence):
    """True when the tags of linearised `text` fit `sentence`'s words as the constraint keeps them for SENTENCES'
    one-piece punctuation words: a punctuation word tagged as itself (`PUNCTUATION_TAGS`), no other word given a
    tag EVALB deletes."""
    tags = [token for token in text.split() if token[0] not in "()"]
    punctuation = set(PUNCTUATION_TAGS.values())
    return all(tag == PUNCTUATION_TAGS[word] if word in PUNCTUATION_TAGS else tag not in punctuation
               for tag, word in zip(tags, sentence.split()))


def is_tree_on(text, words):
    """True when linearised `text` is one tree of matching brackets with exactly `words` tags."""
    stack, slots, ended = [], 0, False
    for token in text.split():
        if ended:
            return False
        if token[0] == "(":
            stack.append(token[1:])
        elif token[0] == ")":
            if not stack or stack.pop() != token[1:]:
                return False
            ended = not stack
        elif stack:
            slots += 1
        else:
            return False
    return ended and slots == words


@pytest.fixture(scope="module")
def parser(parsing_run):
    from t2t_repro.run.restore import restore_run

    run = restore_run(str(parsing_run))
    return run, run.problem.output_constraint(run.vocabularies)


@pytest.mark.parametrize("beam_size", [1, 4])
def test_trained_parser_outputs_trees_and_equals_free_decoding_where_that_is_one(parser, beam_size):
    from t2t_repro.decode.decode_text import decode_texts

    run, constraint = parser
    settings = run.decode_settings(beam_size=beam_size, extra_length=30)
    constrained = decode_texts(SENTENCES, run.model, run.vocabularies, settings, None, constraint, progress=False)
    free = decode_texts(SENTENCES, run.model, run.vocabularies, settings, None, None, progress=False)
    unconstrained = decode_texts(SENTENCES, run.model, run.vocabularies, settings.override(constrained_output=False),
                                 None, constraint, progress=False)
    assert unconstrained == free
    words = [len(sentence.split()) for sentence in SENTENCES]
    assert all(is_tree_on(text, n) for text, n in zip(constrained, words)), constrained
    free_trees = [is_tree_on(text, n) for text, n in zip(free, words)]
    assert any(free_trees) and not all(free_trees), free
    # Where the free tree is one the constraint allows (its tags fit the words, e.g. not the templates' tree with
    # its `` on the first word of a sentence without quotes), the constrained search finds the same one.
    allowed = [tree and tags_fit_words(text, sentence) for tree, text, sentence in zip(free_trees, free, SENTENCES)]
    assert any(allowed), free
    for tree_allowed, text, free_text in zip(allowed, constrained, free):
        if tree_allowed:
            assert text == free_text


def test_cached_and_uncached_constrained_searches_agree(parser):
    from t2t_repro.decode.decode_text import encode_sources, padded_batch
    from t2t_repro.decode.transformer_search import beam_decode

    run, constraint = parser
    settings = run.decode_settings(beam_size=4, extra_length=30)
    inputs = padded_batch(encode_sources(SENTENCES, settings, run.vocabularies.source)[1])
    cached = beam_decode(run.model, inputs, settings, constraint=constraint)
    uncached = beam_decode(run.model, inputs, settings, use_cache=False, constraint=constraint)
    assert cached[0].numpy().tolist() == uncached[0].numpy().tolist()
    np.testing.assert_allclose(cached[1].numpy(), uncached[1].numpy(), rtol=1e-5)


def test_samples_are_trees_on_the_words_and_top_k_1_samples_the_greedy_tree(parsing_run):
    # The decoder's sampler (t2t-repro-decoder --sampling) as run_decoder builds it, raw outputs (no postprocess).
    from t2t_repro.decode.decode_text import search_texts_nbest
    from t2t_repro.decode_settings import SamplingSettings
    from t2t_repro.run.jobs import run_decoder

    def outputs(**flags):
        decoder = run_decoder(str(parsing_run), extra_length=30, **flags)
        results = search_texts_nbest(SENTENCES, decoder.search, decoder.vocabularies, decoder.settings,
                                     progress=False)
        return [hypothesis.text for per_input in results for hypothesis in per_input]

    hot = SamplingSettings("topk:8", temperature=3.0, seed=1)
    words = [len(sentence.split()) for sentence in SENTENCES for _ in range(3)]
    sampled = outputs(sampling=hot, nbest=3)
    assert all(is_tree_on(text, n) for text, n in zip(sampled, words)), sampled
    assert len(set(sampled)) > len(SENTENCES)  # samples, not one tree per sentence
    free = outputs(sampling=hot, nbest=3, constrained_output=False)
    assert not all(is_tree_on(text, n) for text, n in zip(free, words))
    greedy = outputs(beam_size=1)
    assert outputs(sampling=SamplingSettings("topk:1", temperature=2.0, seed=5)) == greedy


def test_served_parser_answers_a_raw_sentence_with_a_tree_on_its_words(parsing_run, tmp_path):
    from test_nbest_export import LIMITS, _served

    from t2t_repro.cli import exporter
    from t2t_repro.cli.common import run_main
    from t2t_repro.data.ptb_tree import parse_tree
    from t2t_repro.run import jobs

    export_dir = tmp_path / "export"
    assert run_main(exporter._main, [f"--output_dir={parsing_run}", f"--export_dir={export_dir}", "--beam_size=4",
                                     "--extra_length=30"]) == 0
    texts = [SENTENCES[3], "  Ruth sees the river . "]
    status, answer = _served(jobs.served_model(str(export_dir), LIMITS), {"instances": texts})
    assert status == 200
    for text, prediction in zip(texts, answer["predictions"]):
        assert is_tree_on(prediction["raw_outputs"], len(text.split()))  # well formed in the graph already
        assert parse_tree(prediction["outputs"]).words() == text.split()


def test_ctranslate2_exports_a_parser_only_when_told_that_it_searches_without_the_tree_constraint(
        parsing_run, tmp_path, capsys, caplog):
    pytest.importorskip("ctranslate2", reason="CTranslate2 is not installed (the [test] extra installs it)")
    from t2t_repro.cli import decoder, exporter
    from t2t_repro.cli.common import run_main
    from t2t_repro.data.ptb_tree import parse_tree
    from t2t_repro.decode.decode_text import search_texts_nbest
    from t2t_repro.run import ctranslate2_jobs
    from t2t_repro.run.jobs import run_decoder
    from t2t_repro.serve.export_files import CTRANSLATE2_METADATA, read_export_metadata

    def refused(main, flags, message):
        assert run_main(main, flags) == 2
        stderr = capsys.readouterr().err
        assert stderr.strip().count("\n") == 0 and message in stderr, stderr

    def raw_outputs(text_decoder):
        results = search_texts_nbest(SENTENCES, text_decoder.search, text_decoder.vocabularies,
                                     text_decoder.settings, progress=False)
        return [hypothesis.text for (hypothesis,) in results]

    export_dir = tmp_path / "ct2"
    flags = [f"--output_dir={parsing_run}", "--format=ctranslate2", f"--export_dir={export_dir}", "--beam_size=1",
             "--extra_length=30"]
    refused(exporter._main, flags, "give --constrained_output=false to export its search without the constraint")
    assert not export_dir.exists()
    assert run_main(exporter._main, flags + ["--constrained_output=false"]) == 0
    capsys.readouterr()
    version = export_dir / "1"
    assert read_export_metadata(version)["decode"]["constrained_output"] is False
    refused(decoder._main, ["--engine=ctranslate2", f"--model_dir={version}", "--constrained_output=true"],
            "--constrained_output=true is for the tensorflow engine")
    # It searches as the tensorflow engine does without the constraint (greedy: the same outputs), and its trees
    # are repaired onto the sentence's words.
    exported = ctranslate2_jobs.export_decoder(str(version))
    free = run_decoder(str(parsing_run), beam_size=1, extra_length=30, constrained_output=False)
    outputs = raw_outputs(exported)
    assert outputs == raw_outputs(free)
    for text, output in zip(SENTENCES, outputs):
        assert parse_tree(exported.postprocess(output, text)).words() == text.split()
    # An export made before the refusal records no constrained_output: it decodes the same, with a warning.
    metadata_file = version / CTRANSLATE2_METADATA
    metadata = json.loads(metadata_file.read_text())
    del metadata["decode"]["constrained_output"]
    metadata_file.write_text(json.dumps(metadata))
    caplog.clear()
    assert raw_outputs(ctranslate2_jobs.export_decoder(str(version))) == outputs
    assert "export again with --constrained_output=false to record it" in caplog.text
    caplog.clear()
    ctranslate2_jobs.export_decoder(str(version), constrained_output=False)
    assert "--constrained_output=false" not in caplog.text


def test_a_punctuation_word_gets_its_tag_and_no_other_word_a_tag_evalb_deletes():
    # Target id 11 is the tag ",". Source ids: 8 the word ",", 9 a piece "-" that starts a word, 10 the ambiguous
    # "'", 7 a continuation piece of punctuation ("-"), 6 one with a letter ("s"): "-" "-" is left to the model,
    # "'" "s" takes a tag EVALB keeps, as does every word with a letter.
    comma, source_comma, source_dash, quote = 11, 8, 9, 10
    tokens = TreeTokens(target_vocab_size=12, source_vocab_size=11, openers=TOKENS.openers, closers=TOKENS.closers,
                        slots=(NN, VB, comma), word_starts=(3, 4, 5, source_comma, source_dash, quote),
                        punctuation_slots=(comma,), fixed_tags=((source_comma, comma),), free_starts=(quote,),
                        wordlike_pieces=(3, 4, 5, 6))
    sources = tf.constant([[3, source_comma, 4, source_dash, 7, EOS_ID, PAD_ID],
                           [source_comma, quote, 6, source_dash, quote, EOS_ID, PAD_ID]])
    word_tags = [[-1, comma, -1, -2, -1, -1, -1], [comma, -1, -1, -2, -1, -1, -1]]
    assert source_word_tags(tokens, sources).numpy().tolist() == word_tags
    prefix = tf.constant([[PAD_ID, OPEN_S, NN, PAD_ID, PAD_ID]] * 3, tf.int32)
    allowed = allowed_tokens(tokens, prefix, tf.constant(2), tf.constant([4] * 3), tf.constant([40] * 3),
                             tf.constant([[-1, comma, -1, -2], [-1, -1, -1, -1], [-1, -2, -1, -1]])).numpy()
    slots = [{token for token in (NN, VB, comma) if row[token]} for row in allowed]
    assert slots == [{comma}, {NN, VB}, {NN, VB, comma}]


def test_brackets_opened_in_a_row_are_bounded():
    tokens = TreeTokens(**{**TOKENS.__dict__, "max_openers_in_a_row": 2})
    def openers_allowed(prefix):
        ids = tf.constant([[PAD_ID] + prefix + [PAD_ID] * 2], tf.int32)
        mask = allowed_tokens(tokens, ids, tf.constant(len(prefix)), tf.constant([3]), tf.constant([40])).numpy()[0]
        return bool(mask[OPEN_NP])

    assert openers_allowed([OPEN_S]) and not openers_allowed([OPEN_S, OPEN_NP])
    assert openers_allowed([OPEN_S, OPEN_NP, NN, OPEN_VP]) and not openers_allowed([OPEN_S, NN, OPEN_VP, OPEN_NP])
