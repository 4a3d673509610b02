"""Starting a run from another run's checkpoint through the trainer's command line: --warm_start_from with
--reset, data encoded with another run's vocabulary (vocab_from), and what is refused in one line.

The two exact equivalences: resetting nothing continues the parent run as resuming it does (the same losses
and weights), and resetting everything equals a fresh run whose initial weights were set to the checkpoint."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
from conftest import TINY_RUN_FLAGS, copy_run, run_cli_in_process, write_parallel_corpus
from test_nothing_lost import checksums

from t2t_repro.train.checkpoints import read_model
from t2t_repro.train.trainer import Trainer
from t2t_repro.train.warm_start import checkpoint_sha256

QUIET_END = ["--checkpoint_steps=2", "--keep_checkpoints=20", "--eval_decode_sentences=0", "--skip_average",
             "--skip_test", "--skip_export", "--log_steps=1"]


def _train(data_dir, output_dir, *extra):
    result = run_cli_in_process("trainer", *TINY_RUN_FLAGS, *QUIET_END, *extra, f"--data_dir={data_dir}",
                                f"--output_dir={output_dir}")
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def _losses(log):
    """{step: loss} of the trainer's log lines "step N/M  loss L  ..."."""
    return {int(line.split()[1].split("/")[0]): line.split()[3] for line in log.splitlines()
            if line.startswith("step ") and "  loss " in line}


def _state(prefix):
    """Every variable of a training checkpoint but the clock and the save counter: weights, Adam's moments and
    count, dropout's random state."""
    reader = tf.train.load_checkpoint(str(prefix))
    skip = ("_CHECKPOINTABLE_OBJECT_GRAPH", "save_counter", "train_seconds", "data/", "best/")
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
            if not name.startswith(skip) and "ITERATOR_STATE" not in name}


def _assert_identical(a, b):
    assert a.keys() == b.keys() and len(a) > 10
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


@pytest.fixture(scope="module")
def parent(tmp_path_factory, tiny_data_dir):
    """A tiny run trained 8 steps, its checkpoints every 2 steps kept."""
    output_dir = tmp_path_factory.mktemp("parent") / "run"
    _train(tiny_data_dir, output_dir, "--train_steps=8")
    return output_dir


def test_resetting_nothing_continues_the_run_as_resuming_it_does(parent, tiny_data_dir, tmp_path):
    resumed = copy_run(parent, tmp_path)
    resumed_log = _train(tiny_data_dir, resumed, "--train_steps=14")
    child = tmp_path / "child"
    child_log = _train(tiny_data_dir, child, "--train_steps=14", f"--warm_start_from={parent}:latest", "--reset=")
    assert f"warm start from {parent / 'checkpoints' / 'ckpt-8'} (step 8): reset nothing" in child_log
    assert _losses(child_log) == _losses(resumed_log) and sorted(_losses(child_log)) == list(range(9, 15))
    _assert_identical(_state(resumed / "checkpoints" / "ckpt-14"), _state(child / "checkpoints" / "ckpt-14"))
    record = json.loads((child / "run.json").read_text())["warm_start"]
    assert record == {"run": str(parent), "checkpoint": str(parent / "checkpoints" / "ckpt-8"), "step": 8,
                      "reset": [], "same_input": True, "vocabulary_sha256": record["vocabulary_sha256"],
                      "checkpoint_sha256": checkpoint_sha256(str(parent / "checkpoints" / "ckpt-8"))}
    assert record["vocabulary_sha256"] == json.loads((parent / "run.json").read_text())["vocabulary_sha256"]


def test_resetting_everything_equals_a_fresh_run_started_from_the_checkpoints_weights(
        parent, tiny_data_dir, tmp_path, monkeypatch):
    child = tmp_path / "child"
    child_log = _train(tiny_data_dir, child, "--train_steps=6", f"--warm_start_from={parent}:ckpt-6")
    assert "(step 6): reset optimizer, schedule, step; kept: weights" in child_log
    fresh_restore = Trainer.restore

    def restore_then_set_weights(trainer, warm_start=None):
        fresh_restore(trainer)
        read_model(trainer.model, str(parent / "checkpoints" / "ckpt-6"))

    monkeypatch.setattr(Trainer, "restore", restore_then_set_weights)
    fresh = tmp_path / "fresh"
    fresh_log = _train(tiny_data_dir, fresh, "--train_steps=6")
    assert _losses(child_log) == _losses(fresh_log) and sorted(_losses(child_log)) == list(range(1, 7))
    _assert_identical(_state(child / "checkpoints" / "ckpt-6"), _state(fresh / "checkpoints" / "ckpt-6"))
    # The learning rate warmed up again: step 1's is the schedule's first, not step 7's.
    first_rate = [line for line in child_log.splitlines() if line.startswith("step 1/6")][0].split()[5]
    assert first_rate == [line for line in fresh_log.splitlines() if line.startswith("step 1/6")][0].split()[5]


