"""ParsingProblem: constituency parsing as translation from words to linearised trees, scored by EVALB F1.

Section 6.3 of the paper trains the Transformer on the Wall Street Journal part of the Penn Treebank. Each
example is one cleaned tree (`t2t_repro.data.ptb_tree.clean_tree`: traces and function tags removed):

    source: John has a dog .
    target: (S (NP NNP )NP (VP VBZ (NP DT NN )NP )VP . )S

The treebank is read from `treebank_dir(tmp_dir, manual_dir)` (by default `--manual_dir`), laid out as LDC
distributes it (treebank_3/parsed/mrg/wsj): `<dir>/<NN>/wsj_<NNnn>.mrg`, sections 02-21 train, 22 dev and 23
test. Decoding uses beam 21, alpha 0.3 and at most input length + 300 tokens (section 6.3); the decoded
sequence is de-linearised onto the source words (always a well-formed tree) and scored with labelled bracket
F1 under EVALB's COLLINS.prm conventions (`t2t_repro.evaluate.evalb`).
"""

import os
import re

from t2t_repro.data import ptb_tree
from t2t_repro.data.text_problem import TextPairProblem
from t2t_repro.data.tree_tokens import WORD_BOUNDARY, TreeTokens
from t2t_repro.decode_settings import PARSING_DECODE_SETTINGS
from t2t_repro.errors import UserError
from t2t_repro.settings import setting

WSJ_SECTIONS = {"train": tuple(range(2, 22)), "dev": (22,), "test": (23,)}

# The Penn Treebank's phrase labels (function tags stripped) plus TOP, and its part-of-speech tags.
PHRASE_LABELS = (
    "ADJP", "ADVP", "CONJP", "FRAG", "INTJ", "LST", "NAC", "NP", "NX", "PP", "PRN", "PRT", "QP", "RRC", "S",
    "SBAR", "SBARQ", "SINV", "SQ", "UCP", "VP", "WHADJP", "WHADVP", "WHNP", "WHPP", "X", "TOP",
)
POS_TAGS = (
    "CC", "CD", "DT", "EX", "FW", "IN", "JJ", "JJR", "JJS", "LS", "MD", "NN", "NNS", "NNP", "NNPS", "PDT", "POS",
    "PRP", "PRP$", "RB", "RBR", "RBS", "RP", "SYM", "TO", "UH", "VB", "VBD", "VBG", "VBN", "VBP", "VBZ", "WDT",
    "WP", "WP$", "WRB", "#", "$", ".", ",", ":", "``", "''", "-LRB-", "-RRB-",
)


def _section_name(section):
    return f"{section:02d}"


def _section_files(tree_dir, section):
    """The sorted .mrg files of one WSJ section directory (wsj_NNnn.mrg, any case)."""
    name = _section_name(section)
    directory = os.path.join(tree_dir, name)
    pattern = re.compile(rf"wsj_{name}\d\d\.mrg", re.IGNORECASE)
    try:
        entries = sorted(os.listdir(directory))
    except OSError:
        return []
    return [os.path.join(directory, entry) for entry in entries if pattern.fullmatch(entry)]


# What stands in a linearised tree where each word is (the target_tags setting; see `target_tags_setting`).
KEEP_TAGS, PLACEHOLDER_TAGS, WORD_LEAVES = "keep", "placeholder", "words"
_TARGET_TAGS_HELP = (
    "what stands in a linearised tree for each word: keep, its part-of-speech tag (section 6.3's target, after "
    "Vinyals, Kaiser et al. 2014); placeholder, the one symbol XX (the output tree then gets punctuation tags from "
    "the word forms and XX elsewhere); words, the word itself, in the source's pieces (the output tree's tags as "
    "with placeholder; no tag symbol in the vocabulary, so none cuts a source word such as INC. at IN)")


def target_tags_setting(default, note=""):
    """The `target_tags` field of a parsing problem's settings, defaulting to `default`; `note` ends its help."""
    return setting(default, _TARGET_TAGS_HELP + note, choices=(KEEP_TAGS, PLACEHOLDER_TAGS, WORD_LEAVES))


