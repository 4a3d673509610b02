"""Problems for your own files, no Python needed: any parallel corpus (translate_files) and any treebank
(parse_files), with their settings given on the command line like hparams:

    t2t-repro-trainer --problem=translate_files \
        --problem_overrides="source_language=en,target_language=ja,vocab_size=16000" \
        --manual_dir=M --data_dir=D --output_dir=O --hparams=transformer_base
    t2t-repro-trainer --problem=parse_files --manual_dir=T --data_dir=D --output_dir=O --hparams=transformer_parsing

translate_files reads `M/{train,dev,test}.<source_language>` and `.<target_language>` (one sentence per line,
line-aligned; dev and test may be SGML: `{dev,test}.<language>.sgm`) and is scored by BLEU into the target
language (sacreBLEU with the tokenizer that suits it, and the paper's tokenized BLEU; compound splitting for
German only, section 6.1). parse_files reads `T/{train,dev,test}.mrg` (Penn Treebank bracketed trees, any
layout of lines) or `T/{train,dev,test}.trees` (one tree per line), cleans the trees as WSJ's are and is scored
by EVALB F1 (section 6.3). `t2t-repro-trainer --problem=translate_files --problem_help` lists the settings.

translate_files shares one vocabulary between source and target by default, as the paper does (section 5.1);
`shared_vocabulary=false` gives each side its own of vocab_size pieces (or `source_vocab_size=S,target_vocab_size=T`),
the choice for pairs whose scripts differ (English-Chinese, English-Russian), where a shared one spends most of its
pieces on one side.
parse_files always shares one (a sentence's words reappear in its tree).
"""

import dataclasses
import os
import re
import typing

from t2t_repro.data import ptb_tree
from t2t_repro.data.parsing import KEEP_TAGS, ParsingProblem, target_tags_setting
from t2t_repro.data.problem import SPLITS
from t2t_repro.data.translation import TranslationProblem
from t2t_repro.data.vocabulary import MIN_COVERAGE
from t2t_repro.errors import UserError
from t2t_repro.evaluate.scorers import BleuScorer, tree_scorer
from t2t_repro.registry import register_problem
from t2t_repro.settings import check_fields, check_interval, setting

_LANGUAGE_CODE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,31}")
_VOCAB_SIZE_HELP = ("SentencePiece vocabulary size: of the one vocabulary for source and target (section 5.1), or "
                    "with shared_vocabulary=false of each side's not sized by source_vocab_size or target_vocab_size")
SHARED_VOCABULARY_HELP = ("one vocabulary for both sides (section 5.1, which then ties all three embedding "
                          "matrices); false: each side its own, trained on its side's sentences (the target "
                          "embedding stays tied with the softmax)")
# Settings added after runs were recorded: left out of the recorded settings at these values, so that data and
# runs made before them still match.
_RECORDED_WHEN_SET = {"shared_vocabulary": True, "source_vocab_size": None, "target_vocab_size": None,
                      "character_coverage": None}
_SAMPLE_HELP = "sentences (source and target counted apart) sampled from train to learn the vocabulary from"
TREEBANK_SUFFIXES = (".mrg", ".trees")