def test_kept_schedule_and_reset_step_count_on_from_the_parents_step(parent, tiny_data_dir, tmp_path):
    """--reset=optimizer,step: a fresh Adam, a step count from 0, the learning rate of step 9 onwards."""
    child_log = _train(tiny_data_dir, tmp_path / "child", "--train_steps=2", f"--warm_start_from={parent}:latest",
                       "--reset=optimizer,step")
    resumed_log = _train(tiny_data_dir, copy_run(parent, tmp_path), "--train_steps=10")
    rates = {step: line.split()[5] for line in child_log.splitlines() for step in (1, 2)
             if line.startswith(f"step {step}/2")}
    assert rates == {1: _rate(resumed_log, 9), 2: _rate(resumed_log, 10)}


def _rate(log, step):
    return [line for line in log.splitlines() if line.startswith(f"step {step}/")][0].split()[5]


def test_a_restart_resumes_the_warm_started_run_and_keeps_its_choice(parent, tiny_data_dir, tmp_path):
    child = tmp_path / "child"
    flags = [f"--warm_start_from={parent}", "--reset=optimizer,schedule"]
    first = _train(tiny_data_dir, child, "--train_steps=10", *flags)
    assert "warm start from" in first and "step 9/10" in first  # the default checkpoint, step 8; counting on
    second = _train(tiny_data_dir, child, "--train_steps=12")
    assert "resumed from" in second and "warm start" not in second
    assert json.loads((child / "run.json").read_text())["warm_start"]["reset"] == ["optimizer", "schedule"]
    refused = run_cli_in_process("trainer", *TINY_RUN_FLAGS, *QUIET_END, "--train_steps=14", *flags[:1], "--reset=",
                                 f"--data_dir={tiny_data_dir}", f"--output_dir={child}")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "a restart resumes it as it began" in refused.stderr


