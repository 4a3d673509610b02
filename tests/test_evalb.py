"""EVALB as evalb.c computes it (COLLINS.prm, and EVALB's own sample files with sample.prm), on hand-made
trees whose figures are counted by hand in the comments, and the t2t-repro-evalb CLI."""

import json
import logging
import random
import subprocess
import sys
import time

import pytest

from t2t_repro.cli import evalb as evalb_cli
from t2t_repro.data.ptb_tree import linearise, parse_tree
from t2t_repro.errors import UserError
from t2t_repro.evaluate import evalb, evalb_params, evalb_report
from t2t_repro.evaluate.crossing import count_crossing
from t2t_repro.evaluate.evalb_params import COLLINS
from t2t_repro.evaluate.evalb_reader import read_sentence


def _score(gold, test, params=COLLINS):
    return evalb.score_sentence(read_sentence(gold, params), read_sentence(test, params), params)


def _figures(gold_lines, test_lines, params=COLLINS):
    return evalb.evaluate_lines(gold_lines, test_lines, params).as_dict()


def test_prt_and_advp_are_equal_and_punctuation_is_not_scored():
    # Gold brackets over "John gave up the fight" (the final "." is dropped): S 0-5, NP 0-1, VP 1-5,
    # PRT 2-3, NP 3-5. Test: the same except NP 3-4 and ADVP for PRT -> 4 of 5 match both ways.
    result = _score(
        "(S (NP (NNP John)) (VP (VBD gave) (PRT (RP up)) (NP (DT the) (NN fight))) (. .))",
        "(S (NP (NNP John)) (VP (VBD gave) (ADVP (RB up)) (NP (DT the)) (NN fight)) (. .))",
    )
    assert (result.status, result.gold_brackets, result.test_brackets, result.matched) == ("ok", 5, 5, 4)
    assert result.precision == result.recall == result.f1 == pytest.approx(80.0)
    assert (result.words, result.correct_tags, result.crossing, result.length) == (5, 4, 0, 6)


def test_punctuation_attachment_does_not_change_spans():
    gold = "(S (NP (NNP Mary) (, ,) (NP (DT a) (NN doctor)) (, ,)) (VP (VBZ smiles)) (. .))"
    # Commas moved out of the NP: its span over the non-punctuation words is unchanged -> exact match.
    moved = "(S (NP (NNP Mary) (, ,) (NP (DT a) (NN doctor))) (, ,) (VP (VBZ smiles)) (. .))"
    assert _score(gold, moved).matched == 4 and _score(gold, moved).f1 == pytest.approx(100.0)
    # Gold S 0-4, NP 0-3, NP 1-3, VP 3-4; test S 0-4, NP 0-1, NP 1-3, VP 3-4 -> 3 of 4.
    flat = "(S (NP (NNP Mary)) (, ,) (NP (DT a) (NN doctor)) (, ,) (VP (VBZ smiles)) (. .))"
    assert _score(gold, flat).f1 == pytest.approx(75.0)
    # A constituent holding only punctuation spans no word: no bracket at all.
    assert _score(gold, "(S (NP (NNP Mary)) (PRN (, ,)) (NP (DT a) (NN doctor)) (, ,) (VP (VBZ smiles)) "
                        "(. .))").test_brackets == 4


def test_top_and_function_tags_are_not_scored_but_the_bare_wrapper_is_a_bracket():
    # COLLINS.prm deletes TOP; the unlabelled outer pair is a bracket labelled "" (4 gold brackets: "", S, NP,
    # VP), which the TOP-rooted test tree lacks: R 3/4, P 3/3.
    result = _score("( (S (NP-SBJ-1 (PRP I)) (VP (VBD ran))) )", "(TOP (S (NP (PRP I)) (VP (VBD ran))))")
    assert (result.gold_brackets, result.test_brackets, result.matched) == (4, 3, 3)
    result = _score("( (S (NP-SBJ-1 (PRP I)) (VP (VBD ran))) )", "((S (NP (PRP I)) (VP (VBD ran))))")
    assert (result.gold_brackets, result.test_brackets, result.matched) == (4, 4, 4)


# Two sentences, each with and without the Treebank's bare outer pair.
GOLD = ["(S (NP (DT a) (NN b)) (VP (VBZ c) (NP (NN d))))", "(S (NP (NN x)) (VP (VB y)))"]
TEST = ["(S (NP (DT a) (NN b) (VBZ c)) (VP (NP (NN d))))", "(S (NP (NN x)) (VP (VB y)))"]


def _wrapped(lines):
    return [f"( {line} )" for line in lines]


