"""EVALB-style bracket scoring on hand-made trees (figures computed by hand), and the t2t-repro-evalb CLI."""

import json
import subprocess
import sys

import pytest

from t2t_repro.cli import evalb as evalb_cli
from t2t_repro.data.ptb_tree import linearise, parse_tree
from t2t_repro.evaluate import evalb


def _score(gold, test):
    return evalb.score_sentence(parse_tree(gold), parse_tree(test) if test else None)


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
    # A constituent holding only punctuation is no bracket at all.
    assert _score(gold, "(S (NP (NNP Mary)) (PRN (, ,)) (NP (DT a) (NN doctor)) (, ,) (VP (VBZ smiles)) "
                        "(. .))").test_brackets == 4


def test_root_wrapper_top_and_function_tags_are_not_scored():
    result = _score("( (S (NP-SBJ-1 (PRP I)) (VP (VBD ran))) )", "(TOP (S (NP (PRP I)) (VP (VBD ran))))")
    assert (result.gold_brackets, result.test_brackets, result.matched) == (3, 3, 3)


def test_crossing_and_repeated_brackets():
    # Gold S 0-4, NP 0-2, VP 2-4, NP 3-4; test S 0-4, X 0-3, NP 3-4. X crosses VP; P = 2/3, R = 2/4.
    result = _score("(S (NP (DT a) (NN b)) (VP (VBZ c) (NP (NN d))))", "(S (X (DT a) (NN b) (VBZ c)) (NP (NN d)))")
    assert (result.matched, result.crossing) == (2, 1)
    assert result.f1 == pytest.approx(2 * (200 / 3) * 50 / (200 / 3 + 50))  # 57.14
    # Gold has VP 1-2 twice; the test's single VP matches one of them: R = 3/4, P = 3/3.
    result = _score("(S (NP (NN it)) (VP (VP (VBZ goes))))", "(S (NP (NN it)) (VP (VBZ goes)))")
    assert (result.recall, result.precision) == (75.0, 100.0)
    assert result.f1 == pytest.approx(600 / 7)  # 85.71


def test_mismatched_sentences_are_counted_not_fatal():
    assert _score("(S (NN a) (NN b))", "(S (NN a))").status == "error"
    assert _score("(S (NN a) (NN b))", "(S (NN a) (NN c))").status == "error"
    # A test tree that tags the final "." as a word keeps it: lengths differ, as in EVALB.
    assert _score("(S (NN a) (. .))", "(S (NN a) (NN .))").status == "error"
    assert _score("(S (NN a) (NN b))", None).status == "skip"


def test_corpus_figures_leave_out_error_and_skip_sentences():
    gold = [
        "(S (NP (NNP John)) (VP (VBD gave) (PRT (RP up)) (NP (DT the) (NN fight))) (. .))",
        "(S (NP (NNP Mary) (, ,) (NP (DT a) (NN doctor)) (, ,)) (VP (VBZ smiles)) (. .))",
        "(S (NN a) (NN b))",
        "(S (NN a) (NN b))",
    ]
    test = [
        "(S (NP (NNP John)) (VP (VBD gave) (ADVP (RB up)) (NP (DT the)) (NN fight)) (. .))",
        "(S (NP (NNP Mary)) (, ,) (NP (DT a) (NN doctor)) (, ,) (VP (VBZ smiles)) (. .))",
        "(S (NN a))",
        None,
    ]
    result = evalb.evaluate_trees([parse_tree(g) for g in gold], [t and parse_tree(t) for t in test])
    figures = result.as_dict()
    assert (figures["sentences"], figures["error_sentences"], figures["skip_sentences"]) == (4, 1, 1)
    assert (figures["matched_brackets"], figures["gold_brackets"], figures["test_brackets"]) == (7, 9, 9)
    assert figures["f1"] == figures["precision"] == figures["recall"] == pytest.approx(700 / 9)  # 77.78
    assert figures["len_le_40"]["f1"] == pytest.approx(700 / 9)
    assert "Bracketing FMeasure       =  77.78" in evalb.format_report(result)


def test_length_cutoff_counts_punctuation():
    words = " ".join(f"(NN w{i})" for i in range(40))
    long_gold = parse_tree(f"(S (NP {words}) (. .))")  # 41 words with the "."
    long_test = parse_tree(f"(S {words} (. .))")
    short = parse_tree("(S (NP (NN a)) (VP (VB b)))")
    result = evalb.evaluate_trees([long_gold, short], [long_test, short])
    assert result.sentences[0].length == 41
    assert (result.all.sentences, result.short.sentences) == (2, 1)
    assert result.short.f1 == pytest.approx(100.0)
    assert result.all.gold_brackets == 5 and result.all.matched_brackets == 4


GOLD_MRG = """( (S (NP-SBJ (NNP John)) (VP (VBD gave) (PRT (RP up)) (NP (DT the) (NN fight)))
    (. .)))
( (S (NP-SBJ (PRP I)) (VP (VBD ran) (S (-NONE- *)))) )
"""


def _run_cli(*args):
    return subprocess.run([sys.executable, "-m", "t2t_repro.cli.evalb", *args], capture_output=True, text=True)


def test_cli_scores_tree_files_and_linearised_output(tmp_path):
    gold = tmp_path / "gold.mrg"
    gold.write_text(GOLD_MRG)
    trees = tmp_path / "test.txt"
    trees.write_text("(S (NP (NNP John)) (VP (VBD gave) (ADVP (RB up)) (NP (DT the)) (NN fight)) (. .))\n"
                     "(S (NP (PRP I)) (VP (VBD ran)))\n")
    result = _run_cli(f"--gold={gold}", f"--test={trees}", "--json")
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert (figures["matched_brackets"], figures["gold_brackets"], figures["test_brackets"]) == (7, 8, 8)
    assert figures["sentences"] == 2 and figures["f1"] == pytest.approx(87.5)
    assert figures["len_le_40"]["sentences"] == 2

    # Linearised output, one per line, is de-linearised onto the gold words (blank line: no parse).
    lines = tmp_path / "decoded.txt"
    lines.write_text(" ".join(linearise(parse_tree(trees.read_text().splitlines()[0]))) + "\n\n")
    figures = json.loads(_run_cli(f"--gold={gold}", f"--test={lines}", "--json").stdout)
    assert (figures["matched_brackets"], figures["skip_sentences"]) == (4, 1)

    report = _run_cli(f"--gold={gold}", f"--test={trees}", "--per_sentence")
    assert "Bracketing FMeasure       =  87.50" in report.stdout and "-- len<=40 --" in report.stdout


def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    gold = tmp_path / "gold.mrg"
    gold.write_text(GOLD_MRG)
    bad = tmp_path / "bad.txt"
    bad.write_text("(S (NN a)\n")
    one = tmp_path / "one.txt"
    one.write_text("(S (NN a))\n")
    for test, message in ((bad, f"{bad}:1:"), (one, "has 1 trees but the gold file has 2"),
                          (tmp_path / "absent.txt", "cannot read")):
        with pytest.raises(SystemExit) as exit_info:
            evalb_cli.main([f"--gold={gold}", f"--test={test}"])
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1
