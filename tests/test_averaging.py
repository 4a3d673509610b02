"""Checkpoint averaging: the mean of the last K checkpoints' weights, atomic replacement, the CLI's errors."""

import functools
import logging
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_repro.cli import avg_checkpoints as avg_cli
from t2t_repro.errors import UserError
from t2t_repro.hparams_type import HParams
from t2t_repro.model import build_transformer
from t2t_repro.train.model_checkpoint import repair_interrupted_swap
from t2t_repro.run.jobs import average as average_checkpoints
from t2t_repro.run.layout import RunInfo, RunLayout

HPARAMS = HParams(num_layers=1, d_model=8, d_ff=16, num_heads=2, d_k=4, d_v=4, checkpoint_average_count=3)
VOCAB_SIZE = 11
STEPS = (100, 200, 300, 400)


@functools.lru_cache(maxsize=None)
def scratch_model():
    """One model the tests load weights into (building one takes seconds on a busy CPU)."""
    keras.utils.set_random_seed(0)
    return build_transformer(HPARAMS, VOCAB_SIZE)


def make_run(output_dir, steps=STEPS):
    """A run directory whose training checkpoints (model + optimizer, as the trainer writes them) hold
    known random weights; returns {step: [weight arrays in model.weights order]}."""
    RunLayout(output_dir).record(HPARAMS, RunInfo("toy_ende", "test", "", str(output_dir)))
    model = scratch_model()
    optimizer = keras.optimizers.Adam()
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, step=tf.Variable(0, dtype=tf.int64))
    manager = tf.train.CheckpointManager(checkpoint, str(output_dir / "checkpoints"), max_to_keep=10)
    rng = np.random.default_rng(0)
    saved = {}
    for step in steps:
        values = [rng.normal(size=w.shape).astype(np.float32) for w in model.weights]
        for weight, value in zip(model.weights, values):
            weight.assign(value)
        checkpoint.step.assign(step)
        manager.save(checkpoint_number=step)
        saved[step] = values
    return saved


def restored_weights(path):
    model = scratch_model()
    tf.train.Checkpoint(model=model).restore(path).expect_partial().assert_existing_objects_matched()
    return [w.numpy() for w in model.weights]


def test_average_is_the_mean_of_the_last_k_checkpoints(tmp_path):
    saved = make_run(tmp_path)
    path = average_checkpoints(str(tmp_path))  # K = hparams.checkpoint_average_count = 3
    assert path == os.path.join(str(tmp_path), "averaged", "ckpt-400")
    expected = [np.mean([saved[s][i] for s in (200, 300, 400)], axis=0) for i in range(len(saved[400]))]
    for got, want in zip(restored_weights(path), expected):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert RunLayout(str(tmp_path)).latest_checkpoint() == path, "the decoder must pick the average up"


def test_fewer_checkpoints_than_requested_averages_all_with_a_warning(tmp_path, caplog):
    saved = make_run(tmp_path, steps=(10, 20))
    with caplog.at_level(logging.WARNING):
        path = average_checkpoints(str(tmp_path), num_last=5)
    assert "only 2" in caplog.text
    expected = [(a + b) / 2 for a, b in zip(saved[10], saved[20])]
    for got, want in zip(restored_weights(path), expected):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_a_new_average_replaces_the_old_and_a_failed_one_leaves_it_intact(tmp_path, monkeypatch):
    saved = make_run(tmp_path)
    path = average_checkpoints(str(tmp_path), num_last=1)
    np.testing.assert_array_equal(restored_weights(path)[0], saved[400][0])

    def broken_save(self, checkpoint_number=None, **kwargs):
        with open(os.path.join(self.directory, f"ckpt-{checkpoint_number}.index"), "w") as f:
            f.write("half written")
        raise OSError("disk full")

    monkeypatch.setattr(tf.train.CheckpointManager, "save", broken_save)
    with pytest.raises(UserError, match="disk full"):
        average_checkpoints(str(tmp_path), num_last=2)
    monkeypatch.undo()
    np.testing.assert_array_equal(restored_weights(path)[0], saved[400][0])
    assert [name for name in os.listdir(tmp_path) if name.startswith(".averaged")] == []

    path = average_checkpoints(str(tmp_path), num_last=2)
    np.testing.assert_allclose(restored_weights(path)[0], (saved[300][0] + saved[400][0]) / 2, rtol=1e-6)


@pytest.mark.parametrize("error", [tf.errors.ResourceExhaustedError(None, None, "x; No space left on device"),
                                   OSError(28, "No space left on device")])
def test_a_full_disk_is_a_one_line_error_and_publishes_nothing(tmp_path, capsys, monkeypatch, error):
    saved = make_run(tmp_path)
    path = average_checkpoints(str(tmp_path), num_last=1)

    def save_then_fail(self, checkpoint_number=None, **kwargs):
        with open(os.path.join(self.directory, f"ckpt-{checkpoint_number}.data-00000-of-00001"), "wb") as f:
            f.write(b"half")
        raise error

    monkeypatch.setattr(tf.train.CheckpointManager, "save", save_then_fail)
    with pytest.raises(SystemExit) as exit_info:
        avg_cli.main([f"--output_dir={tmp_path}", "--num_last=2"])
    assert exit_info.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "No space left on device" in last and "Traceback" not in last
    monkeypatch.undo()
    assert [name for name in os.listdir(tmp_path) if name.startswith(".averaged")] == []
    np.testing.assert_array_equal(restored_weights(path)[0], saved[400][0])


def test_no_checkpoint_is_a_user_error(tmp_path):
    RunLayout(tmp_path).record(HPARAMS, RunInfo("toy_ende", "test", "", str(tmp_path)))
    with pytest.raises(UserError, match="no training checkpoints"):
        average_checkpoints(str(tmp_path))


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--output_dir={run}", "--num_last=0"], "at least 1"),
        (["--output_dir={empty}"], "no training checkpoints"),
        (["--output_dir={missing}"], "not found"),
    ],
)
def test_cli_errors_are_one_line(tmp_path, capsys, argv, message):
    make_run(tmp_path / "run", steps=(5,))
    empty = tmp_path / "empty"
    RunLayout(empty).record(HPARAMS, RunInfo("toy_ende", "test", "", str(empty)))
    paths = dict(run=tmp_path / "run", empty=empty, missing=tmp_path / "missing")
    with pytest.raises(SystemExit) as exit_info:
        avg_cli.main([arg.format(**paths) for arg in argv])
    assert exit_info.value.code == 2
    stderr = capsys.readouterr().err
    assert "Traceback" not in stderr
    assert message in stderr.strip().splitlines()[-1]


def test_cli_writes_the_average_and_prints_its_path(tmp_path, capsys):
    make_run(tmp_path, steps=(7, 8))
    with pytest.raises(SystemExit) as exit_info:
        avg_cli.main([f"--output_dir={tmp_path}"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == os.path.join(str(tmp_path), "averaged", "ckpt-8")


def test_an_interrupted_swap_is_repaired(tmp_path):
    saved = make_run(tmp_path)
    path = average_checkpoints(str(tmp_path), num_last=1)
    # A crash between the two renames leaves the previous average aside and no averaged/ directory.
    os.rename(os.path.join(tmp_path, "averaged"), os.path.join(tmp_path, ".averaged-old-crash"))
    repair_interrupted_swap(os.path.join(tmp_path, "averaged"))
    np.testing.assert_array_equal(restored_weights(path)[0], saved[400][0])