@dataclasses.dataclass(frozen=True)
class SubwordTranslationSettings:
    """The vocabulary and BLEU settings of a translation problem read from files (translate_files, multi30k_*)."""

    vocab_size: int = setting(8000, _VOCAB_SIZE_HELP)
    shared_vocabulary: bool = setting(True, SHARED_VOCABULARY_HELP)
    source_vocab_size: int | None = setting(None, "the source vocabulary's size (shared_vocabulary=false; None: "
                                                  "vocab_size)")
    target_vocab_size: int | None = setting(None, "the target vocabulary's size (shared_vocabulary=false; None: "
                                                  "vocab_size)")
    character_coverage: float | None = setting(None, "SentencePiece's share of the characters that get pieces of "
                                                     "their own, the rarest rest spelled in bytes (None: 0.9995 "
                                                     "for Chinese, Japanese and Korean text, else 0.9999)")
    vocab_model_type: str = setting("bpe", "bpe (the paper's EN-DE) or unigram (word pieces, the paper's EN-FR)",
                                    choices=("bpe", "unigram"))
    vocab_sample_sentences: int = setting(2_000_000, _SAMPLE_HELP)
    # None, not "": data and runs recorded before this setting existed lack it, which reads as None.
    vocab_from: str | None = setting(None, "a run's --output_dir whose vocabulary encodes the data instead of one "
                                           "learned from it (vocab_size, vocab_model_type and vocab_sample_sentences "
                                           "are then unused): data to fine-tune that run on (--warm_start_from)")
    bleu_tokenizer: str = setting("", "sacreBLEU tokenizer of the detokenized BLEU (empty: the one that suits the "
                                      "target language: zh, ja-mecab, ko-mecab, else 13a)")
    what: typing.ClassVar[str] = "problem setting"  # names the settings in messages

    def __post_init__(self):
        check_fields(self, self.what)
        if self.character_coverage is not None:
            check_interval(self, self.what, ["character_coverage"], MIN_COVERAGE, 1, high_open=False)
        given = [name for name in ("source_vocab_size", "target_vocab_size") if getattr(self, name) is not None]
        if self.shared_vocabulary and given:
            raise UserError(f"{self.what} {given[0]} is for separate vocabularies: add shared_vocabulary=false "
                            "(the shared vocabulary's size is vocab_size)")


@dataclasses.dataclass(frozen=True)
class _LanguageSettings:
    """translate_files' languages: the first of its settings (a base class's fields come first)."""

    source_language: str | None = setting(None, "source language code (required): the files are "
                                                "<split>.<source_language>")
    target_language: str | None = setting(None, "target language code (required): the files are "
                                                "<split>.<target_language>; BLEU's tokenizer suits it")


@dataclasses.dataclass(frozen=True)
class TranslateFilesSettings(SubwordTranslationSettings, _LanguageSettings):
    """The settings of translate_files: the languages, then the vocabulary and BLEU settings."""

    what: typing.ClassVar[str] = "problem translate_files setting"

    def __post_init__(self):
        super().__post_init__()
        for name in ("source_language", "target_language"):
            code = getattr(self, name)
            if code is not None and not _LANGUAGE_CODE.fullmatch(code):
                raise UserError(f"problem translate_files setting {name}={code!r}: a language code is a letter "
                                "then letters, digits, - or _ (it names the files: train.<code>)")
        if self.source_language is not None and self.source_language == self.target_language:
            raise UserError(f"problem translate_files: source_language and target_language are both "
                            f"{self.source_language!r}; they name the files train.<language>, so they must differ")


class SubwordTranslation(TranslationProblem):
    """A translation problem read from files, whose vocabulary and BLEU tokenizer are settings
    (`SubwordTranslationSettings`); scored by BLEU into `target_language`."""

    settings_class = SubwordTranslationSettings

    def __init__(self, settings=None):
        super().__init__(settings)
        self.check_settings()
        self.scorer = BleuScorer(self.target_language, self.settings.bleu_tokenizer or None)

    def check_settings(self):
        """Raises UserError for settings that cannot make a problem (each field is checked by its dataclass)."""

    vocab_size = property(lambda self: self.settings.vocab_size)
    vocab_model_type = property(lambda self: self.settings.vocab_model_type)
    vocab_sample_sentences = property(lambda self: self.settings.vocab_sample_sentences)
    vocab_from = property(lambda self: self.settings.vocab_from or None)
    shared_vocabulary = property(lambda self: self.settings.shared_vocabulary)
    source_vocab_size = property(lambda self: self.settings.source_vocab_size)
    target_vocab_size = property(lambda self: self.settings.target_vocab_size)
    character_coverage = property(lambda self: self.settings.character_coverage)

    @classmethod
    def settings_from_record(cls, recorded):
        return cls.settings_class(**{**_RECORDED_WHEN_SET, **recorded})  # `settings_dict` leaves these out

    def settings_dict(self):
        return {key: value for key, value in super().settings_dict().items()
                if key not in _RECORDED_WHEN_SET or value != _RECORDED_WHEN_SET[key]}

    def data_settings(self):
        """All settings but the BLEU tokenizer, which changes the scoring and not the data."""
        return {key: value for key, value in self.settings_dict().items() if key != "bleu_tokenizer"}


