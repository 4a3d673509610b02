"""The WSJ parsing problems end to end on a tiny fixture treebank: data generation, vocabulary, scoring, and
the test-split files a run leaves for EVALB."""

import json
import subprocess
import sys
import types

import pytest

from conftest import run_cli_in_process
from t2t_repro import catalog
from t2t_repro.decode_settings import PARSING_DECODE_SETTINGS
from t2t_repro.evaluate.scorers import ParseF1Scorer
from t2t_repro.errors import UserError
from t2t_repro.problems.wsj_parsing import WsjParsing, WsjParsingSemisup
from t2t_repro.run import jobs
from t2t_repro.run.layout import RunLayout

TEMPLATES = [
    "( (S (NP-SBJ (NNP {a})) (VP (VBZ sees) (NP (DT the) (NN {b}))) (. .)) )",
    "( (S (NP-SBJ-1 (DT The) (NN {b})) (VP (VBD wanted) (S (NP-SBJ (-NONE- *-1)) (VP (TO to) (VP (VB go)))))"
    " (. .)) )",
    "( (S (`` ``) (NP-SBJ (PRP We)) (VP (VBD gave) (PRT (RP up)) (PP-LOC (IN in) (NP (NNP {a})))) (, ,)"
    " ('' '') (NP (NNP {a}) (POS 's)) (. .)) )",
]
NAMES = ["Mary", "John", "Paris", "Kim", "Ruth"]
NOUNS = ["dog", "plan", "river", "bank", "idea"]


def _write_section(root, section, count):
    directory = root / f"{section:02d}"
    directory.mkdir(parents=True)
    trees = [TEMPLATES[(section + i) % 3].format(a=NAMES[(section + i) % 5], b=NOUNS[(section * 3 + i) % 5])
             for i in range(count)]
    (directory / f"wsj_{section:02d}01.mrg").write_text("\n".join(trees) + "\n")


@pytest.fixture
def treebank(tmp_path):
    root = tmp_path / "treebank"
    for section in range(2, 24):
        _write_section(root, section, 2)
    return root


# Section 23 of the fixture: traces, function tags and the outer wrapper are gone; tags replace the words.
TEST_PAIRS = [
    ("`` We gave up in Kim , '' Kim 's .",
     "(S `` (NP PRP )NP (VP VBD (PRT RP )PRT (PP IN (NP NNP )NP )PP )VP , '' (NP NNP POS )NP . )S"),
    ("Ruth sees the dog .", "(S (NP NNP )NP (VP VBZ (NP DT NN )NP )VP . )S"),
]


class TinyWsj(WsjParsing):
    vocab_size = 500
    train_shards = 2


class TinySemisup(WsjParsingSemisup):
    vocab_size = 500
    train_shards = 2


def test_registered_with_the_papers_settings():
    wsj = catalog.get_problem("wsj_parsing")
    semisup = catalog.get_problem("wsj_parsing_semisup")
    assert (wsj.vocab_size, semisup.vocab_size) == (16_000, 32_000)
    assert isinstance(wsj.scorer, ParseF1Scorer) and wsj.decode_settings == PARSING_DECODE_SETTINGS
    assert (PARSING_DECODE_SETTINGS.beam_size, PARSING_DECODE_SETTINGS.alpha) == (21, 0.3)
    assert PARSING_DECODE_SETTINGS.extra_length == 300


def test_generates_data_and_scores_gold_trees_perfectly(tmp_path, treebank):
    problem = TinyWsj()
    summary = problem.generate_data(tmp_path / "data", tmp_path / "tmp", treebank)
    assert summary["splits"]["train"]["examples"] == 40  # sections 02-21, 2 trees each
    assert summary["splits"]["dev"]["examples"] == summary["splits"]["test"]["examples"] == 2

    pairs = problem.text_pairs("test", tmp_path / "data")
    assert pairs == TEST_PAIRS
    vocabulary = problem.vocabularies(tmp_path / "data").target
    for _, target in pairs:
        pieces = vocabulary.encode(target)
        assert len(pieces) == len(target.split())  # every bracket token and tag is one piece
        assert vocabulary.decode(pieces) == target

    example = next(iter(problem.dataset("train", tmp_path / "data")))
    assert vocabulary.decode(example["targets"].numpy().tolist()).startswith("(S")

    sources = [source for source, _ in pairs]
    references = [target for _, target in pairs]
    hypotheses = [problem.postprocess(target, source) for source, target in pairs]
    assert all(h.startswith("(S (") for h in hypotheses)
    assert problem.evaluate(hypotheses, references, sources)["f1"] == pytest.approx(100.0)

    # A truncated output still gives a tree on the source words, and a lower score.
    broken = [problem.postprocess(" ".join(target.split()[:4]), source) for source, target in pairs]
    figures = problem.evaluate(broken, references, sources)
    assert figures["sentences"] == 2 and figures["error_sentences"] == 0
    assert 0 < figures["f1"] < 100 and figures["len_le_40"]["f1"] == figures["f1"]


