"""The embedded problems, made by code: no download and no data to supply (toy_ende, toy_parsing).

They follow exactly the code paths of the paper's problems: toy_ende is a TranslationProblem reading local
parallel text files, like wmt_ende with --manual_dir, and toy_parsing is a ParsingProblem reading WSJ-layout
.mrg files, like wsj_parsing. Only the directory they read is generated, from a fixed seed, under `--tmp_dir`
(or, without one, `<system temporary directory>/t2t_repro`), and reused by later runs. The generators are
`t2t_repro.data.toy.language` and `t2t_repro.data.toy.grammar`; `tools/toy_baselines.py` scores the trivial
baselines toy_ende must be far above.
"""

import os
import tempfile

from t2t_repro.data.toy import grammar as toy_grammar, language as toy_language, lexicon as toy_lexicon
from t2t_repro import safe_write
from t2t_repro.data.parsing import ParsingProblem
from t2t_repro.data.text_problem import source_digest
from t2t_repro.data.translation import TranslationProblem
from t2t_repro.evaluate.scorers import BleuScorer, tree_scorer
from t2t_repro.registry import register_problem

STAMP_FILE = "generator.txt"


def generated_dir(tmp_dir, name):
    """Where a generated corpus lives: `tmp_dir/name`, or `<system temporary directory>/t2t_repro/name`."""
    base = os.fspath(tmp_dir) if tmp_dir else os.path.join(tempfile.gettempdir(), "t2t_repro")
    return os.path.join(base, name)


def generator_digest():
    """A version of the toy generators: a digest of their source code."""
    return source_digest([module.__file__ for module in (toy_lexicon, toy_grammar, toy_language)])


def build_once(directory, arguments, write):
    """Returns `directory` after building it once: `write(work)` fills a fresh directory beside it, which is
    renamed into place with a stamp naming `arguments` and a hash of the generators' source code. A directory
    with the same stamp is reused at once; anything else there (an interrupted build, one by older code) is
    replaced; what this project did not make is refused (`safe_write.check_replaceable`). If another process
    publishes the same build meanwhile, that one is kept."""
    directory = os.path.abspath(os.fspath(directory))
    stamp = f"{arguments} generator={generator_digest()}\n"
    if _read_stamp(directory) == stamp:
        return directory
    safe_write.check_replaceable(directory, _read_stamp, remedy="name another --tmp_dir")
    work = safe_write.temporary_directory_beside(directory)
    try:
        write(work)
        safe_write.write_file(os.path.join(work, STAMP_FILE), stamp)
        safe_write.publish_directory(work, directory, legacy=_read_stamp)
    except OSError:
        if _read_stamp(directory) != stamp:
            raise
    finally:
        safe_write.remove(work)
    return directory


def _read_stamp(directory):
    try:
        with open(os.path.join(directory, STAMP_FILE), encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None


def _generate_once(problem, tmp_dir, write):
    """Runs write(directory, seed, num_train, num_dev, num_test) once for a toy problem; returns the directory."""
    arguments = (problem.seed, problem.num_train, problem.num_dev, problem.num_test)
    directory = generated_dir(tmp_dir, f"{problem.name}_seed{problem.seed}")
    return build_once(directory, f"{problem.name} {arguments}", lambda work: write(work, *arguments))


class _GeneratedData:
    """Mixin of the toy problems: their data also depends on the generators' code, so a change there makes
    `data_version` differ and the problem's data is regenerated (as its raw text is, by `build_once`)."""

    def data_version(self):
        return dict(super().data_version(), generator=generator_digest())


@register_problem
class ToyEnde(_GeneratedData, TranslationProblem):
    """Embedded EN->DE-like translation made by code: 100K pairs (reordering, agreement, compounds), 8K BPE.

    A seeded synthetic language pair (`t2t_repro.data.toy.language`): verb-second and verb-final word order,
    gender, case and adjective agreement, noun compounds (some hyphenated), a few thousand words, sentences
    of 3-50 tokens; 100,000 train, 2,000 dev and 2,000 test pairs. Copying the source scores about 0 BLEU
    and a word-by-word dictionary translation about 13 (`tools/toy_baselines.py`).
    """

    name = "toy_ende"
    source_language = "en"
    target_language = "de"
    scorer = BleuScorer("de")
    vocab_size = 8_000
    vocab_model_type = "bpe"
    train_shards = 4
    seed = 1
    num_train, num_dev, num_test = 100_000, 2_000, 2_000

    def raw_text_dir(self, tmp_dir, manual_dir):
        """Generates (once) and returns the directory of {train,dev,test}.{en,de}; `manual_dir` is not used."""
        return _generate_once(self, tmp_dir, toy_language.write_toy_corpus)


@register_problem
class ToyParsing(_GeneratedData, ParsingProblem):
    """Embedded constituency parsing made by code: ~44K Treebank-style trees in the WSJ layout, 4K BPE.

    Trees of a seeded probabilistic English grammar (`t2t_repro.data.toy.grammar`): nested subordinate,
    complement and relative clauses (with traces), prepositional phrases, compounds, coordination and
    punctuation, Penn Treebank labels, function tags and part-of-speech tags; 40,000 train (sections 02-21),
    1,700 dev (22) and 2,400 test (23) trees, as the WSJ split sizes. Every sentence has one correct tree.
    """

    name = "toy_parsing"
    scorer = property(tree_scorer)
    vocab_size = 4_000
    train_shards = 4
    seed = 1
    num_train, num_dev, num_test = 40_000, 1_700, 2_400

    def treebank_dir(self, tmp_dir, manual_dir):
        """Generates (once) and returns the WSJ-layout directory of .mrg files; `manual_dir` is not used."""
        return _generate_once(self, tmp_dir, toy_grammar.write_treebank)
