import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_repro import catalog
from t2t_repro.train import loss as loss_module
from t2t_repro.train.loss import (
    MASK_VALUE,
    _half_softmax_statistics,
    _softmax_statistics,
    label_smoothed_cross_entropy,
    projected_label_smoothed_cross_entropy,
)
from t2t_repro.train.optimizer import make_optimizer
from t2t_repro.train.schedule import NoamSchedule, paper_learning_rate


@pytest.mark.parametrize("step", [1, 2, 100, 3999, 4000, 4001, 100_000])
def test_schedule_matches_formula(step):
    schedule = NoamSchedule(d_model=512, warmup_steps=4000)
    expected = 512**-0.5 * min(step**-0.5, step * 4000**-1.5)
    # Keras passes the number of updates already made: the paper's step 1 is iterations 0.
    assert float(schedule(step - 1)) == pytest.approx(expected, rel=1e-6)
    assert paper_learning_rate(step, 512) == pytest.approx(expected, rel=1e-12)


def test_schedule_peaks_at_warmup():
    assert paper_learning_rate(4000, 512) == pytest.approx(512**-0.5 * 4000**-0.5)
    assert paper_learning_rate(4000, 512) > paper_learning_rate(3999, 512)
    assert paper_learning_rate(4000, 512) > paper_learning_rate(4001, 512)


def test_optimizer_is_the_papers_adam():
    optimizer = make_optimizer(catalog.get_hparams("transformer_base"))
    assert (optimizer.beta_1, optimizer.beta_2, optimizer.epsilon) == (0.9, 0.98, 1e-9)
    assert float(optimizer.learning_rate) == pytest.approx(paper_learning_rate(1, 512))


def test_fused_adam_makes_keras_adams_updates():
    hparams = catalog.get_hparams("transformer_tiny")
    weights = {}
    for name, optimizer in (("fused", make_optimizer(hparams)), ("keras", keras.optimizers.Adam(
        learning_rate=NoamSchedule(hparams.d_model, hparams.warmup_steps, hparams.learning_rate_scale),
        beta_1=hparams.adam_beta1, beta_2=hparams.adam_beta2, epsilon=hparams.adam_epsilon,
    ))):
        variable = keras.Variable(np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(3, 4))
        for step in range(4):
            optimizer.apply_gradients([(tf.sin(variable.value * (step + 1.0)), variable)])
        weights[name] = variable.numpy()
    assert type(make_optimizer(hparams)).__name__ == "FusedAdam"
    np.testing.assert_allclose(weights["fused"], weights["keras"], rtol=1e-6, atol=1e-7)
    assert not np.allclose(weights["fused"], np.linspace(-1.0, 1.0, 12).reshape(3, 4))


def test_label_smoothing_against_hand_computation():
    logits = np.array([[[2.0, 1.0, 0.0, -1.0], [0.5, 0.5, 3.0, 0.0]]], np.float32)
    labels = np.array([[1, 2]])
    eps, vocab = 0.1, 4
    expected = 0.0
    for position, label in enumerate(labels[0]):
        log_p = logits[0, position] - math.log(np.exp(logits[0, position]).sum())
        target = np.full(vocab, eps / vocab)
        target[label] += 1 - eps
        expected += -(target * log_p).sum()
    total, count = label_smoothed_cross_entropy(tf.constant(labels), tf.constant(logits), eps)
    assert float(count) == 2.0
    assert float(total) == pytest.approx(expected, rel=1e-5)


def test_padding_carries_no_loss():
    logits = tf.random.normal([1, 3, 7])
    total, count = label_smoothed_cross_entropy(tf.constant([[3, 1, 0]]), logits, 0.1)
    head_total, head_count = label_smoothed_cross_entropy(tf.constant([[3, 1]]), logits[:, :2], 0.1)
    assert float(count) == 2.0 == float(head_count)
    assert float(total) == pytest.approx(float(head_total), rel=1e-6)


def test_loss_gradient_equals_automatic_gradient_of_the_definition():
    # The loss writes its gradient by hand; it must be d/dz of -sum_k q(k) log softmax(z)(k) over real tokens.
    logits = tf.random.stateless_normal([2, 4, 9], seed=[7, 8]) * 3.0
    labels = tf.constant([[3, 3, 8, 0], [1, 0, 0, 0]])  # a repeated label and padding
    eps = 0.1
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(logits)
        total, count = label_smoothed_cross_entropy(labels, logits, eps)
        target = tf.one_hot(labels, 9) * (1 - eps) + eps / 9
        real = tf.cast(tf.not_equal(labels, 0), tf.float32)
        reference = tf.reduce_sum(-tf.reduce_sum(target * tf.nn.log_softmax(logits), -1) * real)
    assert float(count) == 4.0
    assert float(total) == pytest.approx(float(reference), rel=1e-6)
    np.testing.assert_allclose(tape.gradient(total, logits), tape.gradient(reference, logits), atol=1e-6)
    assert not np.any(tape.gradient(total, logits).numpy()[1, 1:])  # padding positions get no gradient