def test_bare_wrapper_in_both_files_is_one_more_matched_bracket_per_sentence():
    # Unwrapped: sentence 1 gold S 0-4, NP 0-2, VP 2-4, NP 3-4; test S 0-4, NP 0-3, VP 3-4, NP 3-4: 2 of 4.
    # Sentence 2: 3 of 3. Totals 5 / 7 / 7 -> P = R = F = 71.43.
    plain = _figures(GOLD, TEST)
    assert (plain["matched_brackets"], plain["gold_brackets"], plain["test_brackets"]) == (5, 7, 7)
    assert plain["f1"] == pytest.approx(500 / 7)
    # Wrapped in both: one more bracket 0-n labelled "" on each side, matched: 7 / 9 / 9 -> 77.78 (evalb.c's
    # figure; before, the wrapper was dropped and the F1 stayed 71.43).
    wrapped = _figures(_wrapped(GOLD), _wrapped(TEST))
    assert (wrapped["matched_brackets"], wrapped["gold_brackets"], wrapped["test_brackets"]) == (7, 9, 9)
    assert wrapped["f1"] == pytest.approx(700 / 9)
    assert wrapped["average_crossing"] == pytest.approx(0.5)  # test NP 0-3 crosses gold VP 2-4


def test_bare_wrapped_gold_against_an_unwrapped_test_file_loses_recall():
    # The gold's "" brackets are never matched: R = 5/9 = 55.56, P = 5/7 = 71.43 (before: 71.43 both).
    figures = _figures(_wrapped(GOLD), TEST)
    assert (figures["matched_brackets"], figures["gold_brackets"], figures["test_brackets"]) == (5, 9, 7)
    assert figures["recall"] == pytest.approx(500 / 9) and figures["precision"] == pytest.approx(500 / 7)
    assert figures["f1"] == pytest.approx(62.5)


def test_blank_test_line_is_a_skip_sentence_and_the_evaluation_goes_on():
    result = evalb.evaluate_lines(_wrapped(GOLD) + ["(S (NN z))"], ["", _wrapped(TEST)[1], "(S (NN z))"])
    figures = result.as_dict()
    assert (figures["sentences"], figures["skip_sentences"], figures["error_sentences"]) == (3, 1, 0)
    # Sentence 2 (4 / 4 / 4 with the wrapper) and sentence 3 (S 0-1: 1 / 1 / 1).
    assert (figures["matched_brackets"], figures["gold_brackets"], figures["test_brackets"]) == (5, 5, 5)
    assert result.errors == ()  # a skip is no error


def test_blank_gold_lines_and_bare_terminals_read_as_evalb_reads_them():
    # Gold line 2 is blank: against a blank test line a skip; against a sentence a length mismatch.
    result = evalb.evaluate_lines([GOLD[1], "", ""], [TEST[1], "", TEST[1]])
    assert [r.status for r in result.sentences] == ["ok", "skip", "error"]
    assert result.errors == ((3, "Length unmatch (0|2)"),)
    # Terminals outside any bracket are one sentence of words: no test bracket, tags still compared.
    result = _score(GOLD[0], "(DT a) (NN b) (VBZ c) (NN d)")
    assert (result.status, result.gold_brackets, result.test_brackets, result.matched) == ("ok", 4, 0, 0)
    assert result.correct_tags == 4


def test_mismatched_and_unbalanced_sentences_are_errors_not_fatal():
    assert _score("(S (NN a) (NN b))", "(S (NN a))").status == "error"
    assert _score("(S (NN a) (NN b))", "(S (NN a) (NN c))").status == "error"
    # A test tree that tags the final "." as a word keeps it: lengths differ, as in EVALB.
    assert _score("(S (NN a) (. .))", "(S (NN a) (NN .))").status == "error"
    assert _score("(S (NN a) (NN b))", "").status == "skip"
    unbalanced = _score("(S (NN a) (NN b))", "(S (NP (NN a) (NN b))")
    assert unbalanced.status == "error" and "too many open bracket" in unbalanced.errors[0]


def test_text_evalb_cannot_read_is_a_user_error():
    with pytest.raises(UserError, match="gold, sentence 1: text 'b' outside a terminal"):
        evalb.evaluate_lines(["(S (NN a) b)"], ["(S (NN a))"])
    with pytest.raises(UserError, match="test, sentence 1: more than one element"):
        evalb.evaluate_lines(["(S (NN a))"], ["(S (NN a b))"])


