"""Penn Treebank trees: reading .mrg files, clean-up, the linearisation round trip and repair of bad output."""

import logging

import pytest

from t2t_repro.data import ptb_tree
from t2t_repro.data.ptb_tree import Tree, delinearise, linearise, parse_tree
from t2t_repro.errors import UserError

MRG_TEXT = """*x*                                                                     *x*
*x* Copyright (C) 1995 University of Pennsylvania                       *x*

( (S
    (NP-SBJ-1 (NNP John) )
    (VP (VBZ wants)
      (S
        (NP-SBJ (-NONE- *-1) )
        (VP (TO to)
          (VP (VB leave) ))))
    (. .) ))
( (SINV (`` ``) (S-TPC-2 (NP-SBJ (PRP It)) (VP (VBD rained))) (, ,) ('' '')
    (VP (VBD said) (S (-NONE- *T*-2)))
    (NP-SBJ=3 (NNP Mary) )
    (. .) ))
"""

CLEANED = [
    "(S (NP (NNP John)) (VP (VBZ wants) (S (VP (TO to) (VP (VB leave))))) (. .))",
    "(SINV (`` ``) (S (NP (PRP It)) (VP (VBD rained))) (, ,) ('' '') (VP (VBD said)) (NP (NNP Mary)) (. .))",
]


@pytest.fixture
def mrg_file(tmp_path):
    path = tmp_path / "wsj_0001.mrg"
    path.write_text(MRG_TEXT)
    return path


def test_reads_mrg_file_and_cleans_traces_function_tags_and_wrapper(mrg_file):
    raw = ptb_tree.read_trees(mrg_file)
    assert len(raw) == 2 and raw[0].label == "" and raw[0].children[0].label == "S"
    trees = ptb_tree.read_treebank_file(mrg_file)
    assert [str(t) for t in trees] == CLEANED
    assert trees[0].words() == ["John", "wants", "to", "leave", "."]
    assert trees[1].tags()[:3] == ["``", "PRP", "VBD"]


def test_one_tree_per_line_reads_the_same(tmp_path, mrg_file):
    flat = tmp_path / "flat.txt"
    flat.write_text("\n".join(str(t) for t in ptb_tree.read_trees(mrg_file)) + "\n")
    assert ptb_tree.read_trees(flat) == ptb_tree.read_trees(mrg_file)


def test_ptb_string_parses_back_to_the_same_tree(mrg_file):
    for tree in ptb_tree.read_treebank_file(mrg_file):
        assert parse_tree(str(tree)) == tree


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("(S (NP (NN a))\n(VP (VB b))\n", 1, "never closed"),
        ("(S (NN a))\n\n(S (NN b)))\n", 3, "without a matching"),
        ("(S (NN a)\n  (NP (NN b) c))\n", 2, "beside sub-constituents"),
        ("(S (NN a b))\n", 1, "more than one word"),
        ("(S (NN a))\n(NP )\n", 2, "empty constituent"),
        ("(S (NN a))\nstray\n", 2, "outside any tree"),
    ],
)
def test_malformed_file_error_names_file_and_line(tmp_path, text, line, message):
    path = tmp_path / "bad.mrg"
    path.write_text(text)
    with pytest.raises(UserError, match=message) as error:
        ptb_tree.read_trees(path)
    assert f"{path}:{line}:" in str(error.value)


def test_invalid_utf8_is_refused_naming_file_and_line_or_kept_with_a_warning_for_evalb(tmp_path, caplog):
    path = tmp_path / "latin1.mrg"
    path.write_bytes(b"( (S (NP (NN tea))\n  (VP (VB y))) )\n( (S (NP (NN caf\xe9)) (VP (VB y))) )\n")
    with pytest.raises(UserError, match=rf"{path}:3: not UTF-8 text \(byte 0xe9 at byte 17 of the line\)"):
        ptb_tree.read_treebank_file(path)
    with caplog.at_level(logging.WARNING, logger="t2t_repro"):
        lines = list(ptb_tree.iter_lines(path, errors="surrogateescape"))
    assert lines[2].encode("utf-8", "surrogateescape") == b"( (S (NP (NN caf\xe9)) (VP (VB y))) )"
    assert f"{path}:3: invalid UTF-8 (byte 0xe9 at column 17)" in caplog.text and len(caplog.records) == 1


def test_deep_trees_read_clean_and_linearise_without_recursion(tmp_path):
    depth = 20_000  # was a RecursionError in clean_tree
    path = tmp_path / "deep.mrg"
    path.write_text("( " + "(S-1 " * depth + "(NN a) (-NONE- *) (NN b)" + ")" * depth + " )\n")
    (tree,) = ptb_tree.read_treebank_file(path)
    tokens = linearise(tree)
    assert tree.words() == ["a", "b"] and len(tokens) == 2 * depth + 2 and tokens[0] == "(S"
    assert delinearise(tokens, ["a", "b"]).to_ptb() == tree.to_ptb()


