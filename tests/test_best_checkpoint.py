"""The best checkpoint and early stopping through the trainer's command line, and the one --checkpoint
vocabulary (averaged, latest, best, ckpt-N) of the tools that read a run.

The early-stopping run trains with 30 times the paper's learning rate, which makes the dev loss rise after its
first evaluation (3.95, 5.88, 7.68 at steps 2, 4, 6): with --early_stopping=2 it stops at step 6, its best
checkpoint is step 2's, and checkpoint rotation (--keep_checkpoints=2) has removed ckpt-2 by then."""

import json
import os
import shutil

import pytest
import tensorflow as tf
from conftest import TINY_RUN_FLAGS, copy_run, run_cli_in_process

from t2t_repro.run.end_of_run import best_report
from t2t_repro.run.jobs import average
from t2t_repro.run.layout import RunLayout
from t2t_repro.run.restore import restore_run
from t2t_repro.train.checkpoints import write_index

DIVERGING = [flag + ",learning_rate_scale=30" if flag.startswith("--hparams_overrides") else flag
             for flag in TINY_RUN_FLAGS]
EARLY_STOPPING_FLAGS = [*DIVERGING, "--eval_decode_sentences=0", "--log_steps=2", "--train_steps=40",
                        "--checkpoint_steps=2", "--keep_checkpoints=2", "--eval_steps=2", "--early_stopping=2"]
STOP_LINE = "early stopping at step 6: no better dev score in 2 evaluations in a row (--early_stopping=2); the best is " \
            "dev_loss {value:.4f} at step 2, in {best}"


def _train(output_dir, data_dir, *extra):
    result = run_cli_in_process("trainer", *EARLY_STOPPING_FLAGS, *extra, f"--data_dir={data_dir}",
                                f"--output_dir={output_dir}")
    assert result.returncode == 0, result.stdout + result.stderr
    return result


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory, tiny_data_dir):
    """The output_dir of the early-stopping run and its stdout."""
    output_dir = tmp_path_factory.mktemp("early_stopping") / "run"
    return output_dir, _train(output_dir, tiny_data_dir).stdout


def _score(run):
    return json.loads((run / "best" / "score.json").read_text())


def _dev_losses(log):
    return {int(line.split()[1]): float(line.split()[4]) for line in log.splitlines() if " dev: dev_loss " in line}


def test_training_stops_after_k_evaluations_without_improvement_and_the_run_ends_as_usual(stopped_run):
    run, log = stopped_run
    losses = _dev_losses(log)
    assert sorted(losses) == [2, 4, 6] and losses[2] < losses[4] < losses[6]  # the dev loss rose after step 2
    score = _score(run)
    assert score == {"step": 2, "metric": "dev_loss", "value": pytest.approx(losses[2], abs=5e-5),
                     "higher_is_better": False}
    assert STOP_LINE.format(value=score["value"], best=run / "best") in log
    report = json.loads((run / "report.json").read_text())
    assert report["steps"] == 6 and report["stopped_early"] is True
    # The averaged checkpoint (steps 4 and 6, the paper's model) gives the test scores and the export; the best
    # (step 2) is decoded too, into its own file.
    assert report["averaged_checkpoint"] == str(run / "averaged" / "ckpt-6")
    assert report["checkpoint"] == report["averaged_checkpoint"] and "sacrebleu" in report["bleu"]
    assert (run / "export" / "1" / "saved_model.pb").is_file()
    best = report["best"]
    assert (best["step"], best["metric"], best["dev_score"]) == (2, "dev_loss", score["value"])
    assert best["test"]["checkpoint"] == str(run / "best" / "ckpt-2") and "sacrebleu" in best["test"]["bleu"]
    assert best["test"]["bleu"]["sacrebleu_text"] != report["bleu"]["sacrebleu_text"]
    assert len((run / "test_decoded_best.txt").read_text(encoding="utf-8").splitlines()) == 20
    best_scalar = [event for name in os.listdir(run / "dev")
                   for event in tf.compat.v1.train.summary_iterator(str(run / "dev" / name))
                   if any(value.tag == "best_dev_loss" for value in event.summary.value)]
    assert [event.step for event in best_scalar] == [2, 4, 6]