@pytest.mark.parametrize("flags, message", [
    (["--warm_start_from={missing}"], "{missing} is not a t2t-repro run (no run.json there)"),
    (["--warm_start_from={parent}", "--hparams_overrides=max_length=32,warmup_steps=20,num_layers=1,d_model=48,"
      "d_ff=64,num_heads=2,d_k=16,d_v=16"], "the run's architecture differs from {parent}'s (d_model 48, not 32)"),
    (["--warm_start_from={parent}:averaged"], "--warm_start_from=averaged: {parent}/averaged holds no checkpoint"),
    (["--warm_start_from={parent}:ckpt-8", "--reset=step"], "holds no Adam's state"),
    (["--warm_start_from={parent}:ckpt-99"], "checkpoint ckpt-99 not found"),
    (["--warm_start_from={parent}:latest", "--reset=optimizer"],
     "train_steps=8 is not beyond step 8 of {parent}/checkpoints/ckpt-8"),
    (["--warm_start_from={parent}", "--reset=weights"], "--reset=weights: unknown weights"),
    (["--reset=optimizer"], "--reset says what a warm start resets: give --warm_start_from=RUN too"),
    (["--warm_start_from="], "--warm_start_from is empty: give the run to start from"),
    (["--warm_start_from={damaged}:ckpt-8"], "{damaged}/checkpoints/ckpt-8"),
])
def test_a_warm_start_that_cannot_be_is_refused_in_one_line_and_writes_nothing(
        parent, tiny_data_dir, tmp_path, flags, message):
    names = {"parent": parent, "missing": tmp_path / "missing"}
    if "--reset=step" in flags:  # an averaged-like checkpoint: the weights alone
        weights_only = tmp_path / "weights_only"
        os.makedirs(weights_only)
        (weights_only / "run.json").write_text((parent / "run.json").read_text())
        (weights_only / "hparams.json").write_text((parent / "hparams.json").read_text())
        tf.train.Checkpoint(model=_model_of(parent)).write(str(weights_only / "checkpoints" / "ckpt-8"))
        names["parent"] = weights_only
    if "{damaged}" in flags[0]:  # a parent whose weights lost a byte: refused before the run is written
        names["damaged"] = copy_run(parent, tmp_path / "damaged")
        tf.train.Checkpoint(model=_model_of(parent)).write(str(names["damaged"] / "checkpoints" / "ckpt-8"))
        data_file = next((names["damaged"] / "checkpoints").glob("ckpt-8.data-*"))
        damaged = bytearray(data_file.read_bytes())
        damaged[len(damaged) // 2] ^= 0xFF
        data_file.write_bytes(bytes(damaged))
    flags = [flag.format(**names) for flag in flags]
    overrides = [flag for flag in flags if flag.startswith("--hparams_overrides")]
    base = [flag for flag in TINY_RUN_FLAGS if not (overrides and flag.startswith("--hparams_overrides"))]
    output_dir = tmp_path / "child"
    result = run_cli_in_process("trainer", *base, *QUIET_END, "--train_steps=8", *flags,
                                f"--data_dir={tiny_data_dir}", f"--output_dir={output_dir}")
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert message.format(**names) in result.stderr
    assert not output_dir.exists()


def test_a_restart_takes_its_parent_under_another_path_but_never_a_changed_parent(parent, tiny_data_dir, tmp_path):
    """The parent is recorded by its checkpoint's sha256: a restart that has no checkpoint of its own yet (killed
    before its first) refuses a parent checkpoint rewritten since; the same parent named through a symbolic link
    is the same run."""
    own_parent = copy_run(parent, tmp_path / "parent")
    child = tmp_path / "child"
    _train(tiny_data_dir, child, "--train_steps=10", f"--warm_start_from={own_parent}:ckpt-8", "--reset=optimizer")
    record = json.loads((child / "run.json").read_text())["warm_start"]
    assert len(record["checkpoint_sha256"]) == 64
    link = tmp_path / "parent_link"
    link.symlink_to(own_parent)
    for checkpoint_file in (child / "checkpoints").iterdir():  # as if killed before its first checkpoint
        checkpoint_file.unlink()
    resumed = _train(tiny_data_dir, child, "--train_steps=10", f"--warm_start_from={link}:ckpt-8",
                     "--reset=optimizer")
    assert "warm start from" in resumed
    for checkpoint_file in (child / "checkpoints").iterdir():
        checkpoint_file.unlink()
    for name in ("index", "data-00000-of-00001"):  # the parent's ckpt-8 rewritten with its ckpt-6
        os.replace(own_parent / "checkpoints" / f"ckpt-6.{name}", own_parent / "checkpoints" / f"ckpt-8.{name}")
    before = checksums(tmp_path)
    refused = run_cli_in_process("trainer", *TINY_RUN_FLAGS, *QUIET_END, "--train_steps=10",
                                 f"--data_dir={tiny_data_dir}", f"--output_dir={child}")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stdout + refused.stderr
    assert f"{own_parent}/checkpoints/ckpt-8 has changed since this run began from it" in refused.stderr
    assert checksums(tmp_path) == before  # refused before anything was written


def _model_of(run):
    from t2t_repro.run.restore import restore_run

    return restore_run(str(run), "latest").model


def test_own_run_as_parent_is_refused(parent, tiny_data_dir):
    result = run_cli_in_process("trainer", *TINY_RUN_FLAGS, *QUIET_END, "--train_steps=10",
                                f"--warm_start_from={parent}", f"--data_dir={tiny_data_dir}", f"--output_dir={parent}")
    assert result.returncode == 2 and "is this run's own --output_dir" in result.stderr


def _translate_files(corpus, run=None):
    settings = "source_language=en,target_language=de" + (f",vocab_from={run}" if run else ",vocab_size=300")
    return ["--problem=translate_files", f"--problem_overrides={settings}", f"--manual_dir={corpus}"]


def test_new_data_encoded_with_the_parents_vocabulary_fine_tunes_and_ensembles_with_it(parent, tmp_path):
    corpus = write_parallel_corpus(tmp_path / "in_domain", seed=7, sizes=(("train", 120), ("dev", 8), ("test", 8)))
    data_dir = tmp_path / "data"
    flags = [flag for flag in TINY_RUN_FLAGS if not flag.startswith("--problem=")]
    child = tmp_path / "child"
    refused = run_cli_in_process("trainer", *flags, *QUIET_END, *_translate_files(corpus), "--train_steps=4",
                                 f"--warm_start_from={parent}", f"--data_dir={tmp_path / 'own'}",
                                 f"--output_dir={child}")
    error = refused.stderr.strip().splitlines()[-1]  # after datagen's progress lines
    assert refused.returncode == 2 and "trained with another vocabulary" in error and f"vocab_from={parent}" in error
    assert not child.exists()

    result = run_cli_in_process("trainer", *flags, *QUIET_END, *_translate_files(corpus, parent), "--train_steps=4",
                                f"--warm_start_from={parent}", f"--data_dir={data_dir}", f"--output_dir={child}")
    assert result.returncode == 0, result.stderr
    assert f"encoding with the {_vocab_size(parent)}-piece vocabulary of {parent}" in result.stderr
    metadata = json.loads((data_dir / "translate_files" / "metadata.json").read_text())
    recorded = json.loads((parent / "run.json").read_text())["vocabulary_sha256"]
    assert metadata["vocab_sha256"] == recorded and metadata["vocab_from"] == str(parent)
    assert json.loads((child / "run.json").read_text())["warm_start"]["same_input"] is False
    assert json.loads((child / "report.json").read_text())["warm_start"] == {
        "checkpoint": str(parent / "checkpoints" / "ckpt-8"), "step": 8, "reset": ["optimizer", "schedule", "step"]}

    sources = tmp_path / "sources.en"
    sources.write_text("the cat sees a dog\n", encoding="utf-8")
    decoded = run_cli_in_process("decoder", f"--output_dir={child}", f"--ensemble={parent}", "--extra_length=3",
                                 f"--decode_from_file={sources}", f"--decode_to_file={tmp_path / 'out.de'}")
    assert decoded.returncode == 0, decoded.stderr
    assert len((tmp_path / "out.de").read_text(encoding="utf-8").splitlines()) == 1
    exported = run_cli_in_process("exporter", f"--output_dir={child}", f"--ensemble={parent}",
                                  f"--export_dir={tmp_path / 'export'}", "--extra_length=3")
    assert exported.returncode == 0, exported.stderr
    assert (tmp_path / "export" / "1" / "saved_model.pb").is_file()


def _vocab_size(run):
    data_dir = json.loads((run / "run.json").read_text())["data_dir"]
    with open(os.path.join(data_dir, "wmt_ende", "metadata.json"), encoding="utf-8") as metadata:
        return f"{json.load(metadata)['vocab_size']:,}"


def test_vocab_from_a_directory_that_is_no_run_is_refused(tmp_path):
    corpus = write_parallel_corpus(tmp_path / "corpus", sizes=(("train", 20), ("dev", 4), ("test", 4)))
    result = run_cli_in_process("datagen", *_translate_files(corpus, tmp_path), f"--data_dir={tmp_path / 'data'}")
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert f"vocab_from={tmp_path} is not a t2t-repro run (no run.json there)" in result.stderr
    assert not (tmp_path / "data").exists()


_USER_PROBLEM = '''
from t2t_repro.data.translation import TranslationProblem
from t2t_repro.evaluate.scorers import BleuScorer
from t2t_repro.registry import register_problem


@register_problem
class InDomainEnde(TranslationProblem):
    name = "in_domain_ende"
    source_language, target_language = "en", "de"
    scorer = BleuScorer("de")
    vocab_from = {parent!r}
'''


def test_multi30k_and_a_users_problem_encode_their_data_with_the_parents_vocabulary(parent, tmp_path):
    recorded = json.loads((parent / "run.json").read_text())["vocabulary_sha256"]
    release = write_parallel_corpus(tmp_path / "release", sizes=(("train", 40), ("val", 4), ("test_2016_flickr", 4)))
    refused = run_cli_in_process("datagen", "--problem=multi30k_ende", f"--problem_overrides=vocab_from={parent}",
                                 f"--manual_dir={release}", f"--data_dir={tmp_path / 'data'}")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1  # a vocabulary for each side is its default
    assert (f"vocab_from={parent} has one shared vocabulary, but shared_vocabulary=false asks for one per side: add "
            "shared_vocabulary=true") in refused.stderr
    assert not (tmp_path / "data").exists()
    result = run_cli_in_process("datagen", "--problem=multi30k_ende",
                                f"--problem_overrides=vocab_from={parent},shared_vocabulary=true",
                                f"--manual_dir={release}", f"--data_dir={tmp_path / 'data'}")
    assert result.returncode == 0, result.stderr
    usr_dir = tmp_path / "usr"
    usr_dir.mkdir()
    (usr_dir / "__init__.py").write_text(_USER_PROBLEM.format(parent=str(parent)), encoding="utf-8")
    corpus = write_parallel_corpus(tmp_path / "corpus", sizes=(("train", 40), ("dev", 4), ("test", 4)))
    result = run_cli_in_process("datagen", f"--t2t_usr_dir={usr_dir}", "--problem=in_domain_ende",
                                f"--manual_dir={corpus}", f"--data_dir={tmp_path / 'data'}")
    assert result.returncode == 0, result.stderr
    for name in ("multi30k_ende", "in_domain_ende"):
        metadata = json.loads((tmp_path / "data" / name / "metadata.json").read_text())
        assert (metadata["vocab_sha256"], metadata["vocab_from"]) == (recorded, str(parent)), name


def test_data_and_runs_recorded_before_vocab_from_existed_are_taken_as_made_without_it():
    from t2t_repro import catalog
    from t2t_repro.settings import dict_differences

    for name, settings in (("translate_files", "source_language=en,target_language=de"), ("multi30k_ende", "")):
        problem = catalog.get_problem(name, settings)
        for now in (problem.data_settings(), problem.settings_dict()):
            earlier = {key: value for key, value in now.items() if key != "vocab_from"}
            assert dict_differences(earlier, now) == "", name
