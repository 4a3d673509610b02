"""Multi30K (Elliott et al., 2016): image descriptions from Flickr30K, English to German, French and Czech, read
from the release's files as its authors distribute them (task 1, `data/task1/raw/`):

    t2t-repro-trainer --problem=multi30k_ende --hparams=transformer_small --manual_dir=M --data_dir=D --output_dir=O

`M` holds `train.<l>`, `val.<l>` and `test_2016_flickr.<l>` for both languages (en and de, fr or cs), each plain
or gzipped (`train.en.gz`): UTF-8 text, one sentence per line, line-aligned, cased and untokenized. train is
the train split, val the dev split (dev loss and BLEU during training, early stopping: the set to tune on) and
the `test_set` setting picks the test split: `test_2016_flickr` (the standard reporting set; the release's copy
carries its authors' later corrections), or `test_2017_flickr`, `test_2017_mscoco`, `test_2018_flickr` where the
release has them for the language. The choice is recorded with the data, so data made for another test set is
refused, not reused.

Scored as translate_files is: sacreBLEU into the target language with the tokenizer that suits it, and the
paper's tokenized BLEU (section 6.1). `t2t-repro-trainer --problem=multi30k_ende --problem_help` lists the
settings.
"""

import dataclasses
import os
import typing

from t2t_repro.data.parallel_files import GZIP_SUFFIX
from t2t_repro.errors import UserError
from t2t_repro.problems.files import SHARED_VOCABULARY_HELP, SubwordTranslation, SubwordTranslationSettings
from t2t_repro.registry import register_problem
from t2t_repro.settings import setting

TEST_SETS = ("test_2016_flickr", "test_2017_flickr", "test_2017_mscoco", "test_2018_flickr")
RELEASE_NAMES = {"train": "train", "dev": "val"}  # the test split's name is the test_set setting


@dataclasses.dataclass(frozen=True)
class _TestSetSetting:
    """The multi30k_* problems' test set: the first of their settings (a base class's fields come first)."""

    test_set: str = setting("test_2016_flickr", "the release's set that is the test split (scored at the end of "
                                                "the run): test_2016_flickr is the standard one", choices=TEST_SETS)


@dataclasses.dataclass(frozen=True)
class Multi30kSettings(SubwordTranslationSettings, _TestSetSetting):
    """The settings of the multi30k_* problems: the test set, then the vocabulary and BLEU settings.

    The default vocabulary differs from section 5.1's one shared vocabulary: each side has its own of 8,000 BPE
    pieces, which led the shared 8,000 on Multi30K EN-DE val (docs/results.md); `shared_vocabulary=true` gives
    the paper's."""

    shared_vocabulary: bool = setting(False, SHARED_VOCABULARY_HELP + "; Multi30K's default: false, chosen on val")
    what: typing.ClassVar[str] = "problem multi30k setting"


def release_file(directory, name):
    """`directory/name`, or `directory/name.gz` when that is the one there (the plain path when neither is); a
    UserError when both are."""
    plain = os.path.join(directory, name)
    gzipped = plain + GZIP_SUFFIX
    if os.path.lexists(plain) and os.path.lexists(gzipped):  # lexists: a broken link is named as such later
        raise UserError(f"{directory} holds both {name} and {name}{GZIP_SUFFIX}; keep one")
    return gzipped if os.path.lexists(gzipped) else plain


class Multi30k(SubwordTranslation):
    """Multi30K from English: train, val as dev, and the `test_set` setting's set as test."""

    settings_class = Multi30kSettings
    source_language = "en"

    def release_names(self):
        """{split: the release's name of its files}: train, val and the chosen test set."""
        return dict(RELEASE_NAMES, test=self.settings.test_set)

    def split_files(self, text_dir, split):
        name = self.release_names()[split]
        return tuple(release_file(text_dir, f"{name}.{language}")
                     for language in (self.source_language, self.target_language))

    def expected_files_note(self):
        languages = f"{{{self.source_language},{self.target_language}}}"
        files = ", ".join(f"{name}.{languages}" for name in self.release_names().values())
        return (f"the Multi30K release's files {files} (the last named by the test_set setting; each plain or "
                "gzipped, .gz: UTF-8 text, one sentence per line, the two files of a set line-aligned)")


@register_problem
class Multi30kEnde(Multi30k):
    """Multi30K English-German (Elliott et al., 2016): M/{train,val,test_2016_flickr}.{en,de}[.gz]."""

    name = "multi30k_ende"
    target_language = "de"


@register_problem
class Multi30kEnfr(Multi30k):
    """Multi30K English-French (Elliott et al., 2017): M/{train,val,test_2016_flickr}.{en,fr}[.gz]."""

    name = "multi30k_enfr"
    target_language = "fr"


@register_problem
class Multi30kEncs(Multi30k):
    """Multi30K English-Czech (Barrault et al., 2018): M/{train,val,test_2016_flickr}.{en,cs}[.gz]."""

    name = "multi30k_encs"
    target_language = "cs"