def test_max_error_stops_at_error_max_plus_two_as_evalb_does():
    gold, test = ["(S (NN a) (NN b))"] * 14, ["(S (NN a))"] * 14  # 14 length mismatches
    assert evalb.evaluate_lines(gold[:11], test[:11], COLLINS.replace(max_error=10)).all.error_sentences == 11
    with pytest.raises(UserError, match=r"sentence 12: Length unmatch \(2\|1\): error 12 with MAX_ERROR 10"):
        evalb.evaluate_lines(gold, test, COLLINS.replace(max_error=10))
    assert evalb.evaluate_lines(gold, test).all.error_sentences == 14  # default: go on


def test_different_sentence_counts_score_the_common_part_with_an_error():
    result = evalb.evaluate_lines(GOLD, TEST[:1])
    assert result.all.sentences == 1 and result.errors == ((2, evalb.LINES_UNMATCH.format("gold")),)
    result = evalb.evaluate_lines(GOLD[:1], TEST)
    assert result.all.sentences == 1 and result.errors == ((2, evalb.LINES_UNMATCH.format("test")),)


def test_crossing_and_repeated_brackets():
    # Gold S 0-4, NP 0-2, VP 2-4, NP 3-4; test S 0-4, X 0-3, NP 3-4. X crosses VP; P = 2/3, R = 2/4.
    result = _score("(S (NP (DT a) (NN b)) (VP (VBZ c) (NP (NN d))))", "(S (X (DT a) (NN b) (VBZ c)) (NP (NN d)))")
    assert (result.matched, result.crossing) == (2, 1)
    assert result.f1 == pytest.approx(2 * (200 / 3) * 50 / (200 / 3 + 50))  # 57.14
    # Gold has VP 1-2 twice; the test's single VP matches one of them: R = 3/4, P = 3/3.
    result = _score("(S (NP (NN it)) (VP (VP (VBZ goes))))", "(S (NP (NN it)) (VP (VBZ goes)))")
    assert (result.recall, result.precision) == (75.0, 100.0)


def test_crossing_count_equals_the_pairwise_definition():
    rng = random.Random(0)
    for _ in range(2000):
        width = rng.randint(1, 8)
        spans = [[tuple(sorted((rng.randint(0, width), rng.randint(0, width)))) for _ in range(rng.randint(0, 6))]
                 for _ in range(2)]
        gold, test = spans
        expected = sum(any(g[0] < t[0] < g[1] < t[1] or t[0] < g[0] < t[1] < g[1] for g in gold) for t in test)
        assert count_crossing(gold, test) == expected


def test_deep_trees_score_in_linear_time():
    depth = 10_000  # was 19 s (quadratic crossing count); now well under a second
    gold = "(S " * depth + "(NN a) (NN b)" + ")" * depth
    test = "(X " * depth + "(NN a) (NN b)" + ")" * depth
    start = time.perf_counter()
    figures = _figures([gold], [test])
    assert time.perf_counter() - start < 3.0
    assert (figures["gold_brackets"], figures["test_brackets"], figures["matched_brackets"]) == (depth, depth, 0)


def test_length_cutoff_counts_punctuation():
    words = " ".join(f"(NN w{i})" for i in range(40))
    long_gold, long_test = f"(S (NP {words}) (. .))", f"(S {words} (. .))"  # 41 words with the "."
    short = "(S (NP (NN a)) (VP (VB b)))"
    result = evalb.evaluate_lines([long_gold, short], [long_test, short])
    assert result.sentences[0].length == 41
    assert (result.all.sentences, result.short.sentences) == (2, 1)
    assert result.short.f1 == pytest.approx(100.0)
    assert result.all.gold_brackets == 5 and result.all.matched_brackets == 4


