"""Penn Treebank trees: reading `.mrg` files, the standard clean-up for parsing, and the linearisation.

The parsing experiments (section 6.3) cast parsing as sequence-to-sequence translation, as in Vinyals, Kaiser
et al. 2014, "Grammar as a Foreign Language": the source is the sentence's words, the target the tree written
as bracket-label tokens. We keep the part-of-speech tags in the target, in the place of the words (the style of
that paper's Figure 1 and of tensor2tensor's WSJ problem):

    (S (NP (NNP John)) (VP (VBZ has) (NP (DT a) (NN dog))) (. .))
    -> (S (NP NNP )NP (VP VBZ (NP DT NN )NP )VP . )S

so `linearise` followed by `delinearise` onto the same words gives back the same tree, tags included, and a
decoded tree carries the tags that EVALB uses to drop punctuation. `linearise(tree, tags=False)` writes the
placeholder XX instead of each tag; `delinearise` reads both forms.

`delinearise` always returns a well-formed tree on exactly the input words, whatever the model emitted:
closers close the innermost open constituent (the opener's label wins over a mismatched closer's), surplus
closers are ignored, unclosed constituents are closed at the end, word slots beyond the sentence are dropped,
constituents left without words are pruned, and words the output has no slot for are attached, in order, at
the end of the sentence-level constituent. Output that is not one constituent is held together by a TOP node,
which EVALB does not score.
"""

import dataclasses
import logging
import os
import re

from t2t_repro.data.parallel_files import not_utf8_error
from t2t_repro.errors import UserError

PLACEHOLDER_TAG = "XX"
ROOT_LABEL = "TOP"
EMPTY_ELEMENT_TAG = "-NONE-"
# Tags of punctuation marks whose Treebank tag is fixed by the word form: given to words that the output has
# no tag for, so EVALB drops them from test trees as it does from gold trees.
PUNCTUATION_TAGS = {",": ",", ".": ".", "?": ".", "!": ".", ":": ":", ";": ":", "--": ":", "...": ":",
                    "``": "``", "''": "''"}
logger = logging.getLogger(__name__)
_TOKEN = re.compile(r"\(|\)|[^\s()]+")
_FUNCTION_TAG_SEPARATOR = re.compile(r"[-=]")


@dataclasses.dataclass
class Tree:
    """A constituent: a label and children. A preterminal has exactly one child, its word (a str)."""

    label: str
    children: list

    @classmethod
    def preterminal(cls, tag, word):
        return cls(tag, [word])

    def is_preterminal(self):
        return len(self.children) == 1 and isinstance(self.children[0], str)

    def preterminals(self):
        """The (tag, word) pairs of the sentence, left to right."""
        return [(node.label, node.children[0]) for event, node in walk(self) if event == LEAF]

    def words(self):
        return [word for _, word in self.preterminals()]

    def tags(self):
        return [tag for tag, _ in self.preterminals()]

    def to_ptb(self, escape=False):
        """The one-line Penn Treebank string, e.g. "(S (NP (NNP John)) (VP (VBZ runs)))". With `escape`, a
        bracket inside a label or word is written as the Treebank writes one, -LRB- or -RRB-, so that the line
        reads back (by EVALB too) with the same structure."""
        text = _escape_brackets if escape else str
        parts = []
        for event, node in walk(self):
            if event == CLOSE:
                parts.append(")")
                continue
            if parts:
                parts.append(" ")
            label = text(node.label)
            parts.append(f"({label}" if event == OPEN else f"({label} {text(node.children[0])})")
        return "".join(parts)

    def __str__(self):
        return self.to_ptb()


OPEN, LEAF, CLOSE = "open", "leaf", "close"


def _escape_brackets(text):
    return text.replace("(", "-LRB-").replace(")", "-RRB-")


def walk(tree):
    """Yields (OPEN, node), (LEAF, preterminal) and (CLOSE, node) events in reading order, without recursion."""
    stack = [(tree, False)]
    while stack:
        node, closing = stack.pop()
        if closing:
            yield CLOSE, node
        elif node.is_preterminal():
            yield LEAF, node
        else:
            yield OPEN, node
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(node.children))


# Reading ------------------------------------------------------------------------------------------------------