@pytest.mark.parametrize("eps", [0.1, 0.0])
def test_projected_loss_equals_loss_of_projected_logits(eps):
    # The training step's loss takes the decoder states and the output matrix; its value and hand-written
    # gradients must be those of the logits loss on states @ matrix^T.
    states = tf.random.stateless_normal([2, 4, 6], seed=[1, 2])
    matrix = tf.random.stateless_normal([9, 6], seed=[3, 4])
    labels = tf.constant([[3, 3, 8, 0], [1, 0, 0, 0]])  # a repeated label and padding
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([states, matrix])
        total, count = projected_label_smoothed_cross_entropy(labels, states, matrix, eps)
        reference, reference_count = label_smoothed_cross_entropy(
            labels, tf.einsum("bld,vd->blv", states, matrix), eps
        )
    assert float(count) == float(reference_count) == 4.0
    assert float(total) == pytest.approx(float(reference), rel=1e-6)
    for variable in (states, matrix):
        np.testing.assert_allclose(tape.gradient(total, variable), tape.gradient(reference, variable), atol=2e-6)
    assert np.any(tape.gradient(total, matrix).numpy()[3])


@pytest.mark.parametrize("half", [tf.bfloat16, tf.float16])
@pytest.mark.parametrize("padding", [0, 7])
def test_mixed_precision_softmax_statistics_equal_the_float32_ones(half, padding):
    # Under mixed precision the statistics are one XLA-compiled function; they must be the float32 statistics
    # of the half-precision logits (padding rows masked), with exp(z - max z) rounded to the half type.
    logits = tf.cast(tf.random.stateless_normal([64, 300], seed=[5, 6]) * 4, half)
    row_bias = tf.concat([tf.zeros([300 - padding]), tf.fill([padding], MASK_VALUE)], axis=0)
    factor, normalizer, log_normalizer = _half_softmax_statistics(logits, row_bias)
    expected = _softmax_statistics(tf.cast(logits, tf.float32) + row_bias)
    assert factor.dtype == half
    np.testing.assert_array_equal(factor.numpy(), tf.cast(expected[0], half).numpy())
    np.testing.assert_allclose(normalizer, expected[1], rtol=1e-6)
    np.testing.assert_allclose(log_normalizer, expected[2], rtol=1e-6)
    assert not np.any(factor.numpy()[:, 300 - padding:])


def _projected_loss_and_gradients(labels, states, matrix, vocab_size=None):
    with tf.GradientTape() as tape:
        tape.watch([states, matrix])
        total, _ = projected_label_smoothed_cross_entropy(labels, states, matrix, 0.1, vocab_size)
    return [total.numpy()] + [tf.cast(g, tf.float32).numpy() for g in tape.gradient(total, [states, matrix])]


@pytest.mark.parametrize("padding", [0, 7])
def test_bfloat16_loss_from_one_softmax_equals_the_xla_statistics_path(monkeypatch, padding):
    # Where tf.nn.softmax of bfloat16 computes in float32 (oneDNN's CPU kernel) the loss takes softmax(z) from
    # it and logsumexp from the label's probability; elsewhere exp(z - max z) and its sums from XLA. Both give
    # the same loss and gradients up to bfloat16 rounding of the factor.
    if not loss_module._bfloat16_softmax_is_float32_inside():
        pytest.skip("tf.nn.softmax of bfloat16 does not compute in float32 on this device")
    states = tf.cast(tf.random.stateless_normal([4, 32, 16], seed=[1, 2]), tf.bfloat16)
    matrix = tf.random.stateless_normal([300, 16], seed=[3, 4])
    labels = tf.random.stateless_uniform([4, 32], seed=[5, 6], minval=0, maxval=300 - padding, dtype=tf.int32)
    vocab_size = 300 - padding if padding else None
    one_softmax = _projected_loss_and_gradients(labels, states, matrix, vocab_size)
    monkeypatch.setattr(loss_module, "_bfloat16_softmax_is_float32_inside", lambda: False)
    xla_statistics = _projected_loss_and_gradients(labels, states, matrix, vocab_size)
    assert one_softmax[0] == pytest.approx(xla_statistics[0], rel=1e-4)
    for ours, theirs in zip(one_softmax[1:], xla_statistics[1:]):
        np.testing.assert_allclose(ours, theirs, atol=0.01 * np.abs(theirs).max())
    if padding:
        assert not np.any(one_softmax[2][300 - padding:])


def test_a_label_probability_that_underflows_still_gives_the_exact_loss():
    # softmax(z)_label = exp(-200) is 0 in float32: logsumexp then comes from the logits, not the label.
    states = tf.constant([[[1.0, 0.0], [0.0, 1.0]]])
    matrix = tf.constant([[0.0, 0.0], [-100.0, 0.0], [100.0, 0.0], [0.0, 3.0]])
    labels = tf.constant([[1, 3]])
    total, _ = projected_label_smoothed_cross_entropy(labels, states, matrix, 0.1)
    reference, _ = label_smoothed_cross_entropy(labels, tf.einsum("bld,vd->blv", states, matrix), 0.1)
    assert np.isfinite(float(total)) and float(total) > 190
    assert float(total) == pytest.approx(float(reference), rel=1e-6)


def test_no_smoothing_is_plain_cross_entropy():
    logits = tf.random.normal([2, 3, 5])
    labels = tf.constant([[1, 2, 3], [4, 1, 2]])
    total, count = label_smoothed_cross_entropy(labels, logits, 0.0)
    plain = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
    assert float(total / count) == pytest.approx(float(tf.reduce_mean(plain)), rel=1e-5)
