"""tools/benchmarks/benepar_parsing.py without benepar or torch: the trees `prepare` writes, the predicted trees as
they are scored (TOP dropped, tags put back), the EVALB figures, the learning-rate schedule, the training-time
budget's loop and the command-line checks."""

import argparse
import sys
from pathlib import Path

import pytest

GOLD = "(S (NP (DT The) (NN dog)) (VP (VBZ barks)) (. .))"


@pytest.fixture
def harness(monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "tools" / "benchmarks"))
    import benepar_parsing

    yield benepar_parsing
    sys.modules.pop("benepar_parsing", None)


@pytest.fixture
def modules(harness):
    return harness.t2t_repro_modules()


def test_a_predicted_tree_loses_its_top_and_takes_the_gold_tags(harness, modules):
    ptb_tree, _, evalb_files = modules
    predicted = "(TOP (S (NP (XX The) (XX dog)) (VP (XX barks)) (XX .)))"
    assert harness.prediction_line(predicted, GOLD, ptb_tree, evalb_files) == GOLD
    assert harness.prediction_line(predicted, GOLD, ptb_tree, evalb_files, tags="t2t") == (
        "(S (NP (XX The) (XX dog)) (VP (XX barks)) (. .))")
    several = "(TOP (NP (XX The) (XX dog)) (VP (XX barks)) (XX .))"  # no root constituent: TOP stays
    assert harness.prediction_line(several, GOLD, ptb_tree, evalb_files).startswith("(TOP (NP (DT The)")
    assert harness.prediction_line("", GOLD, ptb_tree, evalb_files) == ""
    other = "(TOP (S (XX The) (XX cat) (XX .)))"  # other words: the tags stay, EVALB counts an error
    assert harness.prediction_line(other, GOLD, ptb_tree, evalb_files) == "(S (XX The) (XX cat) (XX .))"


def test_evalb_figures_of_made_up_parses(harness, modules):
    gold = [GOLD, "(S (NP (PRP It)) (VP (VBD rained)) (. .))", GOLD, GOLD]
    predicted = [
        "(TOP (S (NP (XX The) (XX dog)) (VP (XX barks)) (XX .)))",  # all 3 brackets right
        "(TOP (S (XX It) (VP (XX rained) (XX .))))",  # S right, VP over "rained" right (the "." is deleted)
        "(TOP (S (XX The) (VP (XX dog) (XX barks)) (XX .)))",  # S right, VP wrong, NP missed
        "(TOP (S (XX A) (XX dog) (XX barks) (XX .)))",  # another word: an error sentence
    ]
    scores = harness.evalb_scores(gold, predicted, modules)
    figures = scores["gold_tags"]
    assert (figures["matched_brackets"], figures["gold_brackets"], figures["test_brackets"]) == (3 + 2 + 1, 3 + 3 + 3,
                                                                                               3 + 2 + 2)
    assert figures["error_sentences"] == 1 and figures["sentences"] == 4
    assert figures["precision"] == pytest.approx(100 * 6 / 7) and figures["recall"] == pytest.approx(100 * 6 / 9)
    assert figures["f1"] == pytest.approx(100 * 2 * 6 / 16)
    assert figures["complete_match"] == pytest.approx(100 / 3)
    assert scores["files"]["gold"] == gold and scores["files"]["test"][0] == GOLD
    assert scores["t2t_tags"]["f1"] == pytest.approx(figures["f1"])
    assert scores["files"]["gold_t2t"][1] == "(S (NP (XX It)) (VP (XX rained)) (. .))"


def test_gold_tags_decide_which_words_are_punctuation(harness, modules):
    gold = ["(S (NP (NNP Hi)) (: --) (VP (VB go)))"]  # "--" tagged ':' is deleted; as a word, too, for t2t
    predicted = ["(TOP (S (NP (XX Hi) (XX --)) (VP (XX go))))"]
    scores = harness.evalb_scores(gold, predicted, modules)
    assert scores["gold_tags"]["f1"] == pytest.approx(100.0)  # NP over "Hi --" is NP over "Hi" once -- is gone
    assert scores["t2t_tags"]["f1"] == pytest.approx(100.0)
    with pytest.raises(ValueError, match="2 predicted trees for 1 gold"):
        harness.evalb_scores(gold, predicted * 2, modules)


def test_a_blank_prediction_is_a_skip_sentence(harness, modules):
    figures = harness.evalb_scores([GOLD, GOLD], ["", "(TOP (S (XX The) (XX dog) (XX barks) (XX .)))"],
                                   modules)["gold_tags"]
    assert figures["skip_sentences"] == 1 and figures["error_sentences"] == 0
    assert figures["precision"] == pytest.approx(100.0) and figures["recall"] == pytest.approx(100 / 3)


def test_the_learning_rate_warms_up_from_zero_then_halves_on_a_plateau(harness):
    schedule = harness.LearningRate(base=0.9, warmup=3, factor=0.5, patience=2)
    rates = [schedule.rate]
    for _ in range(4):
        rates.append(schedule.after_update())
    assert rates == pytest.approx([0.0, 0.3, 0.6, 0.9, 0.9])  # before updates 1-5
    assert schedule.after_update(50.0) == pytest.approx(0.9)  # a first best
    assert [schedule.after_update(50.0) for _ in range(3)] == pytest.approx([0.9, 0.9, 0.45])  # 3 checks > 2
    assert schedule.after_update(50.004) == pytest.approx(0.45)  # not a relative 1e-4 better: a bad check
    assert schedule.after_update(60.0) == pytest.approx(0.45) and schedule.bad_checks == 0
    assert schedule.decays == 1


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


