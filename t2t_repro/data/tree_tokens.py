"""The ids of a linearised tree's symbols in a parsing problem's vocabularies: what a decoder needs to extend only
hypotheses that can still become a tree (`t2t_repro.decode.tree_constraint`).

    tokens = TreeTokens.from_vocabularies(vocabularies)
    tokens.openers[i], tokens.closers[i]   # "(NP" and its ")NP", each one target piece
    tokens.slots                           # the part-of-speech tags and XX: a word's place
    tokens.word_starts                     # source pieces that begin a word ("▁..."): a sentence's word count

Only symbols that are single pieces of the target vocabulary take part (the parsing problems make every bracket
token of the Treebank's label set and every tag one, `ParsingProblem.vocab_user_symbols`); a label outside the set
is spelled in several pieces and cannot be produced under the constraint.
"""

import dataclasses

from t2t_repro.data.ptb_tree import PLACEHOLDER_TAG

WORD_BOUNDARY = "\u2581"  # SentencePiece's whitespace marker


@dataclasses.dataclass(frozen=True)
class TreeTokens:
    """Target ids by role and source ids that start a word; tuples, so that it is hashable (a decoder's key).

    Args:
        target_vocab_size, source_vocab_size: the vocabularies' sizes.
        openers: ids of "(LABEL" pieces, each with its closer at the same index of `closers`.
        closers: ids of ")LABEL" pieces.
        slots: ids of the tags (and XX) that stand for one word each.
        word_starts: source ids whose piece starts with SentencePiece's word boundary.
    """

    target_vocab_size: int
    source_vocab_size: int
    openers: tuple
    closers: tuple
    slots: tuple
    word_starts: tuple

    @classmethod
    def from_vocabularies(cls, vocabularies, labels, tags):
        """The tokens of `labels` (phrase labels) and `tags` (part-of-speech tags; XX is added) that are single
        pieces of `vocabularies.target`, and the word-starting pieces of `vocabularies.source`."""
        target, source = vocabularies.target, vocabularies.source
        piece_ids = {target.id_to_piece(i): i for i in range(target.vocab_size)}
        openers, closers = [], []
        for label in labels:
            opener, closer = (piece_ids.get(WORD_BOUNDARY + mark + label) for mark in "()")
            if opener is not None and closer is not None:
                openers.append(opener)
                closers.append(closer)
        slots = [piece_ids[WORD_BOUNDARY + tag] for tag in (*tags, PLACEHOLDER_TAG) if WORD_BOUNDARY + tag in piece_ids]
        word_starts = [i for i in range(source.vocab_size) if source.id_to_piece(i).startswith(WORD_BOUNDARY)]
        return cls(target.vocab_size, source.vocab_size, tuple(openers), tuple(closers), tuple(slots),
                   tuple(word_starts))
