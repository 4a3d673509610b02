"""Distribution and accumulation are exact: the same global batch gives the same loss and update."""

import dataclasses

import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_repro.hparams_type import HParams
from t2t_repro.model import Transformer
from t2t_repro.train.step import TrainStep

HPARAMS = HParams(num_layers=2, d_model=16, d_ff=32, num_heads=2, d_k=8, d_v=8, dropout=0.0)

HALF_A = {
    "inputs": np.array([[5, 6, 7, 1], [8, 9, 1, 0]], np.int32),
    "targets": np.array([[10, 11, 1], [12, 1, 0]], np.int32),
}
HALF_B = {
    "inputs": np.array([[13, 14, 15, 16, 17, 1]], np.int32),
    "targets": np.array([[18, 19, 20, 21, 22, 23, 1]], np.int32),
}


def _pad(array, length):
    return np.pad(array, [[0, 0], [0, length - array.shape[1]]])


WHOLE = {
    key: np.concatenate([_pad(HALF_A[key], HALF_B[key].shape[1]), HALF_B[key]]) for key in ("inputs", "targets")
}


def _reference_weights():
    keras.utils.set_random_seed(7)
    model = Transformer(HPARAMS, 30)
    model({"inputs": WHOLE["inputs"], "targets": WHOLE["targets"]})
    return model.get_weights()


def _run(strategy, batches, accumulation_steps, hparams=HPARAMS):
    with strategy.scope():
        model = Transformer(hparams, 30)
        model({"inputs": WHOLE["inputs"], "targets": WHOLE["targets"]})
        model.set_weights(_reference_weights())
        # Plain SGD: the update is the gradient itself, so equal weights mean equal gradients.
        optimizer = keras.optimizers.SGD(learning_rate=1.0)
    step = TrainStep(model, optimizer, strategy, label_smoothing=0.1, accumulation_steps=accumulation_steps)
    dataset = tf.data.Dataset.from_generator(
        lambda: iter(batches),
        output_signature={k: tf.TensorSpec([None, None], tf.int32) for k in ("inputs", "targets")},
    )
    loss, tokens = step(iter(dataset))
    return float(loss), float(tokens), model.get_weights()


def _assert_same(run_a, run_b):
    assert run_a[1] == run_b[1]
    assert abs(run_a[0] - run_b[0]) < 1e-5
    for a, b in zip(run_a[2], run_b[2]):
        np.testing.assert_allclose(a, b, atol=2e-6)


def test_two_devices_equal_one_device_on_the_same_global_batch():
    one = _run(tf.distribute.OneDeviceStrategy("/cpu:0"), [WHOLE], 1)
    two = _run(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]), [HALF_A, HALF_B], 1)
    _assert_same(one, two)
    assert not np.allclose(one[2][0], _reference_weights()[0]), "the step must change the weights"


def test_two_devices_equal_one_device_under_mixed_bfloat16():
    # The mixed-precision loss (its softmax statistics one XLA-compiled function) under MirroredStrategy.
    hparams = dataclasses.replace(HPARAMS, precision="mixed_bfloat16")
    one = _run(tf.distribute.OneDeviceStrategy("/cpu:0"), [WHOLE], 1, hparams)
    two = _run(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]), [HALF_A, HALF_B], 1, hparams)
    assert one[1] == two[1]
    # The loss within bf16's precision: on a CPU without native bf16 (a 2-core AVX2-only AMD EPYC), oneDNN's bf16
    # matmuls round the two batch shapes' logits differently, 5.5e-4 apart relative (native-bf16 CPUs: 1e-5).
    assert two[0] == pytest.approx(one[0], rel=1e-3)
    for a, b in zip(one[2], two[2]):
        np.testing.assert_allclose(a, b, atol=4e-3)  # gradients rounded to bf16 (8 bits) in other orders


def test_accumulated_micro_batches_equal_one_larger_batch():
    whole = _run(tf.distribute.OneDeviceStrategy("/cpu:0"), [WHOLE], 1)
    accumulated = _run(tf.distribute.OneDeviceStrategy("/cpu:0"), [HALF_A, HALF_B], 2)
    _assert_same(whole, accumulated)
