"""SentencePiece vocabularies: training one from sentences, and encoding/decoding text with it.

Every vocabulary shares the reserved ids of `t2t_repro.special_tokens` (PAD 0, EOS 1, UNK 2, no BOS), so the
model, batching and decoding never need to know which vocabulary they run with.

Text round-trips exactly: `vocab.decode(vocab.encode(s)) == s` for any string, because training uses

- the identity normalization (no NFKC: full-width letters, ligatures and compatibility characters stay as
  they are, so a reference translation is scored on the text it actually has);
- no collapsing of repeated, leading or trailing whitespace;
- byte fallback: a character unseen in training becomes its UTF-8 bytes instead of UNK.

    vocab = train_vocabulary(sentences, "/data/wmt_ende/vocab", 37000, "bpe")
    ids = vocab.encode("Hello world")       # no EOS; the data pipeline appends it
    text = vocab.decode(ids + [EOS_ID, 5])  # stops at EOS -> "Hello world"

A model reads its sources with one vocabulary and writes its targets with another (`Vocabularies`): the same
one twice when the vocabulary is shared (section 5.1), each side's own otherwise.
"""

import dataclasses
import hashlib
import io
import os
import re

import sentencepiece as spm

from t2t_repro import safe_write
from t2t_repro.errors import UserError
from t2t_repro.special_tokens import EOS_ID, PAD_ID, UNK_ID

MODEL_SUFFIX = ".model"
VOCAB_SUFFIX = ".vocab"
MODEL_TYPES = ("bpe", "unigram", "char", "word")
_TOO_SMALL = re.compile(r"Vocabulary size is smaller than required_chars\. (\d+) vs (\d+)")


class Vocabulary:
    """A trained SentencePiece model with the project's reserved ids.

    Args:
        model_path: path of a `.model` file written by `train_vocabulary`.
    """

    def __init__(self, model_path):
        self.model_path = os.fspath(model_path)
        try:
            with open(self.model_path, "rb") as model_file:
                self.serialized_model = model_file.read()
        except OSError as error:
            raise UserError(f"cannot read vocabulary {self.model_path}: {error.strerror}") from None
        self._processor = spm.SentencePieceProcessor()
        try:
            self._processor.LoadFromSerializedProto(self.serialized_model)
        except RuntimeError:
            raise UserError(f"{self.model_path} is not a SentencePiece model") from None
        reserved = (self._processor.pad_id(), self._processor.eos_id(), self._processor.unk_id())
        if reserved != (PAD_ID, EOS_ID, UNK_ID):
            raise UserError(
                f"{self.model_path}: pad/eos/unk ids are {reserved}, expected {(PAD_ID, EOS_ID, UNK_ID)}"
            )

    @property
    def vocab_size(self):
        """Number of ids, reserved ones included: the model's embedding and softmax size."""
        return self._processor.get_piece_size()

    def encode(self, text):
        """The ids of `text`, without EOS."""
        return self._processor.encode(text, out_type=int)

    def encode_batch(self, texts, num_threads=None):
        """The ids of each string of `texts` (a list), encoded on several threads."""
        return self._processor.encode(list(texts), out_type=int, num_threads=num_threads or os.cpu_count())

    def decode(self, ids):
        """The text of `ids`: stops at the first EOS, drops PAD, maps ids outside the vocabulary to UNK."""
        size = self.vocab_size
        kept = []
        for token in ids:
            token = int(token)
            if token == EOS_ID:
                break
            if token != PAD_ID:
                kept.append(token if 0 <= token < size else UNK_ID)
        return self._processor.decode(kept)

    def byte_piece_ids(self):
        """The ids of the byte-fallback pieces (<0x00> ... <0xFF>): they spell the characters the vocabulary lacks,
        so ordinary text seldom uses them."""
        return [token for token in range(self.vocab_size) if self._processor.is_byte(token)]

    def ordinary_ids(self):
        """The ids text is normally encoded into: all but the reserved PAD, EOS and UNK and the byte pieces."""
        return set(range(self.vocab_size)).difference((PAD_ID, EOS_ID, UNK_ID), self.byte_piece_ids())

    def id_to_piece(self, token):
        """The piece string of one id (for inspection and tests)."""
        return self._processor.id_to_piece(int(token))


@dataclasses.dataclass(frozen=True)
class Vocabularies:
    """The vocabulary that encodes sources and the one that encodes and decodes targets: one object twice when
    they are shared (section 5.1, the default), two when each side has its own (`shared_vocabulary=false`)."""

    source: Vocabulary
    target: Vocabulary

    @classmethod
    def shared_one(cls, vocabulary):
        return cls(vocabulary, vocabulary)

    @property
    def shared(self):
        return self.source is self.target

    @property
    def sha256(self):
        """Which vocabularies: a shared one's is its model's sha256 (as runs have always recorded it); separate
        ones' is the sha256 of both models, source first, so that either side differing shows."""
        if self.shared:
            return hashlib.sha256(self.target.serialized_model).hexdigest()
        digest = hashlib.sha256()
        for side in (self.source, self.target):
            digest.update(hashlib.sha256(side.serialized_model).digest())
        return digest.hexdigest()

    def model_sizes(self):
        """The vocabulary sizes a Transformer is built with: build_transformer(hparams, **model_sizes())."""
        return {"vocab_size": self.target.vocab_size,
                "source_vocab_size": None if self.shared else self.source.vocab_size}

    def side_sha256s(self):
        """{"source": sha256, "target": sha256} of the two models (the same twice when shared)."""
        return {side: hashlib.sha256(getattr(self, side).serialized_model).hexdigest()
                for side in ("source", "target")}