# EVALB's own sample (sample.gld / sample.tst, scored with sample.prm): evalb.c's published figures.
SAMPLE_PRM = """# sample.prm
MAX_ERROR 10
CUTOFF_LEN 40
LABELED 1
DELETE_LABEL TOP
DELETE_LABEL -NONE-
DELETE_LABEL ,
DELETE_LABEL :
DELETE_LABEL ``
DELETE_LABEL ''
DELETE_LABEL_FOR_LENGTH -NONE-
EQ_LABEL T TT
EQ_WORD  This this
"""
_BASE = "(S (A (P this)) (B (Q is) (A (R a) (T test))))"
_LONG = "(S " + " ".join(["(A (P this)) (B (Q is) (A (R a) (T test)))"] * 11) + ")"
SAMPLE_GOLD = [_BASE] * 20 + [
    "(S (A-SBJ-1 (P this)) (B-WHATEVER (Q is) (A (R a) (T test))))", _LONG,
    "(S (A (P this)) (B (Q is) (A (R a) (T test))) (-NONE- *))",
    "(S (A (P this)) (B (Q is) (A (R a) (T test))) (: *))",
]
SAMPLE_TEST = [
    _BASE, _BASE.replace("(A (R", "(C (R"), _BASE.replace("(T test", "(U test"),
    _BASE.replace("(A (P", "(C (P").replace("(T test", "(U test"),
    "(S (A (P this)) (B (Q is) (R a) (A (T test))))", "(S (A (P this) (Q is)) (A (R a) (T test)))",
    "(S (P this) (Q is) (R a) (T test))", "(P this) (Q is) (R a) (T test)",
    "(S (A (P this)) (B (Q is) (A (A (R a) (T test)))))",
    "(S (A (P this)) (B (Q is) (A (A (A (A (A (R a) (T test))))))))",
    "", "(S (A (P this)) (B (Q was) (A (A (R a) (T test)))))",
    "(S (A (P this)) (B (Q is) (U not) (A (A (R a) (T test)))))", "",
    f"(TOP {_BASE})", "(S (A (P this)) (NONE *) (B (Q is) (A (R a) (T test))))",
    "(S (A (P this)) (S (NONE abc) (A (NONE *))) (B (Q is) (A (R a) (T test))))",
    _BASE.replace("(T test", "(TT test"), _BASE.replace("this", "This"), _BASE.replace("this", "That"),
    _BASE, _LONG, SAMPLE_GOLD[22], SAMPLE_GOLD[23],
]


def test_evalb_sample_files_give_evalbs_published_figures():
    params = evalb_params.parse_parameters(SAMPLE_PRM)
    result = evalb.evaluate_lines(SAMPLE_GOLD, SAMPLE_TEST, params)
    # sample.rsl: status column, then the two summaries.
    assert "".join(str({"ok": 0, "error": 1, "skip": 2}[r.status]) for r in result.sentences) == \
        "000000000021120110010000"
    assert [r.matched for r in result.sentences[:10]] == [4, 3, 4, 3, 3, 2, 1, 0, 4, 4]
    report = evalb_report.format_report(result)
    for line in ("Number of Error sentence  =      5", "Number of Skip  sentence  =      2",
                 "Bracketing Recall         =  87.76", "Bracketing Precision      =  90.53",
                 "Complete match            =  52.94", "Average crossing          =   0.06",
                 "No crossing               =  94.12", "Tagging accuracy          =  98.15",
                 "Bracketing Recall         =  81.25", "Bracketing Precision      =  85.25",
                 "Tagging accuracy          =  96.88"):
        assert line in report
    assert (result.all.matched_brackets, result.all.gold_brackets, result.all.test_brackets) == (86, 98, 95)
    assert [number for number, _ in result.errors] == [12, 13, 16, 17, 20]


def test_parameter_files_are_read_as_evalb_reads_them(caplog):
    params = evalb_params.parse_parameters(SAMPLE_PRM)
    assert params.delete_labels == {"TOP", "-NONE-", ",", ":", "``", "''"} and params.max_error == 10
    assert params.labels_equal("TT", "T") and params.words_equal("this", "This")
    with caplog.at_level(logging.WARNING):
        evalb_params.parse_parameters("DELETE_LABLE TOP\n", source="x.prm")
    assert "x.prm:1: unknown keyword 'DELETE_LABLE'" in caplog.text
    with pytest.raises(UserError, match="x.prm:2: QUOTE_LABEL"):
        evalb_params.parse_parameters("LABELED 1\nQUOTE_LABEL POS\n", source="x.prm")


GOLD_MRG = """( (S (NP-SBJ (NNP John)) (VP (VBD gave) (PRT (RP up)) (NP (DT the) (NN fight)))
    (. .)))

( (S (NP-SBJ (PRP I)) (VP (VBD ran) (S (-NONE- *)))) )
"""


def _run_cli(*args):
    return subprocess.run([sys.executable, "-m", "t2t_repro.cli.evalb", *args], capture_output=True, text=True)