def test_the_best_checkpoint_outlives_checkpoint_rotation(stopped_run):
    run, _ = stopped_run
    assert sorted(os.listdir(run / "checkpoints")) == [
        "checkpoint", "ckpt-4.data-00000-of-00001", "ckpt-4.index", "ckpt-6.data-00000-of-00001", "ckpt-6.index"]
    assert (run / "best" / "ckpt-2.index").is_file()
    assert not [name for name in os.listdir(run) if name.startswith(".best")]  # no leftover of its writes


def test_a_resumed_run_keeps_the_best_score_and_the_patience_count(stopped_run, tiny_data_dir, tmp_path):
    straight, straight_log = stopped_run
    resumed = tmp_path / "resumed"
    # Stops at step 4 (one evaluation without improvement), before early stopping.
    _train(resumed, tiny_data_dir, "--train_steps=4", "--skip_average", "--skip_test", "--skip_export")
    second = _train(resumed, tiny_data_dir, "--skip_average", "--skip_test", "--skip_export").stdout
    assert f"resumed from {resumed / 'checkpoints' / 'ckpt-4'} at step 4" in second
    assert _score(resumed) == _score(straight)
    assert STOP_LINE.format(value=_score(straight)["value"], best=resumed / "best") in second
    assert "best dev_loss so far" not in second  # steps 6's worse loss did not replace the best
    # A restart after early stopping trains no further.
    third = _train(resumed, tiny_data_dir, "--skip_average", "--skip_test", "--skip_export").stdout
    assert STOP_LINE.format(value=_score(straight)["value"], best=resumed / "best") in third
    assert "step 8/40" not in third and not (resumed / "checkpoints" / "ckpt-8.index").exists()
    # The patience is the command's: with early stopping off, a restart trains on (docs/training.md).
    fourth = _train(resumed, tiny_data_dir, "--early_stopping=0", "--train_steps=8", "--skip_average", "--skip_test",
                    "--skip_export").stdout
    assert "early stopping" not in fourth and (resumed / "checkpoints" / "ckpt-8.index").exists()


def _decode_with(run, tmp_path, *flags):
    """(stderr, the score of the best hypothesis for one sentence) of the decoder with `flags`."""
    source, target = tmp_path / "source.txt", tmp_path / "out.txt"
    source.write_text("the cat sees a dog\n", encoding="utf-8")
    result = run_cli_in_process("decoder", f"--output_dir={run}", f"--decode_from_file={source}",
                                f"--decode_to_file={target}", "--extra_length=3", "--nbest=2", "--quiet", *flags)
    assert result.returncode == 0, result.stderr
    return result.stderr, float(target.read_text(encoding="utf-8").split("\t")[0])


def _one_line_error(result):
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_the_decoder_restores_the_checkpoint_it_is_asked_for_and_says_which(stopped_run, tmp_path):
    run, _ = stopped_run
    asked = {None: ("averaged/ckpt-6", 6), "averaged": ("averaged/ckpt-6", 6), "latest": ("checkpoints/ckpt-6", 6),
             "best": ("best/ckpt-2", 2), "ckpt-4": ("checkpoints/ckpt-4", 4)}
    scores = {}
    for checkpoint, (used, step) in asked.items():
        stderr, scores[checkpoint] = _decode_with(run, tmp_path, *([f"--checkpoint={checkpoint}"] if checkpoint else []))
        assert f"using checkpoint {run / used} (step {step}, " in stderr
    # Each restored the weights of the checkpoint it names: four checkpoints, four scores.
    assert scores[None] == scores["averaged"]
    assert len({scores[name] for name in ("averaged", "latest", "best", "ckpt-4")}) == 4
    # A checkpoint prefix, in full or relative to the output_dir.
    for given, used in [(str(run / "checkpoints" / "ckpt-6"), "checkpoints/ckpt-6"), ("best/ckpt-2", "best/ckpt-2")]:
        assert restore_run(str(run), given).checkpoint == str(run / used)


