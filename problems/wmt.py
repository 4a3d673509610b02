"""The paper's WMT 2014 translation problems (section 5.1): EN->DE and EN->FR.

Both download through TFDS (`wmt14_translate`, dev newstest2013, test newstest2014) unless `--manual_dir`
holds the parallel text files, where dev and test may be the official SGML files as WMT distributes them
(newstest2013-src.en.sgm, newstest2013-ref.de.sgm, newstest2014-deen-src.en.sgm, newstest2014-deen-ref.de.sgm;
for EN-FR newstest2014-fren-...); see `t2t_repro.data.translation` and `t2t_repro.data.parallel_files`.
"""

from t2t_repro.data.translation import TranslationProblem
from t2t_repro.evaluate.scorers import BleuScorer
from t2t_repro.registry import register_problem


@register_problem
class WmtEnde(TranslationProblem):
    """WMT14 English->German (4.5M pairs), shared 37K SentencePiece BPE vocabulary; test newstest2014.

    Section 5.1: "byte-pair encoding, which has a shared source-target vocabulary of about 37000 tokens".
    The BPE merges are learned on a seeded sample of 2M sentences (1M pairs, both sides), drawn from the
    whole train split; BPE training needs about 5 bytes of memory per sample character, about 1.5 GB here.
    """

    name = "wmt_ende"
    source_language = "en"
    target_language = "de"
    scorer = BleuScorer("de")
    tfds_name = "wmt14_translate/de-en"
    sgml_sets = {"dev": "newstest2013", "test": "newstest2014"}
    vocab_size = 37_000
    vocab_model_type = "bpe"
    vocab_sample_sentences = 2_000_000
    train_shards = 32


@register_problem
class WmtEnfr(TranslationProblem):
    """WMT14 English->French (36M pairs), shared 32K SentencePiece unigram word-piece vocabulary; test newstest2014.

    Section 5.1: "split tokens into a 32000 word-piece vocabulary", citing GNMT (Wu et al., 2016), whose word
    pieces (Schuster and Nakajima, 2012) are chosen to maximize the likelihood of the training text under a
    language model of the pieces. SentencePiece's unigram model (Kudo, 2018) selects its vocabulary by that
    same likelihood criterion, whereas BPE merges the most frequent pair; so this problem uses "unigram".
    Unigram training needs about 24 bytes of memory per sample character (measured with sentencepiece 0.2),
    six times BPE's; so the vocabulary is trained on a seeded sample of 700K sentences (350K pairs, about
    100M characters) drawn from all 36M pairs, keeping datagen's peak near 3 GB, under 4 GB.
    """

    name = "wmt_enfr"
    source_language = "en"
    target_language = "fr"
    scorer = BleuScorer("fr")
    tfds_name = "wmt14_translate/fr-en"
    sgml_sets = {"dev": "newstest2013", "test": "newstest2014"}
    vocab_size = 32_000
    vocab_model_type = "unigram"
    vocab_sample_sentences = 700_000
    train_shards = 128