def iter_trees(lines, source="<string>"):
    """Yields every bracketed tree in `lines` (an iterable of lines: one tree per line or spread over lines, as
    in .mrg files), one at a time, so a corpus of any size streams in flat memory.

    Lines starting with "*x*" between trees (the Treebank's copyright headers) are skipped. A malformed tree
    raises UserError naming `source` and the line."""
    frames = []  # open constituents: [label or None, children, word or None, line]
    for line_number, line in enumerate(lines, start=1):
        if not frames and line.startswith("*x*"):
            continue
        for match in _TOKEN.finditer(line):
            token = match.group()
            where = f"{source}:{line_number}"
            if token == "(":
                if frames and frames[-1][2] is not None:
                    raise UserError(f"{where}: constituent ({frames[-1][0]} {frames[-1][2]} ...) has both a word "
                                    "and sub-constituents")
                if frames and frames[-1][0] is None:
                    frames[-1][0] = ""
                frames.append([None, [], None, line_number])
            elif token == ")":
                if not frames:
                    raise UserError(f"{where}: unbalanced brackets: ')' without a matching '('")
                label, children, word, _ = frames.pop()
                label = label or ""
                if word is not None:
                    node = Tree.preterminal(label, word)
                elif children:
                    node = Tree(label, children)
                else:
                    raise UserError(f"{where}: empty constituent '({label})'")
                if frames:
                    frames[-1][1].append(node)
                else:
                    yield node
            elif not frames:
                raise UserError(f"{where}: text {token!r} outside any tree")
            elif frames[-1][0] is None:
                frames[-1][0] = token
            elif frames[-1][1]:
                raise UserError(f"{where}: word {token!r} beside sub-constituents in ({frames[-1][0]} ...)")
            elif frames[-1][2] is not None:
                raise UserError(f"{where}: more than one word in ({frames[-1][0]} {frames[-1][2]} {token} ...)")
            else:
                frames[-1][2] = token
    if frames:
        raise UserError(f"{source}:{frames[0][3]}: unbalanced brackets: the tree opened here is never closed")


def parse_trees(text, source="<string>"):
    """Every tree in a string (see `iter_trees`), as a list."""
    return list(iter_trees(text.splitlines(), source))


def parse_tree(text, source="<string>"):
    """Parses a string that holds exactly one tree."""
    trees = parse_trees(text, source)
    if len(trees) != 1:
        raise UserError(f"{source}: expected one tree, found {len(trees)}")
    return trees[0]


def iter_lines(path, errors="strict"):
    """Streams a tree file's lines, each without its newline. Lines end at "\n" only (as C's fgets reads
    them, so a stray carriage return or form feed stays inside its line). A line that is not valid UTF-8 is a
    UserError naming the file and line ("strict", what datagen reads: every tool refuses text it would have to
    guess at), or, with errors="surrogateescape" (EVALB, which compares trees as evalb.c does, byte for byte),
    is read with its bytes kept and a warning naming the file and line. An unreadable file raises UserError."""
    name = os.fspath(path)
    try:
        with open(path, "rb") as f:
            for number, raw in enumerate(f, start=1):
                raw = raw[:-1] if raw.endswith(b"\n") else raw
                try:
                    yield raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    if errors == "strict":
                        raise not_utf8_error(f"{name}:{number}", raw, error) from None
                    logger.warning("%s:%d: invalid UTF-8 (byte 0x%02x at column %d); the bad bytes are kept as they "
                                   "are", name, number, raw[error.start], error.start + 1)
                    yield raw.decode("utf-8", errors)
    except OSError as error:
        raise UserError(f"cannot read tree file {name}: {error.strerror}") from error


def read_text(path):
    """A tree file's text (see `iter_lines`); an unreadable file raises UserError."""
    return "\n".join(iter_lines(path))


def read_trees(path):
    """Every tree of a file (a .mrg file or one tree per line), as written (no clean-up)."""
    return list(iter_trees(iter_lines(path), source=os.fspath(path)))


def iter_treebank_file(path):
    """Streams the cleaned trees of a Treebank file (see `clean_tree`), skipping trees with no words."""
    for tree in iter_trees(iter_lines(path), source=os.fspath(path)):
        tree = clean_tree(tree)
        if tree is not None:
            yield tree


# Clean-up for parsing -----------------------------------------------------------------------------------------


def strip_function_tags(label):
    """NP-SBJ-1 -> NP, NP=2 -> NP; labels that start with '-' (-NONE-, -LRB-) are kept whole."""
    if label.startswith("-"):
        return label
    return _FUNCTION_TAG_SEPARATOR.split(label, maxsplit=1)[0]


