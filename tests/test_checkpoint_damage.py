"""Damaged checkpoints, through the real command lines: the trainer never overwrites a run's checkpoints, falls
back to the newest one that restores (keeping damaged ones aside), rebuilds a lost or damaged `checkpoint` index,
removes leftovers of an interrupted write and never writes non-finite weights; the decoder and the averaging
tool name the damaged file in one line."""

import os

import numpy as np
import pytest
import tensorflow as tf
from conftest import TINY_RUN_FLAGS, copy_run, run_cli_in_process

from t2t_repro.data import reading

RUN_FLAGS = [
    *TINY_RUN_FLAGS, "--train_steps=20", "--checkpoint_steps=5", "--eval_decode_sentences=0", "--eval_steps=1000",
    "--skip_average", "--skip_test", "--skip_export",
]
DATA_FILE = "ckpt-20.data-00000-of-00001"


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory, tiny_data_dir):
    """A tiny run of 20 steps with checkpoints at 5, 10, 15 and 20 (no average, no test, no export)."""
    output_dir = tmp_path_factory.mktemp("damage") / "run"
    result = run_cli_in_process("trainer", *RUN_FLAGS, f"--data_dir={tiny_data_dir}", f"--output_dir={output_dir}")
    assert result.returncode == 0, result.stdout + result.stderr
    return output_dir


@pytest.fixture
def run_copy(finished_run, tmp_path):
    return copy_run(finished_run, tmp_path)


def _train(output_dir, data_dir, *extra):
    return run_cli_in_process("trainer", *RUN_FLAGS, *extra, f"--data_dir={data_dir}", f"--output_dir={output_dir}")


def _one_line_error(result):
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()  # progress lines (averaging logs what it averages), then the error
    assert ": error: " in lines[-1] and sum(": error: " in line for line in lines) == 1, result.stderr
    return lines[-1]


def _checkpoint_files(directory):
    return {name: (directory / name).read_bytes() for name in os.listdir(directory) if name.startswith("ckpt-")}


def _float_values(prefix):
    reader = tf.train.load_checkpoint(str(prefix))
    return {name: reader.get_tensor(name) for name, dtype in reader.get_variable_to_dtype_map().items()
            if dtype.is_floating and not name.startswith("train_seconds")}


def _all_finite(prefix):
    return all(np.all(np.isfinite(value)) for value in _float_values(prefix).values())


