"""The paper's English constituency parsing problems (section 6.3, Table 4): WSJ only, and semi-supervised.

Both read the Penn Treebank's WSJ .mrg files from `--manual_dir` (`DIR/NN/wsj_NNnn.mrg`, sections 02-21
train, 22 dev, 23 test); see `t2t_repro.data.parsing`. Their one setting, `target_tags`, is section 6.3's
target by default (a part-of-speech tag where each word stands); `--problem_overrides=target_tags=words` writes the
words themselves there instead, as ptb_sample_parsing does by default (docs/parsing.md).
"""

import dataclasses
import itertools
import os

from t2t_repro.data import ptb_tree
from t2t_repro.data.parsing import KEEP_TAGS, ParsingProblem, target_tags_setting
from t2t_repro.errors import UserError
from t2t_repro.evaluate.scorers import tree_scorer
from t2t_repro.registry import register_problem
from t2t_repro.settings import check_fields

SILVER_SUBDIR = "silver"


@dataclasses.dataclass(frozen=True)
class WsjParsingSettings:
    """The form of the target trees: section 6.3's tags by default."""

    target_tags: str = target_tags_setting(KEEP_TAGS, "; one shared vocabulary either way")

    def __post_init__(self):
        check_fields(self, "problem wsj_parsing setting")


@register_problem
class WsjParsing(ParsingProblem):
    """WSJ constituency parsing, Penn Treebank only (~40K trees), 16K vocabulary; test section 23.

    Section 6.3: a 4-layer Transformer trained on the WSJ part of the Penn Treebank, about 40K training
    sentences, with a 16K-token vocabulary in the WSJ-only setting (F1 91.3 on section 23, Table 4).
    """

    name = "wsj_parsing"
    scorer = property(tree_scorer)
    settings_class = WsjParsingSettings
    vocab_size = 16_000
    vocab_sample_sentences = 2_000_000  # more than the ~80K sentences of both sides: the whole train split
    train_shards = 4


@register_problem
class WsjParsingSemisup(ParsingProblem):
    """WSJ constituency parsing, semi-supervised: WSJ plus silver trees from DIR/silver/*.mrg, 32K vocabulary.

    Section 6.3: the semi-supervised setting adds the high-confidence and BerkeleyParser corpora (about 17M
    sentences) and uses a 32K-token vocabulary (F1 92.7, Table 4). Those corpora are not distributed; put the
    silver trees (PTB bracketed, one per line or .mrg style, any number of files) in `--manual_dir`'s
    `silver/` directory as `*.mrg` files. They are streamed into the train split after WSJ sections 02-21,
    in file-name order; dev and test stay WSJ sections 22 and 23.
    """

    name = "wsj_parsing_semisup"
    scorer = property(tree_scorer)
    settings_class = WsjParsingSettings
    vocab_size = 32_000
    vocab_sample_sentences = 2_000_000
    train_shards = 128

    def silver_files(self, manual_dir):
        """The sorted `*.mrg` files of `<manual_dir>/silver`; none is a UserError."""
        directory = os.path.join(os.fspath(manual_dir or "DIR"), SILVER_SUBDIR)
        try:
            names = sorted(name for name in os.listdir(directory) if name.lower().endswith(".mrg"))
        except OSError:
            names = []
        if not names:
            raise UserError(
                f"problem {self.name} needs silver trees: no *.mrg files in {directory} (pass --manual_dir=DIR "
                f"with the WSJ sections and DIR/{SILVER_SUBDIR}/*.mrg, PTB bracketed trees)"
            )
        return [os.path.join(directory, name) for name in names]

    def check_raw_data(self, tmp_dir, manual_dir):
        super().check_raw_data(tmp_dir, manual_dir)
        self.silver_files(manual_dir)

    def raw_pairs(self, split, tmp_dir, manual_dir):
        wsj = super().raw_pairs(split, tmp_dir, manual_dir)
        if split != "train":
            return wsj
        silver = (
            self.tree_pair(tree)
            for path in self.silver_files(manual_dir)
            for tree in ptb_tree.iter_treebank_file(path)
        )
        return itertools.chain(wsj, silver)
