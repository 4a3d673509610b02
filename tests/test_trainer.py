"""The trainer through its real command line: files of a run, refusal of changed hparams, exact resume after
SIGKILL, NaN handling, and two-worker training."""

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf
from conftest import TINY_RUN_FLAGS, run_cli, run_cli_in_process


def _scalar_tags(directory):
    tags = set()
    for name in os.listdir(directory):
        for event in tf.compat.v1.train.summary_iterator(os.path.join(directory, name)):
            tags.update(value.tag for value in event.summary.value)
    return tags


def _weights(checkpoint_prefix):
    reader = tf.train.load_checkpoint(checkpoint_prefix)
    skip = ("_CHECKPOINTABLE_OBJECT_GRAPH", "save_counter", "train_seconds", "data/", "best/")  # best/: dev score
    return {
        name: reader.get_tensor(name)
        for name in reader.get_variable_to_shape_map()
        if not name.startswith(skip) and "ITERATOR_STATE" not in name
    }


def _assert_same_weights(a, b):
    assert a.keys() == b.keys() and len(a) > 10
    for name in a:
        np.testing.assert_allclose(a[name], b[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_a_run_writes_every_file(trained_run):
    out = trained_run
    for name in ("hparams.json", "run.json", "report.json", "test_decoded.txt"):
        assert (out / name).is_file(), name
    assert (out / "checkpoints" / "ckpt-12.index").is_file()
    assert (out / "averaged" / "ckpt-12.index").is_file()
    assert (out / "export" / "1" / "saved_model.pb").is_file()
    assert json.loads((out / "hparams.json").read_text())["d_model"] == 32
    run = json.loads((out / "run.json").read_text())
    assert run["problem"] == "wmt_ende" and run["command_line"][0] == "t2t-repro-trainer"
    report = json.loads((out / "report.json").read_text())
    assert report["steps"] == 12 and report["train_seconds"] > 0 and report["target_tokens_per_s"] > 0
    assert {"sacrebleu", "signature", "tokenized", "tokenized_compound_split"} <= set(report["bleu"])
    assert report["export"] == str(out / "export" / "1")
    assert len((out / "test_decoded.txt").read_text(encoding="utf-8").splitlines()) == 20
    assert {"loss", "learning_rate", "target_tokens_per_s"} <= _scalar_tags(out / "train")
    assert {"dev_loss", "dev_perplexity", "dev_bleu"} <= _scalar_tags(out / "dev")


def test_restart_with_different_hparams_is_refused(trained_run, tiny_data_dir):
    saved = (trained_run / "hparams.json").read_text()
    flags = [f if not f.startswith("--hparams_overrides") else f + ",dropout=0.3" for f in TINY_RUN_FLAGS]
    result = run_cli_in_process("trainer", *flags, f"--data_dir={tiny_data_dir}", f"--output_dir={trained_run}")
    assert result.returncode == 2
    assert "dropout" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert (trained_run / "hparams.json").read_text() == saved


def test_unknown_names_are_one_line_errors(tmp_path):
    result = run_cli_in_process("trainer", "--problem=wmt_ened", "--hparams=transformer_tiny",
                                f"--output_dir={tmp_path}")
    assert result.returncode == 2 and "wmt_ende" in result.stderr and "Traceback" not in result.stderr
    result = run_cli_in_process("trainer", "--problem=wmt_ende", "--hparams=transformer_tinny",
                                f"--output_dir={tmp_path}")
    assert result.returncode == 2 and "transformer_tiny" in result.stderr


def _resume_flags(data_dir, output_dir):
    return [
        *TINY_RUN_FLAGS, "--train_steps=16", "--checkpoint_steps=2", "--eval_decode_sentences=0",
        "--skip_average", "--skip_test", "--skip_export", f"--data_dir={data_dir}", f"--output_dir={output_dir}",
    ]


@pytest.fixture(scope="module")
def straight(tiny_data_dir, tmp_path_factory):
    """A run of the resume tests' flags trained in one go: the weights every way of resuming must reach."""
    output_dir = tmp_path_factory.mktemp("straight") / "run"
    result = run_cli_in_process("trainer", *_resume_flags(tiny_data_dir, output_dir))
    assert result.returncode == 0, result.stderr
    return output_dir


def test_sigkill_and_resume_reaches_the_same_weights(tiny_data_dir, tmp_path, straight):
    killed = tmp_path / "killed"
    command = [sys.executable, "-m", "t2t_repro.cli.trainer", *_resume_flags(tiny_data_dir, killed)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while not (killed / "checkpoints" / "ckpt-4.index").exists() and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(random.uniform(0.0, 0.5))
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not (killed / "checkpoints" / "ckpt-16.index").exists(), "the run ended before it was killed"
    result = run_cli_in_process("trainer", *_resume_flags(tiny_data_dir, killed))
    assert result.returncode == 0, result.stderr
    assert "resumed from" in result.stdout
    _assert_same_weights(
        _weights(str(straight / "checkpoints" / "ckpt-16")), _weights(str(killed / "checkpoints" / "ckpt-16"))
    )


def test_a_second_session_in_the_same_process_resumes_to_the_same_weights(tiny_data_dir, tmp_path, straight):
    """Keras numbers dropout's seed generators per process, so the checkpoint keys them by their position in
    the model: a run resumed in the process that started it (a notebook) goes on exactly."""
    twice = tmp_path / "twice"
    first = run_cli_in_process("trainer", *_resume_flags(tiny_data_dir, twice), "--train_steps=8")
    assert first.returncode == 0, first.stderr
    second = run_cli_in_process("trainer", *_resume_flags(tiny_data_dir, twice))
    assert second.returncode == 0, second.stderr
    assert "resumed from" in second.stdout
    _assert_same_weights(
        _weights(str(straight / "checkpoints" / "ckpt-16")), _weights(str(twice / "checkpoints" / "ckpt-16"))
    )


# A trainer that keys the random state by variable name, as checkpoints written before position keys were.
_NAME_KEYED_TRAINER = """
import sys
from t2t_repro.cli import trainer
from t2t_repro.train import trainer as trainer_module
random_state = trainer_module.random_state
trainer_module.random_state = lambda model, by_name=False: random_state(model, by_name=True)
sys.argv[0] = "trainer"
trainer.main()
"""


def test_a_checkpoint_with_the_random_state_keyed_by_name_resumes_exactly(tiny_data_dir, tmp_path, straight):
    """Name keys are numbered per process: such a checkpoint resumes exactly in a fresh one (this test's two)."""
    older = tmp_path / "older"
    first = subprocess.run([sys.executable, "-c", _NAME_KEYED_TRAINER, *_resume_flags(tiny_data_dir, older),
                            "--train_steps=8"], capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    names = [name for name, _ in tf.train.list_variables(str(older / "checkpoints" / "ckpt-8"))]
    assert any(name.startswith("rng/seed_generator") for name in names)
    resumed = run_cli("trainer", *_resume_flags(tiny_data_dir, older))
    assert resumed.returncode == 0, resumed.stderr
    _assert_same_weights(
        _weights(str(straight / "checkpoints" / "ckpt-16")), _weights(str(older / "checkpoints" / "ckpt-16"))
    )


def test_nan_loss_stops_and_keeps_the_last_good_checkpoint(tiny_data_dir, tmp_path):
    flags = [f if not f.startswith("--hparams_overrides") else f + ",learning_rate_scale=1e30" for f in TINY_RUN_FLAGS]
    out = tmp_path / "nan"
    result = run_cli_in_process(
        "trainer", *flags, "--train_steps=40", "--checkpoint_steps=1", "--skip_test", "--eval_decode_sentences=0",
        f"--data_dir={tiny_data_dir}", f"--output_dir={out}",
    )
    assert result.returncode == 2
    assert "loss became" in result.stderr and "Traceback" not in result.stderr
    last_good = tf.train.latest_checkpoint(str(out / "checkpoints"))
    assert last_good and all(np.all(np.isfinite(v)) for v in _weights(last_good).values())


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_workers_train_to_identical_weights(tiny_data_dir, tmp_path):
    workers = [f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"]
    out = tmp_path / "multi"
    processes = []
    for index in range(2):
        env = dict(os.environ, TF_CONFIG=json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}}))
        command = [
            sys.executable, "-m", "t2t_repro.cli.trainer", *TINY_RUN_FLAGS, "--strategy=multi_worker",
            "--train_steps=4", "--checkpoint_steps=2", "--skip_average", "--skip_test", "--skip_export",
            "--eval_decode_sentences=0",
            f"--data_dir={tiny_data_dir}", f"--output_dir={out}",
        ]
        processes.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = [p.communicate(timeout=600)[0] for p in processes]
    assert [p.returncode for p in processes] == [0, 0], outputs
    assert "2 replica(s)" in outputs[0]
    chief = _weights(str(out / "checkpoints" / "ckpt-4"))
    other = _weights(str(out / "checkpoints" / "worker-1" / "ckpt-4"))
    _assert_same_weights(chief, other)