# SentencePiece's advice for character_coverage: 0.9995 for languages with rich character sets (Chinese,
# Japanese), 1.0 for small ones; 0.9999 is what a shared vocabulary of Latin-script languages has always used here.
RICH_SCRIPT_LANGUAGES = ("zh", "ja", "ko")
RICH_SCRIPT_COVERAGE = 0.9995
DEFAULT_COVERAGE = 0.9999
MIN_COVERAGE = 0.98  # SentencePiece's trainer refuses less (trainer_interface.cc)


def check_character_coverage(coverage, name="character_coverage"):
    """UserError for a character_coverage SentencePiece's trainer refuses (outside [MIN_COVERAGE, 1])."""
    if not MIN_COVERAGE <= coverage <= 1:
        raise UserError(f"{name}={coverage} is outside [{MIN_COVERAGE}, 1], which SentencePiece accepts; 0.9999 "
                        "suits most languages, 0.9995 rich scripts such as Chinese or Japanese")


def default_character_coverage(languages):
    """The character_coverage for a vocabulary of text in `languages` (codes such as "en", "zh-Hans"): the rich
    scripts' where any of them writes one."""
    rich = any(str(code).lower().split("-")[0].split("_")[0] in RICH_SCRIPT_LANGUAGES for code in languages)
    return RICH_SCRIPT_COVERAGE if rich else DEFAULT_COVERAGE


MAX_VOCAB_SIZE = 1_000_000
_BYTE_PIECES = 256


def check_vocab_size(vocab_size, user_symbols=0, size_name="vocab_size"):
    """UserError for a vocab_size SentencePiece cannot be asked for: at most the reserved ids, the byte pieces
    and the `user_symbols` (it fails without a word on such sizes), or past MAX_VOCAB_SIZE."""
    smallest = len((PAD_ID, EOS_ID, UNK_ID)) + _BYTE_PIECES + user_symbols + 1
    if not isinstance(vocab_size, int) or vocab_size < smallest:
        held = ["the 3 reserved ids", f"{_BYTE_PIECES} byte pieces"] + (
            [f"{user_symbols} fixed symbols"] if user_symbols else [])
        raise UserError(f"{size_name}={vocab_size} is too small: a vocabulary holds {', '.join(held[:-1])} and "
                        f"{held[-1]} before any piece of text; give at least {smallest} (thousands are usual)")
    if vocab_size > MAX_VOCAB_SIZE:
        raise UserError(f"{size_name}={vocab_size:,} is over {MAX_VOCAB_SIZE:,}; the paper's vocabularies have "
                        "37,000 (EN-DE) and 32,000 (EN-FR) pieces (section 5.1)")


def train_vocabulary(sentences, model_prefix, vocab_size, model_type, user_defined_symbols=(),
                     character_coverage=DEFAULT_COVERAGE, size_name="vocab_size"):
    """Trains a SentencePiece vocabulary and writes `model_prefix.model` (and a readable `.vocab`) atomically.

    Args:
        sentences: iterable of strings, the (bounded) training sample; read once.
        model_prefix: output path without suffix.
        vocab_size: requested size. A corpus too small for it yields a smaller vocabulary instead of an error
            (`hard_vocab_limit=false`); a size below the characters the corpus needs is a UserError.
        model_type: "bpe", "unigram", "char" or "word".
        user_defined_symbols: strings always kept as single pieces (e.g. parse-tree brackets).
        character_coverage: the share of the sample's characters that get pieces of their own; the rarest rest
            are spelled by byte pieces (`default_character_coverage`).
        size_name: the setting that gives vocab_size, for messages (e.g. target_vocab_size).

    Returns:
        the trained `Vocabulary`.
    """
    if model_type not in MODEL_TYPES:
        raise UserError(f"vocabulary model type {model_type!r}: must be one of {', '.join(MODEL_TYPES)}")
    check_vocab_size(vocab_size, len(user_defined_symbols), size_name)
    model_prefix = os.fspath(model_prefix)
    model = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(sentences),
            model_writer=model,
            vocab_size=vocab_size,
            model_type=model_type,
            pad_id=PAD_ID,
            eos_id=EOS_ID,
            unk_id=UNK_ID,
            bos_id=-1,
            user_defined_symbols=list(user_defined_symbols),
            byte_fallback=True,
            split_by_whitespace=True,  # no piece spans two words: datagen encodes word by word (encoding_blocks)
            normalization_rule_name="identity",
            remove_extra_whitespaces=False,
            hard_vocab_limit=False,
            character_coverage=character_coverage,
            train_extremely_large_corpus=False,
            num_threads=os.cpu_count() or 1,
            minloglevel=2,
        )
    except RuntimeError as error:
        too_small = _TOO_SMALL.search(str(error))
        if too_small:
            raise UserError(
                f"{size_name}={vocab_size} is smaller than the {too_small.group(2)} characters, bytes and "
                f"reserved symbols this corpus needs"
            ) from None
        if "sentences_.empty()" in str(error) or "all_chars_count" in str(error):
            raise UserError("cannot train a vocabulary: the training sample holds no text") from None
        raise
    model_path = model_prefix + MODEL_SUFFIX
    safe_write.write_file(model_path, model.getvalue())
    vocabulary = Vocabulary(model_path)
    pieces = "".join(
        f"{vocabulary.id_to_piece(i)}\t{vocabulary._processor.get_score(i)}\n" for i in range(vocabulary.vocab_size)
    )
    safe_write.write_file(model_prefix + VOCAB_SUFFIX, pieces)
    return vocabulary
