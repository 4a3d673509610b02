"""Tree files as sentences for EVALB, and the one line a tree is written as for EVALB.

evalb.c reads one sentence per line: a blank line is a sentence without words (a skip sentence in the test
file), and bare terminals on a line (`(DT a) (NN b)`) are one sentence. Penn Treebank `.mrg` files spread
each tree over several lines, which evalb.c cannot read; converting them to one tree per line keeps the
unlabelled outer pair `( (S ...) )`, and so does the Treebank layout here. A file's layout:
- "lines": evalb.c's reading, every line one sentence;
- "treebank": each bracketed tree one sentence, whatever lines it spans; blank lines and `*x*` header lines
  between trees are not sentences;
- "auto" (default): "treebank" when a tree continues onto a next line, else "lines".
A test file may instead hold one linearised tree per line (as the decoder writes them, e.g.
"(S (NP NNP )NP (VP VBZ )VP . )S"): each is de-linearised onto its gold sentence's words and tags
(`t2t_repro.data.ptb_tree.delinearise`); a blank line stays blank, a skip sentence.
Lines are read as bytes split at "\\n" and decoded as UTF-8, bad bytes kept (so they compare as in C) with a
warning naming the file and line.
"""

import os
import re

from t2t_repro.data import ptb_tree
from t2t_repro.errors import UserError
from t2t_repro.evaluate.evalb_params import COLLINS
from t2t_repro.evaluate.evalb_reader import C_SPACE, read_sentence

LAYOUTS = ("auto", "lines", "treebank")
TEST_FORMATS = ("auto", "tree", "linearised")
_PIECE = re.compile(r"[()]|[^()" + re.escape("".join(sorted(C_SPACE))) + r"]+")
_LINES_HINT = " (--layout=lines reads every line as one sentence, as evalb.c does)"


def evalb_line(tree):
    """A Tree (or None: no parse) as the line written for EVALB: `Tree.to_ptb(escape=True)`, or blank."""
    return "" if tree is None else tree.to_ptb(escape=True)


def _spans_lines(lines):
    """True when a bracketed tree continues from one line onto the next."""
    depth = 0
    for line in lines[:-1]:
        if depth == 0 and line.startswith("*x*"):
            continue
        depth += line.count("(") - line.count(")")
        if depth > 0:
            return True
    return False


def _treebank_sentences(lines, source):
    """Each bracketed tree of `lines` on one line, its lines joined by a space."""
    sentences, pieces, depth, opened_at = [], [], 0, 0
    for number, line in enumerate(lines, start=1):
        if depth == 0 and line.startswith("*x*"):
            continue
        segment_start = 0
        for match in _PIECE.finditer(line):
            piece = match.group()
            if piece == "(":
                if depth == 0:
                    segment_start, opened_at = match.start(), number
                depth += 1
            elif piece == ")":
                if depth == 0:
                    raise UserError(f"{source}:{number}: ')' without a matching '('" + _LINES_HINT)
                depth -= 1
                if depth == 0:
                    pieces.append(line[segment_start:match.end()])
                    sentences.append(" ".join(pieces))
                    pieces = []
            elif depth == 0:
                raise UserError(f"{source}:{number}: text {piece!r} outside any tree" + _LINES_HINT)
        if depth > 0:
            pieces.append(line[segment_start:])
            segment_start = 0
    if depth > 0:
        raise UserError(f"{source}:{opened_at}: the tree opened here is never closed" + _LINES_HINT)
    return sentences


def _sentences(lines, layout, source):
    if layout == "auto":
        layout = "treebank" if _spans_lines(lines) else "lines"
    return lines if layout == "lines" else _treebank_sentences(lines, source)


def read_sentence_lines(path, layout="auto"):
    """The sentences of a tree file, one EVALB line each (see the module docstring for `layout`)."""
    return _sentences(list(ptb_tree.iter_lines(path, errors="surrogateescape")), layout, os.fspath(path))


def _delinearised(test_line, gold_line, params, where):
    if not test_line.strip():
        return ""
    terminals = [(tag, word) for tag, word in read_sentence(gold_line, params, where).terminals
                 if tag != ptb_tree.EMPTY_ELEMENT_TAG]
    tree = ptb_tree.delinearise(test_line, [word for _, word in terminals], [tag for tag, _ in terminals])
    return evalb_line(tree)


def load_evalb_files(gold_path, test_path, test_format="auto", layout="auto", params=COLLINS):
    """(gold lines, test lines) to score with `evalb.evaluate_lines`: the gold file's sentences, and the test
    file's, de-linearised onto the gold sentences when it holds linearised trees, one per line
    (`test_format` "auto": when it has labelled closers such as ")NP")."""
    gold = read_sentence_lines(gold_path, layout)
    if not gold:
        raise UserError(f"{os.fspath(gold_path)} holds no sentences")
    test = list(ptb_tree.iter_lines(test_path, errors="surrogateescape"))
    if test_format == "auto":
        test_format = "linearised" if ptb_tree.looks_linearised("\n".join(test)) else "tree"
    if test_format == "tree":
        return gold, _sentences(test, layout, os.fspath(test_path))
    converted = [_delinearised(line, gold_line, params, f"{os.fspath(gold_path)}, sentence {number}")
                 for number, (line, gold_line) in enumerate(zip(test, gold), start=1)]
    return gold, converted + test[len(gold):]