@pytest.mark.parametrize("damage", ["deleted", "empty", "binary"])
def test_a_lost_or_damaged_index_is_rebuilt_and_no_checkpoint_is_overwritten(run_copy, tiny_data_dir, damage):
    checkpoints = run_copy / "checkpoints"
    before = _checkpoint_files(checkpoints)
    index = checkpoints / "checkpoint"
    if damage == "deleted":
        index.unlink()
    else:
        index.write_bytes(b"" if damage == "empty" else bytes(range(128, 256)) * 3)
    result = _train(run_copy, tiny_data_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "rebuilt the checkpoint index" in result.stdout
    assert f"resumed from {checkpoints / 'ckpt-20'} at step 20" in result.stdout
    assert _checkpoint_files(checkpoints) == before, "a checkpoint was rewritten or deleted"
    state = tf.train.get_checkpoint_state(str(checkpoints))
    assert state.model_checkpoint_path == str(checkpoints / "ckpt-20")
    listed = [os.path.basename(p) for p in state.all_model_checkpoint_paths]
    assert listed == ["ckpt-5", "ckpt-10", "ckpt-15", "ckpt-20"]


@pytest.mark.parametrize("damage", ["truncated", "empty", "index deleted"])
def test_a_damaged_newest_checkpoint_is_kept_aside_and_training_resumes_from_the_one_before(
        finished_run, run_copy, tiny_data_dir, damage):
    checkpoints = run_copy / "checkpoints"
    if damage == "index deleted":
        (checkpoints / "ckpt-20.index").unlink()
    else:
        data = (checkpoints / DATA_FILE).read_bytes()
        (checkpoints / DATA_FILE).write_bytes(data[:1000] if damage == "truncated" else b"")
    damaged = _checkpoint_files(checkpoints)
    damaged = {name: data for name, data in damaged.items() if name.startswith("ckpt-20.")}
    result = _train(run_copy, tiny_data_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    aside = checkpoints / "damaged-ckpt-20"
    assert f"checkpoint {checkpoints / 'ckpt-20'} is damaged" in result.stdout and str(aside) in result.stdout
    assert f"resumed from {checkpoints / 'ckpt-15'} at step 15" in result.stdout
    assert _checkpoint_files(aside) == damaged, "the damaged checkpoint must be kept, as it was"
    # Training went on from step 15 to the same step-20 weights as the undamaged run (exact resume).
    resumed, original = _float_values(checkpoints / "ckpt-20"), _float_values(finished_run / "checkpoints" / "ckpt-20")
    assert resumed.keys() == original.keys()
    for name in original:
        np.testing.assert_allclose(resumed[name], original[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_no_restorable_checkpoint_is_a_one_line_error_that_moves_nothing(run_copy, tiny_data_dir):
    checkpoints = run_copy / "checkpoints"
    for step in (5, 10, 15, 20):
        (checkpoints / f"ckpt-{step}.data-00000-of-00001").write_bytes(b"")
    before = _checkpoint_files(checkpoints)
    message = _one_line_error(_train(run_copy, tiny_data_dir))
    assert "no checkpoint" in message and DATA_FILE in message
    assert _checkpoint_files(checkpoints) == before


def test_leftovers_of_an_interrupted_checkpoint_write_are_removed(run_copy, tiny_data_dir):
    # A crash while the 10-minute clock's checkpoint at step 23 was written (the next session saves 25, not 23).
    leftover = run_copy / "checkpoints" / "ckpt-23_temp"
    leftover.mkdir()
    result = _train(run_copy, tiny_data_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    assert not leftover.exists()
    assert f"removed {leftover}" in result.stdout


@pytest.mark.parametrize("tool", ["decoder", "avg_checkpoints"])
@pytest.mark.parametrize("damaged_file", [DATA_FILE, "ckpt-20.index"])
def test_the_decoder_and_averaging_name_the_damaged_file(run_copy, tmp_path, tool, damaged_file):
    path = run_copy / "checkpoints" / damaged_file
    path.write_bytes(path.read_bytes()[:100])
    source = tmp_path / "source.txt"
    source.write_text("the cat sees a dog\n", encoding="utf-8")
    flags = [f"--decode_from_file={source}", f"--decode_to_file={tmp_path / 'out.txt'}"] if tool == "decoder" else []
    message = _one_line_error(run_cli_in_process(tool, f"--output_dir={run_copy}", *flags))
    assert str(path) in message and "damaged" in message
    assert not (run_copy / "averaged").exists() and not (tmp_path / "out.txt").exists()


@pytest.mark.parametrize("content", [b"", bytes(range(128, 256))])
def test_the_decoder_reads_past_an_empty_or_binary_index(run_copy, tmp_path, content):
    (run_copy / "checkpoints" / "checkpoint").write_bytes(content)
    source = tmp_path / "source.txt"
    source.write_text("the cat sees a dog\n", encoding="utf-8")
    result = run_cli_in_process("decoder", f"--output_dir={run_copy}", f"--decode_from_file={source}",
                                f"--decode_to_file={tmp_path / 'out.txt'}", "--quiet")
    assert result.returncode == 0, result.stderr
    assert str(run_copy / "checkpoints" / "ckpt-20") in result.stderr


def test_non_finite_weights_are_never_saved(tiny_data_dir, tmp_path):
    """learning_rate_scale=1e300 is finite, but the float32 learning rate is not: the first update makes weights
    infinite while the first loss is still finite. Before, that step was saved and named the last good one."""
    flags = [f if not f.startswith("--hparams_overrides") else f + ",learning_rate_scale=1e300" for f in RUN_FLAGS]
    out = tmp_path / "overflow"
    result = run_cli_in_process("trainer", *flags, "--checkpoint_steps=1", f"--data_dir={tiny_data_dir}",
                                f"--output_dir={out}")
    message = _one_line_error(result)
    assert "non-finite" in message or "loss became" in message
    last_good = message.rsplit("Last good checkpoint: ", 1)[1]
    assert last_good == "none" or _all_finite(last_good)
    for index in (out / "checkpoints").glob("ckpt-*.index") if (out / "checkpoints").exists() else ():
        assert _all_finite(str(index)[: -len(".index")]), f"{index.name} holds non-finite weights"


def _write_non_finite_checkpoint(checkpoints, source_step, step):
    """Writes checkpoints/ckpt-<step> as older versions of the trainer could: complete and restorable, with every
    tensor of ckpt-<source_step> (the data position and random state too) but NaN in a weight of the model."""
    source = str(checkpoints / f"ckpt-{source_step}")
    dtypes = tf.train.load_checkpoint(source).get_variable_to_dtype_map()
    names = sorted(dtypes)
    slices = [""] * len(names)
    tensors = tf.raw_ops.RestoreV2(prefix=source, tensor_names=names, shape_and_slices=slices,
                                   dtypes=[dtypes[name] for name in names])
    weight = next(i for i, name in enumerate(names) if name.startswith("model/") and dtypes[name].is_floating)
    tensors[weight] = tf.fill(tf.shape(tensors[weight]), tf.constant(np.nan, dtypes[names[weight]]))
    tf.raw_ops.SaveV2(prefix=str(checkpoints / f"ckpt-{step}"), tensor_names=names, shape_and_slices=slices,
                      tensors=tensors)


def test_a_checkpoint_with_non_finite_weights_is_not_resumed_from(run_copy, tiny_data_dir):
    _write_non_finite_checkpoint(run_copy / "checkpoints", 20, 25)
    result = _train(run_copy, tiny_data_dir, "--train_steps=25")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "non-finite" in result.stdout and (run_copy / "checkpoints" / "damaged-ckpt-25" / "ckpt-25.index").is_file()
    assert f"resumed from {run_copy / 'checkpoints' / 'ckpt-20'} at step 20" in result.stdout
    assert _all_finite(run_copy / "checkpoints" / "ckpt-25")


def test_an_input_position_of_another_pipeline_version_resumes_the_rest_and_restarts_the_input(
        tiny_data_dir, tmp_path, monkeypatch):
    run = tmp_path / "run"
    with monkeypatch.context() as patch:  # an input pipeline with one more stage than today's: other positions
        read_split = reading.read_split
        patch.setattr(reading, "read_split", lambda *args: read_split(*args).map(
            lambda pair: {key: ids + 0 for key, ids in pair.items()}))
        first = _train(run, tiny_data_dir, "--train_steps=10")
    assert first.returncode == 0, first.stdout + first.stderr
    step_10 = _float_values(run / "checkpoints" / "ckpt-10")
    resumed = _train(run, tiny_data_dir, "--train_steps=15")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "ckpt-10 holds an input position saved by another version of the input pipeline" in resumed.stdout
    assert f"resumed from {run / 'checkpoints' / 'ckpt-10'} at step 10" in resumed.stdout
    assert _all_finite(run / "checkpoints" / "ckpt-15")
    after = _float_values(run / "checkpoints" / "ckpt-10")  # the checkpoint it resumed from is untouched
    assert after.keys() == step_10.keys() and all(np.array_equal(after[name], step_10[name]) for name in after)
    again = _train(run, tiny_data_dir, "--train_steps=20")  # the new input position resumes as usual
    assert again.returncode == 0, again.stdout + again.stderr
    assert "another version" not in again.stdout and "at step 15" in again.stdout
