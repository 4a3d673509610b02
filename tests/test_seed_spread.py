"""tools/seed_spread.py on run directories written by the test: the mean and spread of the seeds' scores, and the
runs it refuses to compare."""

import json
import os
import statistics
import sys

import pytest

from t2t_repro.cli.common import run_main

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "tools"))
import seed_spread  # noqa: E402

RUN = {"problem": "multi30k_ende", "problem_overrides": "", "hparams_set": "transformer_small",
       "hparams_overrides": "", "vocabulary_sha256": "c931"}


def _write_run(directory, seed, test_bleu, dev_bleu=None, steps=3534, **run_fields):
    directory.mkdir()
    (directory / "run.json").write_text(json.dumps(dict(RUN, seed=seed, **run_fields)))
    report = {"steps": steps, "bleu": {"sacrebleu": test_bleu, "tokenized_uncased": test_bleu + 0.3},
              "chrf": {"chrf": 63.0}}
    (directory / "report.json").write_text(json.dumps(report))
    if dev_bleu is not None:
        (directory / "val_bleu.json").write_text(json.dumps({"sacrebleu": dev_bleu, "chrf": {"chrf": 63.5}}))
    return str(directory)


def _spread(capsys, *argv):
    capsys.readouterr()
    code = run_main(seed_spread.main, list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_three_seeds_give_their_mean_range_and_sample_deviation(tmp_path, capsys):
    runs = [_write_run(tmp_path / f"s{seed}", seed, test, dev)
            for seed, test, dev in ((1, 39.57, 40.40), (2, 38.90, 40.95), (3, 39.20, 40.10))]
    code, out, _ = _spread(capsys, *runs, "--dev_scores=val_bleu.json", "--json")
    assert code == 0
    scores = json.loads(out)["scores"]
    assert scores["test sacreBLEU"]["per_run"] == [39.57, 38.90, 39.20]
    assert scores["test sacreBLEU"]["mean"] == pytest.approx(39.2233333)
    assert scores["test sacreBLEU"]["range"] == pytest.approx(0.67)
    assert scores["test sacreBLEU"]["std"] == pytest.approx(statistics.stdev([39.57, 38.90, 39.20]))
    assert scores["test tokenized uncased BLEU"]["mean"] == pytest.approx(39.5233333)
    assert scores["dev sacreBLEU"]["range"] == pytest.approx(0.85)
    assert "dev tokenized uncased BLEU" not in scores  # the dev file does not hold it
    assert [run["seed"] for run in json.loads(out)["runs"]] == [1, 2, 3]


def test_the_table_is_markdown_with_a_column_per_seed(tmp_path, capsys):
    runs = [_write_run(tmp_path / "a", 1, 39.57, steps=3534), _write_run(tmp_path / "b", 2, 38.91, steps=3500)]
    code, out, _ = _spread(capsys, *runs)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "| | seed 1 | seed 2 | mean | range | std |"
    assert lines[2] == "| steps | 3534 | 3500 | | | |"
    assert "| test sacreBLEU | 39.57 | 38.91 | 39.24 | 0.66 | 0.47 |" in lines


def test_parsing_runs_give_f1_precision_and_recall(tmp_path, capsys):
    runs = []
    for seed, f1 in ((1, 72.41), (2, 76.28)):
        directory = tmp_path / f"p{seed}"
        directory.mkdir()
        (directory / "run.json").write_text(json.dumps(dict(RUN, problem="ptb_sample_parsing", seed=seed)))
        (directory / "report.json").write_text(json.dumps({"steps": 3798, "f1": f1, "precision": f1 - 1,
                                                           "recall": f1 + 1}))
        runs.append(str(directory))
    code, out, _ = _spread(capsys, *runs, "--json")
    assert code == 0
    assert set(json.loads(out)["scores"]) == {"test F1", "test precision", "test recall"}
    assert json.loads(out)["scores"]["test F1"]["range"] == pytest.approx(3.87)


@pytest.mark.parametrize("second, message", [
    (dict(seed=1), "seed 1 stands in more than one run"),
    (dict(seed=2, hparams_overrides="dropout=0.1"), "differ in hparams_overrides ('dropout=0.1' against '')"),
    (dict(seed=2, vocabulary_sha256="ffff"), "differ in vocabulary_sha256"),
])
def test_runs_that_are_not_seeds_of_one_recipe_are_refused_in_one_line(tmp_path, capsys, second, message):
    first = _write_run(tmp_path / "a", 1, 39.57)
    seed = second.pop("seed")
    other = _write_run(tmp_path / "b", seed, 39.0, **second)
    code, out, err = _spread(capsys, first, other)
    assert code == 2 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1


def test_a_missing_report_or_dev_file_is_refused_in_one_line(tmp_path, capsys):
    first = _write_run(tmp_path / "a", 1, 39.57, dev_bleu=40.4)
    second = _write_run(tmp_path / "b", 2, 39.0)
    code, _, err = _spread(capsys, first, second, "--dev_scores=val_bleu.json")
    assert code == 2 and "val_bleu.json not found" in err and len(err.strip().splitlines()) == 1
    os.remove(os.path.join(first, "report.json"))
    code, _, err = _spread(capsys, first, second)
    assert code == 2 and "report.json not found" in err
    code, _, err = _spread(capsys, second)
    assert code == 2 and "at least two runs" in err


def test_a_report_that_is_not_a_json_object_is_refused_in_one_line(tmp_path, capsys):
    first = _write_run(tmp_path / "a", 1, 39.57)
    second = _write_run(tmp_path / "b", 2, 39.0)
    (tmp_path / "b" / "report.json").write_text("[39.0]")
    code, out, err = _spread(capsys, first, second)
    assert code == 2 and out == ""
    assert "report.json holds an array, not a JSON object" in err and len(err.strip().splitlines()) == 1