@pytest.mark.parametrize("name", ["wsj_parsing", "parse_files"])
def test_the_paper_s_tags_are_the_default_and_words_in_the_tree_a_setting(name):
    assert catalog.get_problem(name).target_tags == "keep"
    problem = catalog.get_problem(name, "target_tags=words")
    assert problem.words_in_target and problem.shared_vocabulary and problem.scorer.leaf_words
    assert all(symbol[1] in "()" for symbol in problem.vocab_user_symbols())  # no tag symbol cuts a word


def test_words_in_the_tree_through_datagen_score_and_constrain_as_on_the_sample(tmp_path, treebank):
    result = run_cli_in_process("datagen", "--problem=wsj_parsing", "--problem_overrides=target_tags=words",
                                f"--manual_dir={treebank}", f"--data_dir={tmp_path / 'data'}")
    assert result.returncode == 0, result.stderr
    problem = catalog.get_problem("wsj_parsing", "target_tags=words")
    pairs = problem.text_pairs("test", tmp_path / "data")
    assert pairs[1] == ("Ruth sees the dog .", "(S (NP Ruth )NP (VP sees (NP the dog )NP )VP . )S")
    vocabularies = problem.vocabularies(tmp_path / "data")
    symbols = set(problem.vocab_user_symbols())
    brackets = {i for i in range(vocabularies.target.vocab_size) if vocabularies.target.id_to_piece(i) in symbols}
    for source, target in pairs:
        words = [i for i in vocabularies.target.encode(target) if i not in brackets]
        assert words == vocabularies.source.encode(source)
        tree = problem.postprocess(target, source)
        assert "(NP (XX Kim) (XX 's))" in tree or tree.startswith("(S (NP (XX Ruth)")
        assert problem.evaluate([tree], [target], [source])["f1"] == 100.0
    tokens = problem.output_constraint(vocabularies)
    assert tokens.words_in_target and tokens.slots == () and tokens.fixed_tags == ()
    with pytest.raises(UserError, match="other problem settings"):  # data made with the tags is not reused
        catalog.get_problem("wsj_parsing").check_existing_data(tmp_path / "data")


def test_raw_pairs_are_words_and_linearised_cleaned_trees(treebank):
    assert list(TinyWsj().raw_pairs("test", None, treebank)) == TEST_PAIRS


def test_missing_treebank_says_which_files_are_expected_where(tmp_path, treebank):
    with pytest.raises(UserError, match=r"--manual_dir=DIR .*NN/wsj_NNnn\.mrg \(sections 02-21 train"):
        TinyWsj().generate_data(tmp_path / "data", None, None)
    for path in (treebank / "22").iterdir():
        path.unlink()
    with pytest.raises(UserError, match=r"dev section\(s\) 22 under .*treebank"):
        TinyWsj().generate_data(tmp_path / "data", None, treebank)
    assert not (tmp_path / "data" / "wsj_parsing").exists()


def test_semisupervised_adds_silver_trees_to_train(tmp_path, treebank):
    with pytest.raises(UserError, match="silver"):
        TinySemisup().generate_data(tmp_path / "data", None, treebank)
    silver = treebank / "silver"
    silver.mkdir()
    (silver / "berkeley-000.mrg").write_text(
        "(S (NP (NNP Ruth)) (VP (VBZ sleeps)) (. .))\n(S (NP (PRP It)) (VP (VBZ rains)) (. .))\n"
    )
    summary = TinySemisup().generate_data(tmp_path / "data", None, treebank)
    assert summary["splits"]["train"]["examples"] == 42
    assert summary["splits"]["test"]["examples"] == 2