def test_cli_scores_treebank_layout_as_the_same_trees_one_per_line(tmp_path):
    gold = tmp_path / "gold.mrg"
    gold.write_text(GOLD_MRG)
    trees = tmp_path / "test.txt"
    trees.write_text("(S (NP (NNP John)) (VP (VBD gave) (ADVP (RB up)) (NP (DT the)) (NN fight)) (. .))\n"
                     "(S (NP (PRP I)) (VP (VBD ran)))\n")
    result = _run_cli(f"--gold={gold}", f"--test={trees}", "--json")
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    # Sentence 1: gold "", S, NP, VP, PRT, NP (6); test S, NP, VP, ADVP, NP: 4 match. Sentence 2: gold "", S,
    # NP, VP (the S over the trace spans nothing); test S, NP, VP: 3 match. Totals 7 / 10 / 8.
    assert (figures["matched_brackets"], figures["gold_brackets"], figures["test_brackets"]) == (7, 10, 8)
    assert figures["sentences"] == 2 and figures["len_le_40"]["sentences"] == 2
    flat = tmp_path / "gold.txt"
    flat.write_text("".join(" ".join(line.split()) + "\n" for line in (
        "( (S (NP-SBJ (NNP John)) (VP (VBD gave) (PRT (RP up)) (NP (DT the) (NN fight))) (. .)))",
        "( (S (NP-SBJ (PRP I)) (VP (VBD ran) (S (-NONE- *)))) )")))
    assert json.loads(_run_cli(f"--gold={flat}", f"--test={trees}", "--json").stdout) == figures

    # Linearised output, one per line, is de-linearised onto the gold words (blank line: no parse).
    lines = tmp_path / "decoded.txt"
    lines.write_text(" ".join(linearise(parse_tree(trees.read_text().splitlines()[0]))) + "\n\n")
    figures = json.loads(_run_cli(f"--gold={gold}", f"--test={lines}", "--json").stdout)
    assert (figures["matched_brackets"], figures["skip_sentences"]) == (4, 1)

    report = _run_cli(f"--gold={gold}", f"--test={trees}", "--per_sentence")
    assert "Bracketing FMeasure       =  77.78" in report.stdout and "-- len<=40 --" in report.stdout
    assert "   1    6    0   66.67  80.00     4      6    5      0      5     4    80.00" in report.stdout


def test_cli_reports_errors_on_stderr_and_applies_param_file_and_max_error(tmp_path):
    gold, test = tmp_path / "gold.txt", tmp_path / "test.txt"
    gold.write_text("\n".join(["(S (NN a) (NN b))"] * 3) + "\n")
    test.write_text("(S (NN a))\n\n(S (NN a) (NN b))\n")
    result = _run_cli(f"--gold={gold}", f"--test={test}", "--json")
    assert result.returncode == 0 and result.stderr.splitlines() == ["1 : Length unmatch (2|1)"]
    figures = json.loads(result.stdout)
    assert (figures["error_sentences"], figures["skip_sentences"], figures["valid_sentences"]) == (1, 1, 1)
    stopped = _run_cli(f"--gold={gold}", f"--test={test}", "--max_error=-1")
    assert stopped.returncode == 2 and "MAX_ERROR -1" in stopped.stderr
    prm = tmp_path / "unlabelled.prm"
    prm.write_text("LABELED 0\nCUTOFF_LEN 1\n")
    figures = json.loads(_run_cli(f"--gold={gold}", f"--test={test}", f"--param_file={prm}", "--json").stdout)
    assert figures["cutoff_length"] == 1 and figures["len_le_1"]["sentences"] == 0


def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    gold = tmp_path / "gold.mrg"
    gold.write_text(GOLD_MRG)
    bad = tmp_path / "bad.txt"
    bad.write_text("(S (NN a)\n(S (NN b))\n")
    stray = tmp_path / "stray.txt"
    stray.write_text("(S (NN a) b)\n(S (NN a))\n")
    for test, message in ((bad, f"{bad}:1: the tree opened here is never closed"),
                          (stray, f"{stray}, sentence 1: text 'b' outside a terminal"),
                          (tmp_path / "absent.txt", "cannot read")):
        with pytest.raises(SystemExit) as exit_info:
            evalb_cli.main([f"--gold={gold}", f"--test={test}"])
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1
    # Read as evalb.c reads it, the unbalanced line is an error sentence instead (as in a one-line file).
    with pytest.raises(SystemExit) as exit_info:
        evalb_cli.main([f"--gold={bad}", f"--test={bad}", "--layout=lines"])
    assert exit_info.value.code == 0
    assert "too many open bracket" in capsys.readouterr().err


def test_cli_compares_invalid_utf8_bytes_as_evalb_does_and_warns(tmp_path):
    gold, test = tmp_path / "gold.txt", tmp_path / "test.txt"
    gold.write_bytes(b"(S (NN caf\xe9) (NN b))\n")
    test.write_bytes(b"(S (NN caf\xe8) (NN b))\n")  # another bad byte: another word, as in C
    result = _run_cli(f"--gold={gold}", f"--test={test}", "--json")
    assert json.loads(result.stdout)["error_sentences"] == 1
    assert f"{gold}:1: invalid UTF-8 (byte 0xe9 at column 11)" in result.stderr
    assert "1 : Words unmatch (caf" in result.stderr