def test_checkpoints_that_do_not_exist_are_one_line_naming_those_that_do(stopped_run, tmp_path):
    run = copy_run(stopped_run[0], tmp_path)
    source = tmp_path / "source.txt"
    source.write_text("the cat sees a dog\n", encoding="utf-8")
    files = [f"--decode_from_file={source}", f"--decode_to_file={tmp_path / 'out.txt'}"]
    message = _one_line_error(run_cli_in_process("decoder", f"--output_dir={run}", "--checkpoint=ckpt-2", *files))
    assert "ckpt-2 not found" in message
    assert "averaged/ckpt-6, best/ckpt-2, checkpoints/ckpt-4, checkpoints/ckpt-6" in message
    shutil.rmtree(run / "best")
    message = _one_line_error(run_cli_in_process("exporter", f"--output_dir={run}", "--checkpoint=best"))
    assert f"--checkpoint=best: {run / 'best'} holds no checkpoint" in message
    assert "averaged/ckpt-6, checkpoints/ckpt-4, checkpoints/ckpt-6" in message


def test_latest_is_the_newest_intact_checkpoint_found_by_its_files(stopped_run, tmp_path):
    run = copy_run(stopped_run[0], tmp_path)
    checkpoints = run / "checkpoints"
    # An index file left behind by the newest checkpoint (a crash between writing it and the index), then lost:
    # the files still say which is newest.
    write_index(str(checkpoints), [str(checkpoints / "ckpt-4")])
    assert restore_run(str(run), "latest").checkpoint == str(checkpoints / "ckpt-6")
    (checkpoints / "checkpoint").unlink()
    stderr, _ = _decode_with(run, tmp_path, "--checkpoint=latest")
    assert f"using checkpoint {checkpoints / 'ckpt-6'} (step 6, latest)" in stderr
    shutil.rmtree(run / "averaged")
    stderr, _ = _decode_with(run, tmp_path)
    assert f"using checkpoint {checkpoints / 'ckpt-6'} (step 6, the default)" in stderr
    data = checkpoints / "ckpt-6.data-00000-of-00001"
    data.write_bytes(data.read_bytes()[:100])  # a damaged newest: latest is the one before, as the trainer resumes
    stderr, _ = _decode_with(run, tmp_path, "--checkpoint=latest")
    assert f"checkpoint {checkpoints / 'ckpt-6'} is damaged" in stderr
    assert f"using checkpoint {checkpoints / 'ckpt-4'} (step 4, latest)" in stderr


def test_the_report_decodes_the_best_only_when_it_was_chosen_before_the_last_step(stopped_run, tmp_path):
    run = copy_run(stopped_run[0], tmp_path)
    layout = RunLayout(run)
    averaged_of_two = restore_run(str(run), "averaged")  # steps 4 and 6
    (run / "test_decoded_best.txt").unlink()  # the copied run's, of its best at step 2
    # A best of step 6 with the weights of checkpoints/ckpt-6, in the model-only format.
    shutil.rmtree(run / "best")
    shutil.copytree(average(str(run), num_last=1).rsplit("/", 1)[0], run / "best")
    (run / "best" / "score.json").write_text(json.dumps({**_score(stopped_run[0]), "step": 6}))
    same = best_report(layout, restore_run(str(run), "latest"))
    assert same["step"] == 6 and same["same_as"] == str(run / "checkpoints" / "ckpt-6") and "test" not in same
    last = best_report(layout, averaged_of_two)  # the last step's checkpoint against an average ending there
    assert last["step"] == 6 and last["last_checkpoint"] is True and "test" not in last and "same_as" not in last
    assert not (run / "test_decoded_best.txt").exists()
    (run / "best" / "score.json").write_text(json.dumps(_score(stopped_run[0])))  # step 2: chosen before the end
    earlier = best_report(layout, averaged_of_two)
    assert "same_as" not in earlier and "last_checkpoint" not in earlier
    assert earlier["test"]["checkpoint"] == str(run / "best" / "ckpt-6")
