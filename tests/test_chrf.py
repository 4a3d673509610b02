"""chrF beside BLEU: t2t-repro-bleu --metrics equal to the sacreBLEU command line's chrF2, report.json's chrF,
the dev_chrf curve, and --best_metric choosing the best checkpoint by it."""

import json
import os
import subprocess
import sys

import pytest
import tensorflow as tf
from conftest import TINY_RUN_FLAGS, run_cli, run_cli_in_process

from t2t_repro.evaluate.chrf import corpus_chrf

HYPOTHESES = ["Der Hund-Besitzer ging gestern nach Hause.", "Das E-Mail-Konto ist voll, aber die Platte nicht.",
              "东京是日本的首都。"]
REFERENCES = ["Der Hundebesitzer ging gestern nach Hause.", "Das E-Mail-Konto ist voll, die Festplatte aber nicht.",
              "日本的首都是东京。"]


@pytest.fixture
def files(tmp_path):
    hyp, ref = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hyp.write_text("".join(line + "\n" for line in HYPOTHESES), encoding="utf-8")
    ref.write_text("".join(line + "\n" for line in REFERENCES), encoding="utf-8")
    return hyp, ref


def test_chrf_equals_the_sacrebleu_command_line(files):
    hyp, ref = files
    theirs = json.loads(subprocess.run([sys.executable, "-m", "sacrebleu", str(ref), "-i", str(hyp), "-m", "chrf",
                                        "-w", "6"], capture_output=True, text=True, check=True).stdout)
    ours = json.loads(run_cli("bleu", f"--translation={hyp}", f"--reference={ref}", "--metrics=chrf", "--json").stdout)
    assert theirs["name"] == "chrF2" and round(ours["chrf"], 6) == theirs["score"]
    assert ours["signature"] == theirs["signature"]
    both = run_cli("bleu", f"--translation={hyp}", f"--reference={ref}", "--metrics=bleu,chrf")
    alone = run_cli("bleu", f"--translation={hyp}", f"--reference={ref}")
    assert both.stdout.startswith(alone.stdout) and both.stdout.splitlines()[-1] == ours["text"]  # BLEU unchanged
    assert ours["chrf"] == corpus_chrf(HYPOTHESES, REFERENCES)["chrf"] > 0
    refused = run_cli_in_process("bleu", f"--translation={hyp}", f"--reference={ref}", "--metrics=bleu,ter")
    assert refused.returncode == 2 and "argument --metrics: ter" in refused.stderr


def test_the_run_reports_chrf_and_logs_dev_chrf(trained_run):
    report = json.loads((trained_run / "report.json").read_text())
    assert report["chrf"]["signature"].startswith("nrefs:1|case:mixed|eff:yes|nc:6|nw:0")
    tags = {value.tag for name in os.listdir(trained_run / "dev")
            for event in tf.compat.v1.train.summary_iterator(str(trained_run / "dev" / name))
            for value in event.summary.value}
    assert {"dev_bleu", "dev_chrf", "dev_loss"} <= tags


def test_best_metric_chooses_the_best_checkpoint_by_chrf(tiny_data_dir, tmp_path):
    run = tmp_path / "run"
    result = run_cli_in_process("trainer", *TINY_RUN_FLAGS, "--train_steps=4", "--eval_steps=2", "--best_metric=chrf",
                                "--skip_average", "--skip_test", "--skip_export", f"--data_dir={tiny_data_dir}",
                                f"--output_dir={run}")
    assert result.returncode == 0, result.stdout + result.stderr
    score = json.loads((run / "best" / "score.json").read_text())
    logged = [line for line in result.stdout.splitlines() if line.startswith(f"step {score['step']} dev:")]
    assert score["metric"] == "dev_chrf" and f"dev_chrf {score['value']:.4f}" in logged[0]


@pytest.mark.parametrize("flags, message", [
    (["--best_metric=chrf", "--eval_decode_sentences=0"], "--best_metric=chrf is a figure of decoded dev sentences"),
    (["--best_metric=f1"], "--best_metric=f1: problem wmt_ende's dev evaluation gives bleu, chrf and loss"),
])
def test_a_best_metric_the_run_cannot_give_is_refused_before_anything_is_written(tiny_data_dir, tmp_path, flags,
                                                                                  message):
    result = run_cli_in_process("trainer", *TINY_RUN_FLAGS, *flags, f"--data_dir={tiny_data_dir}",
                                f"--output_dir={tmp_path / 'run'}")
    assert result.returncode == 2 and message in result.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "run").exists()