HPARAMS = dict(learning_rate=1.0, learning_rate_warmup_steps=2, step_decay_factor=0.5, step_decay_patience=5,
               checks_per_epoch=4, max_consecutive_decays=3)


def _run(harness, minutes, dev_f1s, hparams=HPARAMS, batches=10, size=10, step_s=10.0, dev_s=5.0):
    clock, rates, dev_steps = _Clock(), [], []
    f1s = iter(dev_f1s)

    def epoch_batches(epoch):
        return iter([list(range(size))] * batches)

    def update(batch, rate):
        clock.now += step_s
        rates.append(rate)
        return len(batch)

    def check_dev(step):
        clock.now += dev_s
        dev_steps.append(step)
        return next(f1s)

    report = harness.budgeted_training(epoch_batches, update, check_dev, batches * size, hparams, minutes, clock,
                                       log=lambda text: None)
    return report, rates, dev_steps


def test_the_budget_ends_training_after_the_update_that_ends_past_it_and_checks_dev_then(harness):
    report, rates, dev_steps = _run(harness, minutes=1.0, dev_f1s=[10.0, 30.0, 20.0])
    # a check every 25 sentences: after updates 3 (30, 5 carried) and 5 (25); dev time counts: 75 s after update 6
    assert dev_steps == [3, 5, 6] and report["steps"] == 6 and report["stopped_by"] == "budget"
    assert report["train_seconds"] == 75.0 and report["epochs"] == 0.6
    assert (report["best_dev_f1"], report["best_step"]) == (30.0, 5)
    assert rates == pytest.approx([0.0, 0.5, 1.0, 1.0, 1.0, 1.0])
    assert [check["seconds"] for check in report["dev_checks"]] == [35.0, 60.0, 75.0]


def test_training_ends_without_a_better_dev_f1_for_the_epochs_benepar_allows(harness):
    hparams = dict(HPARAMS, step_decay_patience=0, max_consecutive_decays=1)
    report, _, dev_steps = _run(harness, minutes=1000.0, dev_f1s=[40.0] * 100, hparams=hparams, step_s=1.0,
                                    dev_s=0.0)
    # best at step 3 (30 sentences); after epoch 2, 200 - 30 sentences > (0 + 1) x 1 x 100
    assert report["stopped_by"] == "no_dev_improvement" and report["last_epoch"] == 2 and report["steps"] == 20
    assert dev_steps == [3, 5, 8, 10, 13, 15, 18, 20] and report["best_step"] == 3
    assert report["learning_rate_decays"] == 7  # patience 0 x 4 checks: every check after warm-up halves it


def test_command_line_checks(harness, capsys, monkeypatch):
    parser = harness.argument_parser()
    args = parser.parse_args(["--work=w", "train", "--name=n"])
    assert args.max_train_minutes == 45.0 and args.threads == 2 and args.d_model is None
    for bad in (["--work=w", "train", "--name=n", "--max_train_minutes=0"],
                ["--work=w", "--threads=0", "parse", "--name=n"],
                ["--work=w", "train", "--name=n", "--num_layers=-1"],
                ["--work=w", "train"]):
        with pytest.raises(SystemExit):
            parser.parse_args(bad)
    capsys.readouterr()
    values = harness.model_hparams(parser.parse_args(["--work=w", "train", "--name=n", "--num_layers=3"]))
    assert (values["d_model"], values["num_layers"], values["batch_size"], values["learning_rate"]) == (256, 3, 32,
                                                                                                        0.0008)
    assert values["use_chars_lstm"] and values["use_encoder"] and not values["use_pretrained"]
    with pytest.raises(SystemExit, match="must be even"):
        harness.model_hparams(parser.parse_args(["--work=w", "train", "--name=n", "--d_model=255"]))
    monkeypatch.setitem(sys.modules, "t2t_repro", None)  # as in benepar's venv: t2t-repro is not installed there
    args = argparse.Namespace(command="score", t2t_bin="", threads=2)
    with pytest.raises(SystemExit, match="give --t2t_bin"):
        harness.score(args)


def test_cpu_flags(harness, tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("flags : fpu avx2 avx512f avx512_vnni sse\nflags : fpu avx2 avx512f\n")
    assert harness.cpu_flags(cpuinfo) == ["avx2", "avx512_vnni", "avx512f"]
    assert harness.cpu_flags(tmp_path / "none") == []


def test_prepare_writes_each_split_of_made_up_files_as_canonical_lines(harness, tmp_path):
    combined = tmp_path / "ptb" / "combined"
    combined.mkdir(parents=True)
    for number in range(1, 200):
        (combined / f"wsj_{number:04d}.mrg").write_text(
            f"( (S (NP-SBJ (NNP Word{number}) (-NONE- *T*-1)) (VP (VBZ runs) (PRN (-LRB- -LRB-) (CD {number}) "
            f"(-RRB- -RRB-))) (. .)) )\n")
    work = tmp_path / "work"
    harness.main([f"--work={work}", "prepare", f"--manual_dir={tmp_path / 'ptb'}"])
    lines = {split: (work / "data" / f"{split}.trees").read_text().splitlines() for split in harness.SPLITS}
    assert [len(lines[split]) for split in harness.SPLITS] == [159, 20, 20]
    assert lines["dev"][0] == "(S (NP (NNP Word160)) (VP (VBZ runs) (PRN (-LRB- -LRB-) (CD 160) (-RRB- -RRB-))) (. .))"
    assert lines["test"][-1].startswith("(S (NP (NNP Word199))")
    result = (work / "results.jsonl").read_text()
    assert '"trees": {"dev": 20, "test": 20, "train": 159}' in result