def test_escaped_ptb_string_keeps_brackets_inside_words_and_labels_out_of_the_structure():
    tree = Tree("S", [Tree.preterminal("NN", ":("), Tree("X)", [Tree.preterminal("-LRB-", "(")])])
    assert tree.to_ptb() == "(S (NN :() (X) (-LRB- ()))"
    assert tree.to_ptb(escape=True) == "(S (NN :-LRB-) (X-RRB- (-LRB- -LRB-)))"


def test_missing_file_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="cannot read tree file"):
        ptb_tree.read_trees(tmp_path / "absent.mrg")


def test_linearisation_keeps_tags_in_place_of_words():
    tree = parse_tree("(S (NP (NNP John)) (VP (VBZ has) (NP (DT a) (NN dog))) (. .))")
    assert " ".join(linearise(tree)) == "(S (NP NNP )NP (VP VBZ (NP DT NN )NP )VP . )S"
    assert " ".join(linearise(tree, tags=False)) == "(S (NP XX )NP (VP XX (NP XX XX )NP )VP XX )S"


ROUND_TRIP_TREES = [
    "(S (NP (NNP John)) (VP (VBZ has) (NP (DT a) (NN dog))) (. .))",
    "(TOP (NP (NN a)) (VP (VB b)))",  # a wrapper over two constituents
    "(S (VP (VP (VB go))))",  # unary chain with a repeated label
    "(NP (-LRB- -LRB-) (NN x) (-RRB- -RRB-) ($ $) (CD 3))",
    "(FRAG (NN x))",
]


@pytest.mark.parametrize("text", ROUND_TRIP_TREES)
def test_linearise_delinearise_is_an_exact_round_trip(text):
    tree = parse_tree(text)
    assert delinearise(linearise(tree), tree.words()) == tree
    assert delinearise(" ".join(linearise(tree)), tree.words()) == tree
    assert delinearise(linearise(tree, tags=False), tree.words(), tree.tags()) == tree


def test_treebank_trees_round_trip(mrg_file):
    for tree in ptb_tree.read_treebank_file(mrg_file):
        assert delinearise(linearise(tree), tree.words()) == tree


WORDS = ["John", "has", "a", "dog", "."]


def _assert_well_formed(tree, words):
    assert tree.words() == words
    assert parse_tree(str(tree)) == tree
    for event, node in ptb_tree.walk(tree):
        if event == ptb_tree.OPEN:
            assert node.label and node.children


@pytest.mark.parametrize(
    "tokens, expected",
    [
        # truncated: unclosed constituents are closed, words without a slot join the sentence constituent
        # (a punctuation mark gets its fixed tag, so EVALB drops it as in the gold tree)
        ("(S (NP NNP )NP (VP VBZ (NP DT",
         "(S (NP (NNP John)) (VP (VBZ has) (NP (DT a))) (XX dog) (. .))"),
        # extra closers are ignored
        ("(S (NP NNP )NP )NP )S (VP VBZ DT NN . )VP )S",
         "(TOP (S (NP (NNP John))) (VP (VBZ has) (DT a) (NN dog) (. .)))"),
        # a mismatched closer closes the innermost constituent; the opener's label wins
        ("(S (NP NNP )VP (VP VBZ (NP DT NN )S )VP . )NP",
         "(S (NP (NNP John)) (VP (VBZ has) (NP (DT a) (NN dog))) (. .))"),
        # too many word slots: the surplus is dropped, a constituent left empty is pruned
        ("(S (NP NNP NNP NNP )NP (VP VBZ (NP DT )NP )VP (ADJP JJ )ADJP )S",
         "(S (NP (NNP John) (NNP has) (NNP a)) (VP (VBZ dog) (NP (DT .))))"),
        # no structure at all
        ("", "(TOP (XX John) (XX has) (XX a) (XX dog) (. .))"),
        ("NN NN", "(TOP (NN John) (NN has) (XX a) (XX dog) (. .))"),
        # a stray bare bracket and a dangling opener
        ("( (S NNP VBZ DT NN . )S (NP", "(S (NNP John) (VBZ has) (DT a) (NN dog) (. .))"),
    ],
)
def test_delinearise_repairs_broken_output(tokens, expected):
    tree = delinearise(tokens, WORDS)
    _assert_well_formed(tree, WORDS)
    assert str(tree) == expected


def test_delinearise_uses_given_tags_for_placeholders_and_missing_slots():
    tags = ["NNP", "VBZ", "DT", "NN", "."]
    tree = delinearise("(S (NP XX )NP (VP VBD", WORDS, tags)
    assert tree.tags() == ["NNP", "VBD", "DT", "NN", "."]


def test_tree_type_basics():
    tree = Tree("S", [Tree.preterminal("NN", "x"), Tree("VP", [Tree.preterminal("VB", "y")])])
    assert tree.preterminals() == [("NN", "x"), ("VB", "y")]
    assert not tree.is_preterminal() and tree.children[0].is_preterminal()
    assert ptb_tree.strip_function_tags("NP-SBJ-1") == "NP"
    assert ptb_tree.strip_function_tags("NP=2") == "NP"
    assert ptb_tree.strip_function_tags("-LRB-") == "-LRB-"
    assert ptb_tree.looks_linearised("(S (NP NN )NP )S")
    assert not ptb_tree.looks_linearised("(S (NP (NN x)) )")