class ParsingProblem(TextPairProblem):
    """English constituency parsing on Penn Treebank trees: words in, linearised tree out, scored by F1."""

    decode_settings = PARSING_DECODE_SETTINGS
    vocab_model_type = "bpe"
    split_sections = WSJ_SECTIONS
    # Decoding opens at most this many brackets in a row (a unary chain, e.g. "(S (NP (NP (QP"): the Penn
    # Treebank sample's 3,914 cleaned trees have at most 6, and an undertrained model would otherwise spend its
    # whole length budget on chains of one label.
    max_openers_in_a_row = 8

    @property
    def target_tags(self):
        """What the targets write where a word stands: the problem's target_tags setting, where it has one (the
        tags, KEEP_TAGS, for a problem without)."""
        return getattr(self.settings, "target_tags", KEEP_TAGS)

    words_in_target = property(lambda self: self.target_tags == WORD_LEAVES)  # ptb_tree.linearise(words=True)
    # The slot symbols the targets write: a tag, XX, or none where the words themselves stand in the tree.
    slot_tags = property(lambda self: {KEEP_TAGS: POS_TAGS, PLACEHOLDER_TAGS: (ptb_tree.PLACEHOLDER_TAG,),
                                       WORD_LEAVES: ()}[self.target_tags])

    @property
    def postprocess_note(self):
        if self.words_in_target:
            return ("decoded linearised trees, the words in place of tags, are put onto the source words: "
                    "t2t_repro.data.ptb_tree.delinearise(output, source.split(), leaf_words=True).to_ptb(escape=True)")
        return ("decoded linearised trees are put onto the source words: "
                "t2t_repro.data.ptb_tree.delinearise(output, source.split()).to_ptb(escape=True)")

    def tree_pair(self, tree):
        """The (source, target) texts of one cleaned tree: its words, and its linearisation with the part-of-speech
        tags, XX or the words themselves where each word stands, as the target_tags setting says."""
        target = ptb_tree.linearise(tree, tags=self.target_tags == KEEP_TAGS, words=self.words_in_target)
        return " ".join(tree.words()), " ".join(target)

    def treebank_dir(self, tmp_dir, manual_dir):
        """The directory holding `<NN>/wsj_<NNnn>.mrg`; by default the user's --manual_dir."""
        return manual_dir

    def _layout(self, tree_dir):
        ranges = []
        for split, sections in self.split_sections.items():
            first, last = _section_name(sections[0]), _section_name(sections[-1])
            ranges.append(f"{first}-{last} {split}" if len(sections) > 1 else f"{first} {split}")
        return f"{os.path.join(tree_dir, 'NN', 'wsj_NNnn.mrg')} (sections {', '.join(ranges)})"

    def treebank_files(self, split, tmp_dir, manual_dir):
        """The .mrg files of a split, in section and file order; missing data raises UserError saying exactly
        which files are expected where."""
        tree_dir = self.treebank_dir(tmp_dir, manual_dir)
        if tree_dir is None:
            raise UserError(
                f"problem {self.name} reads the Penn Treebank WSJ .mrg files: pass --manual_dir=DIR with "
                f"{self._layout('DIR')}, as in LDC's treebank_3/parsed/mrg/wsj"
            )
        tree_dir = os.fspath(tree_dir)
        files, missing = [], []
        for section in self.split_sections[split]:
            section_files = _section_files(tree_dir, section)
            if not section_files:
                missing.append(_section_name(section))
            files += section_files
        if missing:
            if len(missing) == len(self.split_sections[split]) > 1:
                missing = [f"{missing[0]}-{missing[-1]}"]
            raise UserError(
                f"problem {self.name}: no wsj_NNnn.mrg files for {split} section(s) {', '.join(missing)} under "
                f"{tree_dir}; expected {self._layout(tree_dir)}"
            )
        return files

    def check_raw_data(self, tmp_dir, manual_dir):
        for split in self.split_sections:
            self.treebank_files(split, tmp_dir, manual_dir)

    def raw_pairs(self, split, tmp_dir, manual_dir):
        for path in self.treebank_files(split, tmp_dir, manual_dir):
            for tree in ptb_tree.iter_treebank_file(path):
                yield self.tree_pair(tree)

    def vocab_user_symbols(self):
        """Every bracket token of the Treebank's label set and every slot symbol the targets write (its tags, or
        XX), each kept as one piece. The symbols carry SentencePiece's word-boundary mark, so a target token is
        one piece (not a boundary piece plus the token) and a source word is cut at a tag's letters only where it
        begins with them (`INC.` is `▁IN C .`, `CANNON` is not cut at `NN`; with the words in the tree there is
        no tag symbol to cut at). Labels outside the set still encode, as several pieces."""
        tokens = [f"({label}" for label in PHRASE_LABELS] + [f"){label}" for label in PHRASE_LABELS]
        return tuple(WORD_BOUNDARY + token for token in tokens + list(self.slot_tags))

    def output_constraint(self, vocabularies):
        """The tree symbols' ids: decoders extend only hypotheses that can still become a tree with one tag per
        source word and balanced brackets (`t2t_repro.decode.tree_constraint`)."""
        return TreeTokens.from_vocabularies(vocabularies, PHRASE_LABELS, self.slot_tags, self.max_openers_in_a_row,
                                            words_in_target=self.words_in_target)

    def postprocess(self, decoded_text, source_text):
        """The decoded linearised tree, repaired and put onto the source words, as a PTB tree string; a bracket
        in a word is written -LRB- / -RRB- as the Treebank does, so that every output line reads back as a tree."""
        return ptb_tree.delinearise(decoded_text, source_text.split(),
                                    leaf_words=self.words_in_target).to_ptb(escape=True)
