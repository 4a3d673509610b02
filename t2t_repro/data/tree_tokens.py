"""The ids of a linearised tree's symbols in a parsing problem's vocabularies: what a decoder needs to extend only
hypotheses that can still become a tree (`t2t_repro.decode.tree_constraint`).

    tokens = TreeTokens.from_vocabularies(vocabularies, PHRASE_LABELS, POS_TAGS)
    tokens.openers[i], tokens.closers[i]   # "(NP" and its ")NP", each one target piece
    tokens.slots                           # the tags the targets write (or XX): a word's place
    tokens.word_starts                     # source pieces that begin a word ("▁..."): a sentence's word count
    tokens.fixed_tags                      # (source piece, tag id): a punctuation word and its tag

EVALB (COLLINS.prm) deletes the words whose tag is a punctuation tag (, : `` '' .) from both trees before it
compares them, and a sentence whose trees then differ in length is an error sentence, not scored. So the tags of
punctuation decide whether a sentence is scored at all. The Treebank tags these by their form (FORM_TAGS: ","
is always ",", "--" and ";" are ":", "?" is "."; "'" alone is punctuation only sometimes, and more often the
possessive POS). A decoder can then give a one-piece punctuation word its tag, every other word a tag EVALB
keeps, and leave "'" and words spelled in several pieces of punctuation characters only to the model.

Only symbols that are single pieces of the target vocabulary take part (the parsing problems make every bracket
token of the Treebank's label set and every slot symbol their targets write one, `ParsingProblem.vocab_user_symbols`);
a label outside the set is spelled in several pieces and cannot be produced under the constraint.
"""

import dataclasses

from t2t_repro.data.ptb_tree import PUNCTUATION_TAGS

WORD_BOUNDARY = "\u2581"  # SentencePiece's whitespace marker
# The tag of each punctuation form. Beyond PUNCTUATION_TAGS, the Penn Treebank sample tags every "`" (10) as ``
# and every "-" (4) as ":"; "'" is POS 63 times and '' 10 times, so it is left to the model.
FORM_TAGS = {**PUNCTUATION_TAGS, "`": "``", "-": ":"}
AMBIGUOUS_PUNCTUATION = ("'",)


@dataclasses.dataclass(frozen=True)
class TreeTokens:
    """Target ids by role and source ids that start a word; tuples, so that it is hashable (a decoder's key).

    Args:
        target_vocab_size, source_vocab_size: the vocabularies' sizes.
        openers: ids of "(LABEL" pieces, each with its closer at the same index of `closers`.
        closers: ids of ")LABEL" pieces.
        slots: ids of the tags (or of XX) that stand for one word each.
        word_starts: source ids whose piece starts with SentencePiece's word boundary.
        punctuation_slots: the slots whose tag EVALB deletes (the values of PUNCTUATION_TAGS).
        fixed_tags: (source id, slot id) pairs: a one-piece punctuation word and its tag.
        free_starts: source ids of the one-piece words whose tag the model chooses (AMBIGUOUS_PUNCTUATION).
        wordlike_pieces: source ids of pieces with a letter or digit: a word of several pieces without one (say
            "--" spelled "-" "-") is left to the model, any other gets a tag EVALB keeps.
        max_openers_in_a_row: the most brackets opened one after the other with no word between (0: any).
        words_in_target: the words themselves, in the source's pieces, stand where tags would (no slots).
    """

    target_vocab_size: int
    source_vocab_size: int
    openers: tuple
    closers: tuple
    slots: tuple
    word_starts: tuple
    punctuation_slots: tuple = ()
    fixed_tags: tuple = ()
    free_starts: tuple = ()
    wordlike_pieces: tuple = ()
    max_openers_in_a_row: int = 0
    words_in_target: bool = False

    @classmethod
    def from_vocabularies(cls, vocabularies, labels, tags, max_openers_in_a_row=0, words_in_target=False):
        """The tokens of `labels` (phrase labels) and `tags` that are single pieces of `vocabularies.target`, and
        the word-starting pieces of `vocabularies.source`. `tags` are the slot symbols the targets write: the
        part-of-speech tags, or XX alone where every word's tag is XX (then no punctuation word gets a tag of its
        own: a piece the model never wrote there would be forced on it), or none with `words_in_target` (one
        vocabulary for both sides; the decoder writes each source word's own pieces,
        `tree_constraint.allowed_tokens_with_words`)."""
        target, source = vocabularies.target, vocabularies.source
        piece_ids = {target.id_to_piece(i): i for i in range(target.vocab_size)}
        openers, closers = [], []
        for label in labels:
            opener, closer = (piece_ids.get(WORD_BOUNDARY + mark + label) for mark in "()")
            if opener is not None and closer is not None:
                openers.append(opener)
                closers.append(closer)
        slot_of = {tag: piece_ids[WORD_BOUNDARY + tag] for tag in tags if WORD_BOUNDARY + tag in piece_ids}
        source_pieces = [source.id_to_piece(i) for i in range(source.vocab_size)]
        word_starts = [i for i, piece in enumerate(source_pieces) if piece.startswith(WORD_BOUNDARY)]
        forms = {i: source_pieces[i][len(WORD_BOUNDARY):] for i in word_starts}
        fixed = tuple((i, slot_of[FORM_TAGS[form]]) for i, form in forms.items() if FORM_TAGS.get(form) in slot_of)
        free = tuple(i for i, form in forms.items() if form in AMBIGUOUS_PUNCTUATION)
        spelled = set(source.ordinary_ids())  # not the reserved ids, nor the bytes of characters it lacks
        wordlike = tuple(i for i in sorted(spelled) if any(c.isalnum() for c in source_pieces[i]))
        deleted = tuple(sorted({slot_of[tag] for tag in FORM_TAGS.values() if tag in slot_of}))
        return cls(target.vocab_size, source.vocab_size, tuple(openers), tuple(closers), tuple(slot_of.values()),
                   tuple(word_starts), deleted, fixed, free, wordlike, max_openers_in_a_row, words_in_target)
