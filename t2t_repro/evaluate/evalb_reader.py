"""One sentence read as evalb.c's `read_line` reads a line: its words, tags and brackets, without a tree.

EVALB does not build trees. It scans the line once, left to right:
- `(LABEL WORD)` is a terminal: the word counts towards the sentence length unless LABEL is in
  DELETE_LABEL_FOR_LENGTH, and it is dropped (word and all) when LABEL is in DELETE_LABEL, so bracket spans
  are counted over the words that remain. `(LABEL )` is a terminal with an empty word.
- any other `(LABEL` opens a bracket starting at the current word position, whatever LABEL is: the
  Treebank's unlabelled outer pair `( (S ...) )` is a bracket labelled "" (COLLINS.prm deletes TOP, not "");
- `)` closes the innermost open bracket at the current word position;
- terminals outside any bracket (`(DT a) (NN b)`, as in EVALB's own sample files) are words like any other.
Labels end at white space or a bracket; white space is C's (space, tab, newline, vertical tab, form feed,
carriage return), so other characters are part of words, as they are to evalb.c.

Brackets left open at the end of the line, or closed too often, make an error sentence ("Bracketing is
unbalanced"), as evalb.c counts them. Text that evalb.c cannot read at all (a word outside a terminal, or two
words in one bracket) makes evalb.c loop on its "Reading sentence" error until MAX_ERROR kills it, so it is
a UserError here. The scan is iterative: any depth reads in linear time.
"""

import dataclasses

from t2t_repro.errors import UserError

C_SPACE = frozenset(" \t\n\v\f\r")
_TERMINATORS = C_SPACE | {"(", ")"}


@dataclasses.dataclass(frozen=True)
class EvalbSentence:
    """A line as EVALB reads it. `brackets` are [start, end) spans over `words`, with labels as written (not
    yet cut at '-' or '='), in the order of their opening brackets; `length` counts the words for the length
    cutoff; `problems` are the error messages reading raised (unbalanced brackets)."""

    words: tuple
    tags: tuple
    brackets: tuple
    length: int
    problems: tuple = ()
    terminals: tuple = ()  # every (tag, word) of the line, deleted ones included


def _token_end(text, position):
    while position < len(text) and text[position] not in _TERMINATORS:
        position += 1
    return position


def read_sentence(text, params, where="<string>"):
    """Reads one line (`text`, without its newline) under EvalbParameters `params`."""
    words, tags, terminals, brackets, open_brackets, problems = [], [], [], [], [], []
    length = position = 0
    while position < len(text):
        char = text[position]
        if char in C_SPACE:
            position += 1
        elif char == "(":
            label_end = _token_end(text, position + 1)
            label = text[position + 1:label_end]
            word_start = label_end
            while word_start < len(text) and text[word_start] in C_SPACE:
                word_start += 1
            word_end = _token_end(text, word_start)
            if word_start > label_end and word_end < len(text) and text[word_end] == ")":
                word = text[word_start:word_end]
                terminals.append((label, word))
                length += label not in params.delete_labels_for_length
                if label not in params.delete_labels:
                    words.append(word)
                    tags.append(label)
                position = word_end + 1
            elif word_end > word_start and (word_end == len(text) or text[word_end] != "("):
                raise UserError(f"{where}: more than one element in the bracket ({label} {text[word_start:word_end]}"
                                " ...: evalb.c cannot read this line")
            else:
                open_brackets.append(len(brackets))
                brackets.append([len(words), None, label])
                position = label_end
        elif char == ")":
            if open_brackets:
                brackets[open_brackets.pop()][1] = len(words)
            else:
                problems.append("Bracketing unbalance (too many close bracket)")
            position += 1
        else:
            raise UserError(f"{where}: text {text[position:_token_end(text, position)]!r} outside a terminal "
                            "'(TAG word)': evalb.c cannot read this line")
    if open_brackets:
        problems.append("Bracketing is unbalanced (too many open bracket)")
    closed = tuple((start, end, label) for start, end, label in brackets if end is not None)
    return EvalbSentence(tuple(words), tuple(tags), closed, length, tuple(problems), tuple(terminals))
