"""A translation problem of your own: English->Spanish from local files, with its own vocabulary size.

A Problem is a class registered under its `name`. Deriving from TranslationProblem gives the whole flow (a
SentencePiece vocabulary learned on a sample of train, TFRecord shards, dev/test texts kept for scoring); the
class says which files, which languages, which vocabulary and how to score. The data is read from
`--manual_dir`: {train,dev,test}.en and {train,dev,test}.es, line-aligned, one sentence per line.
"""

from t2t_repro.data.translation import TranslationProblem
from t2t_repro.evaluate.scorers import BleuScorer
from t2t_repro.registry import register_problem


@register_problem
class TranslateEnEsLocal(TranslationProblem):
    """English->Spanish from local files in --manual_dir, shared 4,000-piece BPE vocabulary, BLEU into Spanish."""

    name = "translate_en_es_local"
    source_language = "en"
    target_language = "es"
    scorer = BleuScorer("es")  # sacreBLEU (13a) and Moses-tokenized BLEU into Spanish
    vocab_size = 4_000
    vocab_model_type = "bpe"
    vocab_sample_sentences = 200_000  # sentences (both sides) the vocabulary is learned from
    train_shards = 4
