"""The Problem base class: one registered data set, its vocabulary, its splits and its evaluation.

A Problem generates its data into `data_dir` once (a vocabulary plus TFRecord shards of token ids and a
metadata JSON), then serves `tf.data` pipelines of {"inputs", "targets"} int32 id sequences, each ending in
EOS_ID. It also names how its outputs are scored (BLEU or parse F1) and its decoding defaults.

Subclasses: `TranslationProblem` (WMT14 and toy_ende) and `ParsingProblem` (WSJ and toy_parsing).
"""

import abc
import dataclasses

SPLITS = ("train", "dev", "test")


@dataclasses.dataclass(frozen=True)
class DecodeDefaults:
    """Beam search settings a problem decodes with unless told otherwise."""

    beam_size: int
    alpha: float  # GNMT length penalty exponent, ((5 + length) / 6) ** alpha
    extra_length: int  # maximum output length = input length + extra_length


# Section 6.1: beam 4, alpha 0.6, max output length input + 50.
TRANSLATION_DECODE_DEFAULTS = DecodeDefaults(beam_size=4, alpha=0.6, extra_length=50)
# Section 6.3: beam 21, alpha 0.3, max output length input + 300.
PARSING_DECODE_DEFAULTS = DecodeDefaults(beam_size=21, alpha=0.3, extra_length=300)


class Problem(abc.ABC):
    """A registered data set. Class attributes name it; methods generate, read and score it."""

    name: str  # registry name, snake_case
    evaluation: str  # "bleu" or "parse_f1"
    decode_defaults: DecodeDefaults
    vocab_size: int  # the requested vocabulary size (the trained one is `vocabulary(data_dir).vocab_size`)

    @abc.abstractmethod
    def generate_data(self, data_dir, tmp_dir=None, manual_dir=None):
        """Writes the vocabulary, TFRecord shards and metadata JSON under `data_dir/<name>`; returns a summary.

        `manual_dir` holds data the user supplies (parallel text files, Penn Treebank .mrg files).
        Idempotent: complete data is reused, an incomplete earlier run is detected and redone."""

    @abc.abstractmethod
    def data_ready(self, data_dir):
        """True when `data_dir` holds this problem's complete, verified data."""

    @abc.abstractmethod
    def vocabulary(self, data_dir):
        """The problem's `Vocabulary` (t2t_repro.data.vocabulary), loaded from `data_dir`."""

    @abc.abstractmethod
    def dataset(self, split, data_dir):
        """Unbatched tf.data.Dataset of {"inputs", "targets"}: int32 [length] ids, each ending in EOS_ID."""

    @abc.abstractmethod
    def text_pairs(self, split, data_dir):
        """The split's (source text, reference text) pairs, in order, for decoding and scoring."""

    @abc.abstractmethod
    def postprocess(self, decoded_text, source_text):
        """Turns a decoded target string into what is scored (parsing: a well-formed tree on the words)."""

    @abc.abstractmethod
    def evaluate(self, hypotheses, references, sources):
        """Scores postprocessed hypotheses against references: {"bleu": {...}} or {"f1", "precision", ...}."""
