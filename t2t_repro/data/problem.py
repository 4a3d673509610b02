"""The Problem base class: one registered data set, its vocabulary, its splits and its evaluation.

A Problem generates its data into `data_dir` once (a vocabulary plus TFRecord shards of token ids and a
metadata JSON), then serves `tf.data` pipelines of {"inputs", "targets"} int32 id sequences, each ending in
EOS_ID. Callers ask it, rather than switch on its kind, for its decoding defaults (`decode_settings`), the
post-processing of decoded text (`postprocess`, described by `postprocess_note`) and its scorer (`scorer`, a
callable handed in by the registered problem, e.g. `t2t_repro.evaluate.scorers.BleuScorer("de")`).

Subclasses: `TranslationProblem` (WMT14, toy_ende, translate_files) and `ParsingProblem` (WSJ, toy_parsing,
parse_files).

A problem may take settings, given like hparams (`--problem_overrides="vocab_size=16000"`): a frozen dataclass
`settings_class` whose fields are declared with `t2t_repro.settings.setting` (type, help, allowed values), held
as `problem.settings`. The paper's translation problems take none (`NoSettings`): their data is fixed by the
paper; its parsing problems take the form of the target tree (`target_tags`, section 6.3's by default).
"""

import abc
import dataclasses

from t2t_repro.errors import UserError
from t2t_repro.settings import check_fields, dict_differences

SPLITS = ("train", "dev", "test")


@dataclasses.dataclass(frozen=True)
class NoSettings:
    """The settings of a problem that takes none: everything about its data is fixed by its class."""

    def __post_init__(self):
        check_fields(self, "problem setting")


class Problem(abc.ABC):
    """A registered data set. Class attributes name it; methods generate, read and score it."""

    name: str  # registry name, snake_case
    decode_settings: "t2t_repro.decode_settings.DecodeSettings"  # beam search defaults of the task
    scorer: object  # (hypotheses, references, sources) -> figures, with .headline(figures) -> (name, value)
    postprocess_note: str  # what `postprocess` does, for export metadata
    vocab_size: int  # the requested vocabulary size (the trained ones are `vocabularies(data_dir)`)
    settings_class = NoSettings

    def __init__(self, settings=None):
        self.settings = self.settings_class() if settings is None else settings

    @classmethod
    def settings_from_record(cls, recorded):
        """The settings a run or data recorded (`settings_dict`'s JSON), as `settings_class`: a default changed
        since then does not change them."""
        return cls.settings_class(**recorded)

    @classmethod
    def settings_differences(cls, recorded, now, recorded_word="saved"):
        """`dict_differences` of two recorded settings dicts, each read as `settings_from_record` reads it (a
        setting a record leaves out is at its value then, not at today's default)."""
        try:
            recorded, now = (dataclasses.asdict(cls.settings_from_record(d)) for d in (recorded, now))
        except (TypeError, UserError):  # not this problem's settings now: compared as recorded
            pass
        return dict_differences(recorded, now, recorded_word)

    def settings_dict(self):
        """The problem's settings as a JSON-ready dict (recorded with the data and in run.json)."""
        return dataclasses.asdict(self.settings)

    def data_settings(self):
        """The settings that shape the generated data (by default all): data made with other values of these is
        never reused."""
        return self.settings_dict()

    @abc.abstractmethod
    def generate_data(self, data_dir, tmp_dir=None, manual_dir=None, workers=None, vocabulary_sha256=None,
                      vocabulary_from=None):
        """Writes the vocabulary, TFRecord shards and metadata JSON under `data_dir/<name>`; returns a summary.

        `manual_dir` holds data the user supplies (parallel text files, Penn Treebank .mrg files); `workers`
        is the number of processes that encode and write (None: one per CPU core), which never changes the data.
        Idempotent: complete data is reused, an incomplete earlier run is detected and redone.
        `vocabulary_sha256` (a restart's): the vocabulary the data must have; when the one trained now differs,
        a UserError before anything is published, so the data already there stays as it was.
        `vocabulary_from`: the `Vocabularies` of the run named by the problem's vocab_from, to encode with
        instead of training them."""

    @abc.abstractmethod
    def data_ready(self, data_dir):
        """True when `data_dir` holds this problem's complete, verified data."""

    @abc.abstractmethod
    def vocabularies(self, data_dir):
        """The problem's `Vocabularies` (t2t_repro.data.vocabulary): the source side's and the target side's, one
        object twice when shared; loaded from `data_dir`."""

    @abc.abstractmethod
    def dataset(self, split, data_dir, max_length=None, shard=None):
        """Unbatched tf.data.Dataset of {"inputs", "targets"}: int32 [length] ids, each ending in EOS_ID; without
        the pairs with a side longer than `max_length` ids, and only a worker's `shard` = (count, index) of
        them when given (every count-th pair from the index-th, counted before the length limit)."""

    @abc.abstractmethod
    def text_pairs(self, split, data_dir):
        """The split's (source text, reference text) pairs, in order, for decoding and scoring."""

    @abc.abstractmethod
    def postprocess(self, decoded_text, source_text):
        """Turns a decoded target string into what is scored (parsing: a well-formed tree on the words)."""

    def output_constraint(self, vocabularies):
        """What a decoder may let its outputs become, given the problem's `Vocabularies`: None (anything) by
        default; parsing's `TreeTokens` (only well-formed trees on the source words)."""
        return None

    def check_existing_data(self, data_dir, manual_dir=None):
        """Raises UserError when data_dir holds this problem's data made otherwise than asked now (other settings,
        another --manual_dir); nothing to check by default."""

    def vocabulary_report(self, data_dir):
        """The vocabulary's figures for report.json."""
        return {"size": self.vocabularies(data_dir).target.vocab_size}

    def evaluate(self, hypotheses, references, sources):
        """Scores postprocessed hypotheses against references with the problem's scorer."""
        return self.scorer(hypotheses, references, sources)