@register_problem
class TranslateFiles(SubwordTranslation):
    """Your own parallel corpus: M/{train,dev,test}.<source_language> and .<target_language>, any language pair."""

    name = "translate_files"
    settings_class = TranslateFilesSettings

    def check_settings(self):
        missing = [name for name in ("source_language", "target_language") if getattr(self.settings, name) is None]
        if missing:
            raise UserError(f"problem translate_files needs {' and '.join(missing)}: e.g. "
                            '--problem_overrides="source_language=en,target_language=de" for files '
                            "{train,dev,test}.en and .de in --manual_dir")

    source_language = property(lambda self: self.settings.source_language)
    target_language = property(lambda self: self.settings.target_language)


@dataclasses.dataclass(frozen=True)
class ParseFilesSettings:
    """The settings of parse_files."""

    vocab_size: int = setting(8000, _VOCAB_SIZE_HELP + "; brackets and Penn Treebank tags are single pieces")
    vocab_sample_sentences: int = setting(2_000_000, _SAMPLE_HELP)
    target_tags: str = target_tags_setting(KEEP_TAGS, "; on a small treebank words may be far better: "
                                                       "docs/parsing.md")

    def __post_init__(self):
        check_fields(self, "problem parse_files setting")


@register_problem
class ParseFiles(ParsingProblem):
    """Your own treebank: T/{train,dev,test}.mrg (or .trees, a tree a line), scored by EVALB F1 as WSJ."""

    name = "parse_files"
    scorer = property(tree_scorer)
    settings_class = ParseFilesSettings
    vocab_size = property(lambda self: self.settings.vocab_size)
    vocab_sample_sentences = property(lambda self: self.settings.vocab_sample_sentences)

    def split_file(self, tree_dir, split):
        """The one treebank file of a split: `<split>.mrg` or `<split>.trees`; UserError when there is none or
        both."""
        found = [os.path.join(tree_dir, split + suffix) for suffix in TREEBANK_SUFFIXES
                 if os.path.isfile(os.path.join(tree_dir, split + suffix))]
        if len(found) > 1:
            raise UserError(f"{tree_dir} holds both {split}.mrg and {split}.trees; keep one")
        if not found:
            raise UserError(f"{tree_dir} lacks {split}.mrg (or {split}.trees); problem {self.name} expects "
                            f"{{train,dev,test}}.mrg there (Penn Treebank bracketed trees)")
        return found[0]

    def treebank_files(self, split, tmp_dir, manual_dir):
        if manual_dir is None:
            raise UserError(f"problem {self.name} reads your treebank: pass --manual_dir=DIR with "
                            "{train,dev,test}.mrg (or .trees, one tree per line)")
        if not os.path.isdir(manual_dir):
            raise UserError(f"--manual_dir={manual_dir} is not a directory; problem {self.name} expects "
                            "{train,dev,test}.mrg there")
        return [self.split_file(os.fspath(manual_dir), split)]

    def check_raw_data(self, tmp_dir, manual_dir):
        for split in SPLITS:
            (path,) = self.treebank_files(split, tmp_dir, manual_dir)
            if next(ptb_tree.iter_treebank_file(path), None) is None:
                raise UserError(f"{path} holds no tree with words; problem {self.name} needs Penn Treebank "
                                "bracketed trees in every split, e.g. (S (NP (NNP John)) (VP (VBZ runs)) (. .))")
