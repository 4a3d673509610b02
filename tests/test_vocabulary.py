"""SentencePiece vocabularies: reserved ids, exact round trip on varied Unicode, size handling, atomic files."""

import os
import random

import pytest

from t2t_repro.data.vocabulary import Vocabulary, train_vocabulary
from t2t_repro.errors import UserError
from t2t_repro.special_tokens import EOS_ID, PAD_ID, UNK_ID

WORDS = (
    "the cat sat on a mat über Straße naïve café 東京 日本語 Ελληνικά русский язык 😀 "
    "fi ligature ﬁ "
    "full－width ｆｕｌｌ zero\u200bwidth Zürich déjà-vu 中文 עברית العربية"
).split()

ROUND_TRIP = [
    "Hello world",
    "two  spaces and a trailing space ",
    " leading space",
    "\ttab\tseparated",
    "",
    "   ",
    "ｆｕｌｌ－ｗｉｄｔｈ ａｎｄ ﬁ ligatures stay as written",
    "Zürich 😀👍🏽 \u200b zero width, a\u00a0non-breaking space",
    "never seen in training: ☃ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ĳ Ⅻ",
    "中文测试，日本語のテキスト、한국어 텍스트",
    "RTL: עברית and العربية mixed with 123",
    "combining e\u0301 versus precomposed é",
]


@pytest.fixture(scope="module")
def sentences():
    rng = random.Random(0)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12))) for _ in range(1500)]


@pytest.fixture(scope="module")
def vocab(tmp_path_factory, sentences):
    return train_vocabulary(sentences, tmp_path_factory.mktemp("vocab") / "vocab", 500, "bpe")


def test_reserved_ids(vocab):
    assert (vocab.id_to_piece(PAD_ID), vocab.id_to_piece(EOS_ID), vocab.id_to_piece(UNK_ID)) == (
        "<pad>",
        "</s>",
        "<unk>",
    )


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_exact_round_trip(vocab, text):
    ids = vocab.encode(text)
    assert EOS_ID not in ids and PAD_ID not in ids
    assert vocab.decode(ids) == text


def test_decode_stops_at_eos_and_drops_padding(vocab):
    ids = vocab.encode("the cat sat")
    assert vocab.decode([PAD_ID] + ids + [PAD_ID, EOS_ID] + vocab.encode("on a mat")) == "the cat sat"


def test_decode_maps_ids_outside_the_vocabulary_to_unk(vocab):
    assert vocab.decode(vocab.encode("cat") + [vocab.vocab_size + 7]) == vocab.decode(vocab.encode("cat") + [UNK_ID])


def test_encode_batch_matches_encode(vocab, sentences):
    assert vocab.encode_batch(sentences[:50]) == [vocab.encode(s) for s in sentences[:50]]


@pytest.mark.parametrize("model_type", ["bpe", "unigram"])
def test_requested_size_too_large_for_a_small_corpus_gives_a_smaller_vocabulary(tmp_path, sentences, model_type):
    vocab = train_vocabulary(sentences, tmp_path / "big", 50_000, model_type)
    assert 300 < vocab.vocab_size < 50_000
    assert vocab.decode(vocab.encode(sentences[0])) == sentences[0]


def test_size_below_the_required_characters_is_a_user_error(tmp_path, sentences):
    with pytest.raises(UserError, match="vocab_size=100 is too small: .* give at least 260"):
        train_vocabulary(sentences, tmp_path / "small", 100, "bpe")
    # Past the reserved ids and byte pieces, SentencePiece's own limit: the characters this corpus needs.
    with pytest.raises(UserError, match="vocab_size=261 is smaller than the .* characters"):
        train_vocabulary(sentences + ["".join(chr(0x4E00 + i) for i in range(100))], tmp_path / "small", 261, "bpe")


def test_user_defined_symbols_are_single_pieces(tmp_path, sentences):
    vocab = train_vocabulary(sentences + ["(S (NP the cat ) )"] * 5, tmp_path / "v", 500, "bpe", ["(NP", "(S"])
    pieces = [vocab.id_to_piece(i) for i in vocab.encode("(S (NP the cat ) )")]
    assert "(NP" in pieces and "(S" in pieces


def test_files_are_written_without_leftovers_and_reload(tmp_path, sentences, vocab):
    trained = train_vocabulary(sentences, tmp_path / "v", 400, "unigram")
    assert sorted(os.listdir(tmp_path)) == ["v.model", "v.vocab"]
    reloaded = Vocabulary(tmp_path / "v.model")
    assert reloaded.vocab_size == trained.vocab_size
    assert reloaded.encode("the cat") == trained.encode("the cat")
    assert reloaded.serialized_model == (tmp_path / "v.model").read_bytes()
    assert len((tmp_path / "v.vocab").read_text(encoding="utf-8").splitlines()) == trained.vocab_size


def test_serialized_model_works_in_tensorflow_text(vocab):
    import tensorflow_text as tf_text

    tokenizer = tf_text.SentencepieceTokenizer(model=vocab.serialized_model)
    text = "the cat sat on a mat über Straße"
    assert tokenizer.tokenize(text).numpy().tolist() == vocab.encode(text)
    assert tokenizer.detokenize(vocab.encode(text)).numpy().decode("utf-8") == text


def test_empty_sample_and_bad_files_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="no text"):
        train_vocabulary([], tmp_path / "v", 300, "bpe")
    with pytest.raises(UserError, match="cannot read vocabulary"):
        Vocabulary(tmp_path / "missing.model")
    (tmp_path / "junk.model").write_bytes(b"not a model")
    with pytest.raises(UserError, match="not a SentencePiece model"):
        Vocabulary(tmp_path / "junk.model")
    with pytest.raises(UserError, match="model type"):
        train_vocabulary(["a b"], tmp_path / "v", 300, "wordpiece")
