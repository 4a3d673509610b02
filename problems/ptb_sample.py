"""Constituency parsing on the Penn Treebank sample NLTK distributes (WSJ files wsj_0001-0199), read from a user's
copy: the zip as distributed or its combined/ folder (`t2t_repro.data.nltk_treebank`).

    t2t-repro-trainer --problem=ptb_sample_parsing --hparams=transformer_parsing_small --manual_dir=DIR \\
        --data_dir=D --output_dir=O

Trees are cleaned as WSJ is for section 6.3 (`ptb_tree.clean_tree`: traces, empty constituents and function
tags removed), linearised as wsj_parsing's, and scored by the built-in EVALB with COLLINS.prm. The split is by
file, never by tree: files 1-159 train (3,396 trees), 160-179 dev (273), 180-199 test (245), each settable as
ranges. The sample is about a twelfth of WSJ's training trees, so its figures are not comparable with Table 4's.
"""

import dataclasses

from t2t_repro.data import nltk_treebank
from t2t_repro.data.parsing import WORD_LEAVES, ParsingProblem, target_tags_setting
from t2t_repro.data.problem import SPLITS
from t2t_repro.data.text_problem import source_digest
from t2t_repro.errors import UserError
from t2t_repro.evaluate.scorers import tree_scorer
from t2t_repro.registry import register_problem
from t2t_repro.settings import check_fields, setting

_FILES_HELP = "file numbers of the {} split, as ranges of wsj_NNNN.mrg numbers (e.g. {}); no file in two splits"


@dataclasses.dataclass(frozen=True)
class PtbSampleSettings:
    """The split by file, the vocabularies and the form of the target trees of ptb_sample_parsing."""

    train_files: str = setting("1-159", _FILES_HELP.format("train", "1-159 or 1-99+120-159"))
    dev_files: str = setting("160-179", _FILES_HELP.format("dev (model choice, never test)", "160-179"))
    test_files: str = setting("180-199", _FILES_HELP.format("test", "180-199"))
    source_vocab_size: int = setting(4000, "the words' vocabulary's size, BPE pieces (with target_tags=words the one "
                                                   "vocabulary of both sides)")
    target_tags: str = target_tags_setting(WORD_LEAVES, "; with words one vocabulary of both sides of "
                                                        "source_vocab_size pieces, else a vocabulary per side")

    def __post_init__(self):
        check_fields(self, "problem ptb_sample_parsing setting")
        nltk_treebank.check_disjoint(self.file_ranges())

    def file_ranges(self):
        """{split setting name: (its text, its file numbers)}."""
        return {f"{split}_files": (getattr(self, f"{split}_files"),
                                   nltk_treebank.parse_file_ranges(getattr(self, f"{split}_files"), f"{split}_files"))
                for split in SPLITS}


@register_problem
class PtbSampleParsing(ParsingProblem):
    """Penn Treebank sample (NLTK's, 3,914 WSJ trees) split by file: 1-159 train, 160-179 dev, 180-199 test."""

    name = "ptb_sample_parsing"
    scorer = property(tree_scorer)
    settings_class = PtbSampleSettings
    vocab_sample_sentences = 2_000_000  # more than the sample holds: all of train
    train_shards = 2
    # With tags (or XX) for words the targets are tree symbols only, and a vocabulary of their own keeps the
    # softmax small: brackets and tags are fixed single pieces, and SentencePiece adds pieces only for the rare
    # labels outside the Treebank's set; the vocabulary takes what the train trees give. With the words
    # themselves in the tree both sides share one vocabulary, so that a word is the same pieces on both.
    vocab_size = target_vocab_size = 400
    source_vocab_size = property(lambda self: self.settings.source_vocab_size)
    shared_vocabulary = property(lambda self: self.words_in_target)

    def vocab_size_setting(self, side):
        """The one vocabulary of the words in the tree is sized by source_vocab_size, the words' setting."""
        return "source_vocab_size" if side == "shared" else super().vocab_size_setting(side)

    def data_version(self):
        return dict(super().data_version(), reader=source_digest([nltk_treebank.__file__]))

    def sample(self, manual_dir):
        return nltk_treebank.TreebankSample(manual_dir)

    def split_files(self, sample, split):
        """The file numbers of `split`, each checked to be in `sample`."""
        name = f"{split}_files"
        numbers = self.settings.file_ranges()[name][1]
        sample.check_present(numbers, f"problem {self.name} {name}={getattr(self.settings, name)}")
        return numbers

    def source_files(self, tmp_dir, manual_dir):
        return self.sample(manual_dir).source_files()

    def check_raw_data(self, tmp_dir, manual_dir):
        """Reads every tree of every split once before anything is written: a missing or unreadable file, a
        malformed tree or a split without trees is a UserError."""
        sample = self.sample(manual_dir)
        for split in SPLITS:
            numbers = self.split_files(sample, split)
            if not sum(1 for number in numbers for _ in sample.trees(number)):
                raise UserError(f"problem {self.name}: the {split} split ({split}_files="
                                f"{getattr(self.settings, f'{split}_files')}) holds no tree with words")

    def raw_pairs(self, split, tmp_dir, manual_dir):
        sample = self.sample(manual_dir)
        for number in self.split_files(sample, split):
            for tree in sample.trees(number):
                yield self.tree_pair(tree)