def clean_tree(tree):
    """The standard preparation of a Treebank tree for parsing: drop -NONE- empty elements (traces), prune the
    constituents left without words, strip function tags and indices from labels, and remove the unlabelled
    (or TOP) wrapper around a single constituent. Returns None when no word is left."""
    node = _clean(tree)
    while node is not None and node.label in ("", ROOT_LABEL) and len(node.children) == 1 \
            and not node.is_preterminal() and not node.children[0].is_preterminal():
        node = node.children[0]
    if node is not None and node.label == "":
        node.label = ROOT_LABEL
    return node


def _clean(tree):
    """A copy of `tree` without -NONE- elements, constituents left empty or function tags; None if nothing is
    left. Iterative, so any depth is fine."""
    kept = [[]]  # the kept children of each open constituent, the outermost first
    for event, node in walk(tree):
        if event == OPEN:
            kept.append([])
        elif event == LEAF:
            if node.label != EMPTY_ELEMENT_TAG:
                kept[-1].append(Tree.preterminal(node.label, node.children[0]))
        else:
            children = kept.pop()
            if children:
                kept[-1].append(Tree(strip_function_tags(node.label), children))
    return kept[0][0] if kept[0] else None


def read_treebank_file(path):
    """The cleaned trees of a Treebank file (see `clean_tree`), skipping trees with no words."""
    return list(iter_treebank_file(path))


# Linearisation ------------------------------------------------------------------------------------------------


def linearise(tree, tags=True, words=False):
    """The tree as bracket-label tokens: "(NP" opens, ")NP" closes, and each word is replaced by its
    part-of-speech tag (or by PLACEHOLDER_TAG with tags=False), or, with words=True, is written itself.
    Returns a list of tokens."""
    tokens = []
    for event, node in walk(tree):
        if event == OPEN:
            tokens.append("(" + node.label)
        elif event == LEAF:
            tokens.append(node.children[0] if words else node.label if tags else PLACEHOLDER_TAG)
        else:
            tokens.append(")" + node.label)
    return tokens


def is_opener(token):
    return len(token) > 1 and token[0] == "("


def is_closer(token):
    return token[:1] == ")"


def looks_linearised(text):
    """True when `text` reads as a linearised tree (labelled closers such as ")NP") rather than a PTB string."""
    return any(is_closer(token) and len(token) > 1 and token[1] != ")" for token in text.split())


def delinearise(tokens, words, tags=None, leaf_words=False):
    """Builds a well-formed tree on `words` from linearised `tokens` (a list or a space-separated string),
    repairing whatever is broken (see the module docstring). Each word's tag is its slot's token. Where the
    slot holds the placeholder XX or the output has no slot for the word, the tag comes from `tags` (one per
    word) when given, else from PUNCTUATION_TAGS for a punctuation mark, else it is XX. With `leaf_words`
    (`linearise(..., words=True)`), every token but a bracket is a slot holding the placeholder."""
    if isinstance(tokens, str):
        tokens = tokens.split()
    if leaf_words:
        tokens = [token if is_opener(token) or is_closer(token) else PLACEHOLDER_TAG for token in tokens]
    words = list(words)
    if tags is not None and len(tags) != len(words):
        raise ValueError(f"{len(tags)} tags for {len(words)} words")
    root = Tree(ROOT_LABEL, [])
    stack = [root]
    position = 0
    for token in tokens:
        if is_opener(token):
            node = Tree(token[1:], [])
            stack[-1].children.append(node)
            stack.append(node)
        elif is_closer(token):
            if len(stack) > 1:
                _close(stack)
        elif token != "(" and position < len(words):
            tag = token if token != PLACEHOLDER_TAG else _fill_in_tag(words, tags, position)
            stack[-1].children.append(Tree.preterminal(tag, words[position]))
            position += 1
    while len(stack) > 1:
        _close(stack)
    top = root.children[0] if len(root.children) == 1 and not root.children[0].is_preterminal() else root
    for index in range(position, len(words)):
        top.children.append(Tree.preterminal(_fill_in_tag(words, tags, index), words[index]))
    return top


def _fill_in_tag(words, tags, index):
    if tags is not None:
        return tags[index]
    return PUNCTUATION_TAGS.get(words[index], PLACEHOLDER_TAG)


def _close(stack):
    """Closes the innermost open constituent; one left without words is removed from its parent."""
    node = stack.pop()
    if not node.children:
        stack[-1].children.pop()