def test_a_tree_nested_20000_deep_does_not_stop_datagen(tmp_path, treebank):
    deep = "( " + "(S " * 20_000 + "(NN a) (NN b)" + ")" * 20_000 + " )\n"
    with open(treebank / "02" / "wsj_0201.mrg", "a") as f:
        f.write(deep)
    summary = TinyWsj().generate_data(tmp_path / "data", tmp_path / "tmp", treebank)
    assert summary["splits"]["train"]["examples"] == 40  # read, then dropped as far too long for training
    assert summary["splits"]["train"]["dropped_too_long"] == 1


def _evalb_cli(gold, test):
    result = subprocess.run([sys.executable, "-m", "t2t_repro.cli.evalb", f"--gold={gold}", f"--test={test}",
                             "--json"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_test_split_leaves_canonical_gold_and_decoded_files_that_evalb_scores_as_the_report(
        tmp_path, treebank, monkeypatch):
    problem = TinyWsj()
    problem.generate_data(tmp_path / "data", tmp_path / "tmp", treebank)
    pairs = problem.text_pairs("test", tmp_path / "data")
    out = tmp_path / "run"
    out.mkdir()
    run = types.SimpleNamespace(
        problem=problem, info=types.SimpleNamespace(data_dir=tmp_path / "data"), model=None,
        vocabularies=problem.vocabularies(tmp_path / "data"),
        decode_settings=lambda: PARSING_DECODE_SETTINGS, layout=RunLayout(out), checkpoint=str(out / "ckpt-1"))
    # A truncated output (repaired onto the words) and a failed one (nothing).
    hypotheses = [problem.postprocess(" ".join(pairs[0][1].split()[:6]), pairs[0][0]), ""]
    monkeypatch.setattr(jobs, "decode_texts", lambda sources, *args: hypotheses)
    report = jobs.decode_test_split(run)

    gold = (out / "test_gold.txt").read_text().splitlines()
    decoded = (out / "test_decoded.txt").read_text().splitlines()
    assert gold == [problem.postprocess(target, source) for source, target in pairs]  # one tree a line
    assert decoded == [hypotheses[0], ""]
    figures = _evalb_cli(out / "test_gold.txt", out / "test_decoded.txt")
    assert (report["skip_sentences"], report["sentences"]) == (1, 2)
    for key in ("f1", "precision", "recall", "matched_brackets", "gold_brackets", "test_brackets",
                "skip_sentences", "error_sentences", "tagging_accuracy"):
        assert report[key] == figures[key], key


def test_scorer_figures_equal_evalb_on_its_files_for_any_tree_strings(tmp_path):
    # A linearised hypothesis over a source word "(" (written escaped, as -LRB-), and a PTB string with the
    # bare outer pair (kept: evalb.c scores it as a bracket labelled "").
    sources = ["John ( runs", "Mary sleeps"]
    references = ["(S (NP NNP )NP -LRB- (VP VBZ )VP )S", "(S (NP NNP )NP (VP VBZ )VP )S"]
    hypotheses = ["(S (NP NNP )NP -LRB- (VP VBZ )VP )S", "( (S (NNP Mary) (VP (VBZ sleeps))) )"]
    scorer = ParseF1Scorer()
    files = scorer.evaluation_files(hypotheses, references, sources)
    assert files["decoded"] == ["(S (NP (NNP John)) (-LRB- -LRB-) (VP (VBZ runs)))",
                                "( (S (NNP Mary) (VP (VBZ sleeps))))"]
    for name, lines in files.items():
        (tmp_path / name).write_text("".join(line + "\n" for line in lines))
    scores = scorer(hypotheses, references, sources)
    # Gold S, NP, VP twice = 6; test S, NP, VP + "", S, VP = 6; matched S, NP, VP + S, VP = 5.
    assert (scores["matched_brackets"], scores["gold_brackets"], scores["test_brackets"]) == (5, 6, 6)
    assert scores == _evalb_cli(tmp_path / "gold", tmp_path / "decoded")


def test_parse_outputs_write_brackets_in_words_as_the_treebank_so_every_line_reads_back():
    from t2t_repro.data.ptb_tree import parse_tree

    output = catalog.get_problem("wsj_parsing").postprocess("(S (NP NN NN )NP . )S", "f(x) ( .")
    assert output == "(S (NP (NN f-LRB-x-RRB-) (NN -LRB-)) (. .))"
    assert parse_tree(output).words() == ["f-LRB-x-RRB-", "-LRB-", "."]
