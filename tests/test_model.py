import dataclasses
import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_repro.hparams_type import HParams
from t2t_repro.model import Transformer
from t2t_repro.model.attention import (
    MultiHeadAttention,
    causal_bias,
    empty_cache,
    padding_bias,
    scaled_dot_product_attention,
    unwritten_bias,
)
from t2t_repro.model.dropout import Dropout
from t2t_repro.model.embedding import PositionEncoding, TokenEmbedding, sinusoid_position_encoding
from t2t_repro.model.feed_forward import FeedForward
from t2t_repro.model.layer_norm import LayerNormalization
from t2t_repro.model.layers import DecoderLayer, EncoderLayer, SublayerConnection
from t2t_repro.model.transformer import DECODER_SELF_ATTENTION, ENCODER_DECODER_ATTENTION, ENCODER_SELF_ATTENTION

TINY = HParams(num_layers=2, d_model=16, d_ff=32, num_heads=4, d_k=4, d_v=6, dropout=0.0)


def tiny_model(**overrides):
    keras.utils.set_random_seed(1)
    return Transformer(dataclasses.replace(TINY, **overrides), 50)


def test_causal_mask_gives_zero_weight_to_future_positions():
    q = tf.random.normal([2, 3, 5, 4])  # [batch, heads, length, depth]
    k = tf.random.normal([2, 3, 5, 4])
    v = tf.random.normal([2, 3, 5, 4])
    _, weights = scaled_dot_product_attention(q, k, v, causal_bias(5))
    future = np.triu(np.ones([5, 5]), k=1).astype(bool)
    assert np.all(weights.numpy()[:, :, future] == 0.0)
    np.testing.assert_allclose(weights.numpy().sum(-1), 1.0, rtol=1e-6)


def test_padding_mask_gives_zero_weight_to_padding():
    ids = tf.constant([[4, 5, 0, 0]])
    q = tf.random.normal([1, 2, 4, 4])
    _, weights = scaled_dot_product_attention(q, q, q, padding_bias(ids))
    assert np.all(weights.numpy()[..., 2:] == 0.0)


def test_attention_is_softmax_of_scaled_dot_products():
    q, k, v = (tf.random.normal([1, 1, 3, 8]) for _ in range(3))
    out, _ = scaled_dot_product_attention(q, k, v)
    logits = q[0, 0].numpy() @ k[0, 0].numpy().T / math.sqrt(8)
    expected = tf.nn.softmax(logits).numpy() @ v[0, 0].numpy()
    np.testing.assert_allclose(out[0, 0].numpy(), expected, rtol=1e-5, atol=1e-6)


def test_separate_key_and_value_widths():
    layer = MultiHeadAttention(num_heads=2, d_k=3, d_v=5, d_model=8)
    assert layer(tf.zeros([1, 4, 8])).shape == (1, 4, 8)
    assert layer.qkv_dense.kernel.shape == (8, 2 * (3 + 3 + 5))


def test_attention_returns_its_weights_and_writes_its_preallocated_cache():
    layer = MultiHeadAttention(num_heads=2, d_k=3, d_v=5, d_model=8)
    x = tf.random.stateless_normal([1, 4, 8], seed=[1, 2])
    output, weights = layer(x, bias=causal_bias(4), return_attention_scores=True)
    assert weights.shape == (1, 2, 4, 4)
    np.testing.assert_allclose(output.numpy(), layer(x, bias=causal_bias(4)).numpy())
    cache = empty_cache(1, 2, 3, 5, 0, tf.float32)  # grows by a position a call
    for position in range(4):
        last, cache, weights = layer(x[:, position : position + 1], cache=cache, return_attention_scores=True)
        np.testing.assert_allclose(last.numpy()[0, 0], output.numpy()[0, position], atol=1e-5)
    assert cache["k"].shape == (1, 2, 4, 3) and weights.shape == (1, 2, 1, 4)
    cache = empty_cache(1, 2, 3, 5, 6, tf.float32)  # preallocated, written in place, the rest masked
    for position in range(4):
        last, cache, weights = layer(x[:, position : position + 1], bias=unwritten_bias(position + 1, 6), cache=cache,
                                     cache_index=position, return_attention_scores=True)
        np.testing.assert_allclose(last.numpy()[0, 0], output.numpy()[0, position], atol=1e-5)
        assert np.all(weights.numpy()[..., position + 1 :] == 0)
    assert cache["k"].shape == (1, 2, 6, 3) and weights.shape == (1, 2, 1, 6)
    assert np.all(cache["k"].numpy()[:, :, 4:] == 0) and np.all(cache["v"].numpy()[:, :, :4] != 0)


def test_beams_share_the_keys_and_values_of_their_sentence():
    # Beam search's cross-attention: keys and values once per sentence (memory_kv), queries of 3 beams each,
    # must equal attention over a copy of the memory per beam, outputs and weights.
    layer = MultiHeadAttention(num_heads=2, d_k=3, d_v=5, d_model=8, self_attention=False)
    memory = tf.random.stateless_normal([2, 4, 8], seed=[3, 4])
    bias = padding_bias(tf.constant([[5, 6, 7, 1], [8, 1, 0, 0]]))
    queries = tf.random.stateless_normal([6, 2, 8], seed=[5, 6])  # rows 3s .. 3s + 2: the beams of sentence s
    shared, shared_weights = layer(
        queries, memory=layer.memory_kv(memory), bias=bias, return_attention_scores=True
    )
    copied, copied_weights = layer(
        queries, memory=tf.repeat(memory, 3, axis=0), bias=tf.repeat(bias, 3, axis=0), return_attention_scores=True
    )
    np.testing.assert_allclose(shared.numpy(), copied.numpy(), atol=1e-6)
    np.testing.assert_allclose(shared_weights.numpy(), copied_weights.numpy(), atol=1e-6)
    assert shared_weights.shape == (6, 2, 2, 4)
    assert np.all(shared_weights.numpy()[3:, :, :, 2:] == 0)  # sentence 1's padding


FEATURES = {"inputs": tf.constant([[5, 6, 1]]), "targets": tf.constant([[7, 1]])}


def built_model(**overrides):
    model = tiny_model(**overrides)
    model(FEATURES)
    return model


def test_attention_projections_have_no_biases_as_in_equation_4():
    # Section 3.2.2, equation 4: head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V), MultiHead = Concat(...) W^O.
    attention = [w for w in built_model().weights if "attention/" in w.path]
    assert attention and all(w.path.endswith("kernel") for w in attention)
    h = TINY
    per_attention = h.d_model * h.num_heads * (2 * h.d_k + h.d_v) + h.num_heads * h.d_v * h.d_model
    assert sum(int(np.prod(w.shape)) for w in attention) == 3 * h.num_layers * per_attention


# Checkpoint variables of tiny_model(num_layers=1), as the model stored them before the attention biases became
# an option (the Keras Dense default), keyed without "model/" and "/.ATTRIBUTES/VARIABLE_VALUE".
LAYOUT_WITH_ATTENTION_BIASES = {
    **{f"{stack}/0/{connection}_connection/norm/{part}": (16,) for stack, connection in [
        ("decoder_layers", "self_attention"), ("decoder_layers", "cross_attention"), ("decoder_layers", "feed_forward"),
        ("encoder_layers", "attention"), ("encoder_layers", "feed_forward")] for part in ("beta", "gamma")},
    "decoder_layers/0/cross_attention/kv_dense/_kernel": (16, 40),
    "decoder_layers/0/cross_attention/kv_dense/bias": (40,),
    "decoder_layers/0/cross_attention/output_dense/_kernel": (24, 16),
    "decoder_layers/0/cross_attention/output_dense/bias": (16,),
    "decoder_layers/0/cross_attention/q_dense/_kernel": (16, 16),
    "decoder_layers/0/cross_attention/q_dense/bias": (16,),
    "decoder_layers/0/self_attention/output_dense/_kernel": (24, 16),
    "decoder_layers/0/self_attention/output_dense/bias": (16,),
    "decoder_layers/0/self_attention/qkv_dense/_kernel": (16, 56),
    "decoder_layers/0/self_attention/qkv_dense/bias": (56,),
    "encoder_layers/0/self_attention/output_dense/_kernel": (24, 16),
    "encoder_layers/0/self_attention/output_dense/bias": (16,),
    "encoder_layers/0/self_attention/qkv_dense/_kernel": (16, 56),
    "encoder_layers/0/self_attention/qkv_dense/bias": (56,),
    **{f"{stack}/0/feed_forward/{part}": shape for stack in ("decoder_layers", "encoder_layers") for part, shape in [
        ("inner/_kernel", (16, 32)), ("inner/bias", (32,)), ("outer/_kernel", (32, 16)), ("outer/bias", (16,))]},
    "source_embedding/embeddings": (50, 16),
}


def _checkpoint_layout(model, directory):
    path = tf.train.Checkpoint(model=model).save(str(directory / "ckpt"))
    return {name[len("model/"): -len("/.ATTRIBUTES/VARIABLE_VALUE")]: tuple(shape)
            for name, shape in tf.train.list_variables(path) if name.startswith("model/")}, path


def test_attention_bias_option_keeps_the_layout_of_earlier_checkpoints(tmp_path):
    with_biases = built_model(num_layers=1, attention_bias=True)
    assert with_biases.count_params() == sum(int(np.prod(shape)) for shape in LAYOUT_WITH_ATTENTION_BIASES.values())
    layout, path = _checkpoint_layout(with_biases, tmp_path / "with")
    assert layout == LAYOUT_WITH_ATTENTION_BIASES
    restored = built_model(num_layers=1, attention_bias=True)
    tf.train.Checkpoint(model=restored).restore(path).assert_consumed()
    np.testing.assert_allclose(restored(FEATURES).numpy(), with_biases(FEATURES).numpy(), atol=1e-6)
    # The paper's default differs from that layout by exactly the attention biases: 2 encoder, 5 decoder.
    without, _ = _checkpoint_layout(built_model(num_layers=1), tmp_path / "without")
    biases = {name for name in layout if "attention/" in name and name.endswith("/bias")}
    assert len(biases) == 7 and without == {name: shape for name, shape in layout.items() if name not in biases}


def test_layer_norm_equals_keras_layer_norm_with_gradients():
    ours = LayerNormalization(epsilon=1e-6)
    theirs = keras.layers.LayerNormalization(epsilon=1e-6)
    x = tf.random.stateless_normal([2, 3, 16], seed=[1, 2]) * 3.0 + 1.0
    ours.build(x.shape)
    theirs.build(x.shape)
    for layer in (ours, theirs):
        layer.gamma.assign(tf.random.stateless_normal([16], seed=[3, 4]) + 1.0)
        layer.beta.assign(tf.random.stateless_normal([16], seed=[5, 6]))
    upstream = tf.random.stateless_normal(x.shape, seed=[7, 8])
    results = []
    for layer in (ours, theirs):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x)
            loss = tf.reduce_sum(y * upstream)
        results.append([y, *tape.gradient(loss, [x, layer.gamma, layer.beta])])
    for a, b in zip(*results):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("pos, dim", [(0, 0), (0, 1), (1, 0), (1, 1), (7, 4), (7, 5), (50, 30), (123, 63)])
def test_sinusoid_matches_the_paper_formula(pos, dim):
    d_model = 64
    table = sinusoid_position_encoding(200, d_model).numpy()
    i = dim // 2
    angle = pos / 10000 ** (2 * i / d_model)
    expected = math.sin(angle) if dim % 2 == 0 else math.cos(angle)
    assert table[pos, dim] == pytest.approx(expected, abs=1e-5)


def test_sinusoid_offset_matches_table():
    full = sinusoid_position_encoding(10, 8).numpy()
    np.testing.assert_allclose(sinusoid_position_encoding(3, 8, start=4).numpy(), full[4:7], atol=1e-6)


def test_embeddings_are_scaled_and_shared():
    model = tiny_model()
    model({"inputs": tf.constant([[3, 1]]), "targets": tf.constant([[4, 1]])})
    embedding_vars = [w for w in model.weights if "embeddings" in w.path]
    assert len(embedding_vars) == 1, "source, target and softmax weights must be one matrix"
    table = model.source_embedding.embeddings.numpy()
    np.testing.assert_allclose(model.source_embedding(tf.constant([3])).numpy()[0], table[3] * 4.0, rtol=1e-6)

    unshared = tiny_model(shared_embedding=False)
    unshared({"inputs": tf.constant([[3, 1]]), "targets": tf.constant([[4, 1]])})
    assert len([w for w in unshared.weights if "embeddings" in w.path]) == 3


@pytest.mark.parametrize("overrides", [{}, {"norm_placement": "pre"}, {"position_encoding": "learned"}])
def test_padded_batch_matches_unpadded_on_real_positions(overrides):
    model = tiny_model(**overrides)
    inputs = tf.constant([[5, 6, 7, 1]])
    targets = tf.constant([[8, 9, 1]])
    alone = model({"inputs": inputs, "targets": targets}).numpy()
    padded = model(
        {
            "inputs": tf.constant([[5, 6, 7, 1, 0, 0], [9, 8, 7, 6, 5, 1]]),
            "targets": tf.constant([[8, 9, 1, 0, 0], [4, 4, 4, 4, 1]]),
        }
    ).numpy()
    np.testing.assert_allclose(padded[0, :3], alone[0], atol=1e-5)


def test_future_targets_do_not_change_earlier_logits():
    model = tiny_model()
    inputs = tf.constant([[5, 6, 1]])
    a = model({"inputs": inputs, "targets": tf.constant([[8, 9, 10, 1]])}).numpy()
    b = model({"inputs": inputs, "targets": tf.constant([[8, 9, 30, 31]])}).numpy()
    np.testing.assert_allclose(a[0, :3], b[0, :3], atol=1e-6)
    assert not np.allclose(a[0, 3], b[0, 3])


@pytest.mark.parametrize("use_cache, preallocated", [(True, False), (True, True), (False, False)])
@pytest.mark.parametrize("overrides", [{}, {"norm_placement": "pre", "shared_embedding": False}])
def test_scoring_function_equals_teacher_forcing(overrides, use_cache, preallocated):
    model = tiny_model(**overrides)
    inputs = tf.constant([[5, 6, 7, 1], [8, 9, 1, 0]])
    targets = tf.constant([[10, 11, 12, 13, 1], [14, 15, 1, 0, 0]])
    full = model({"inputs": inputs, "targets": targets}).numpy()
    # Two beams per sentence: rows 2s and 2s + 1 both read sentence s.
    max_length = targets.shape[1] if preallocated else None
    symbols_to_logits_fn, state, sentences = model.scoring_function(inputs, 2, max_length, use_cache)
    decoder_inputs = tf.repeat(tf.pad(targets, [[0, 0], [1, 0]]), 2, axis=0)
    for step in range(targets.shape[1]):
        logits, state = symbols_to_logits_fn(decoder_inputs[:, : step + 1], step, state, sentences)
        np.testing.assert_allclose(logits.numpy()[::2], full[:, step], atol=1e-5)
        np.testing.assert_allclose(logits.numpy()[1::2], full[:, step], atol=1e-5)
    if use_cache:  # the state is the self-attention cache alone: the memory is the sentences' (once per sentence)
        assert [sorted(layer) for layer in state] == [["k", "v"]] * TINY.num_layers
        assert state[0]["k"].shape == (4, TINY.num_heads, targets.shape[1], TINY.d_k)
    else:
        assert state == {}


def test_dropout_is_active_only_in_training():
    model = tiny_model(dropout=0.5)
    features = {"inputs": tf.constant([[5, 6, 1]]), "targets": tf.constant([[7, 1]])}
    np.testing.assert_allclose(model(features).numpy(), model(features).numpy())
    assert not np.allclose(model(features, training=True).numpy(), model(features, training=True).numpy())


def test_dropout_is_reproducible_from_its_seed_and_new_at_every_call():
    x = tf.random.stateless_normal([63, 47], seed=[1, 2])  # an odd element count: the last uint32 is half used
    first, second = Dropout(0.1, seed=7), Dropout(0.1, seed=7)
    calls = [first(x, training=True).numpy() for _ in range(2)]
    np.testing.assert_array_equal(calls[0], second(x, training=True).numpy())
    np.testing.assert_array_equal(calls[1], second(x, training=True).numpy())
    assert not np.array_equal(calls[0] == 0, calls[1] == 0)


@pytest.mark.parametrize("dtype", ["float32", "mixed_bfloat16"])
@pytest.mark.parametrize("rate", [0.1, 0.3])
def test_dropout_drops_the_given_rate_and_keeps_the_expected_value(rate, dtype):
    """Section 5.4's P_drop holds in every precision: bf16 uniform draws (Keras') would drop 0.1016 for 0.1."""
    layer = Dropout(rate, seed=3, dtype=dtype)
    outputs = layer(tf.ones([2000, 1000], layer.compute_dtype), training=True)
    dropped = tf.reduce_mean(tf.cast(tf.equal(outputs, 0), tf.float32))
    assert abs(float(dropped) - rate) < 0.001  # bf16 draws miss by 0.0016 (0.1) and 0.0048 (0.3)
    assert abs(float(tf.reduce_mean(tf.cast(outputs, tf.float32))) - 1.0) < 0.002


LAYERS = [
    (MultiHeadAttention(num_heads=2, d_k=3, d_v=5, d_model=8, attention_dropout=0.1, self_attention=False), None),
    (MultiHeadAttention(num_heads=2, d_k=3, d_v=5, d_model=8, use_bias=True), None),
    (TokenEmbedding(vocab_size=20, d_model=8), None),
    (PositionEncoding(d_model=8, kind="learned", max_position=30), None),
    (FeedForward(d_model=8, d_ff=16, relu_dropout=0.2), None),
    (SublayerConnection(dropout=0.2, norm_placement="pre", layer_norm_epsilon=1e-5), None),
    (EncoderLayer(dataclasses.replace(TINY, dropout=0.2, norm_placement="pre")), None),
    (DecoderLayer(dataclasses.replace(TINY, attention_dropout=0.1, relu_dropout=0.1)), None),
    (Transformer(dataclasses.replace(TINY, shared_embedding=False, position_encoding="learned"), 40), None),
]


@pytest.mark.parametrize("layer", [layer for layer, _ in LAYERS], ids=lambda layer: type(layer).__name__)
def test_get_config_round_trip(layer):
    config = layer.get_config()
    rebuilt = type(layer).from_config(config)
    assert rebuilt.get_config() == config
    if hasattr(layer, "hparams"):  # built from one HParams, which the config holds whole
        assert rebuilt.hparams == layer.hparams and config["hparams"] == layer.hparams.to_dict()


def test_checkpoint_round_trip_restores_every_weight(tmp_path):
    model = tiny_model()
    features = {"inputs": tf.constant([[5, 6, 1]]), "targets": tf.constant([[7, 1]])}
    expected = model(features).numpy()
    path = tf.train.Checkpoint(model=model).save(str(tmp_path / "ckpt"))
    saved = {name for name, _ in tf.train.list_variables(path) if name.startswith("model/")}
    assert len(saved) == len(model.weights)
    keras.utils.set_random_seed(2)
    fresh = Transformer(TINY, 50)
    fresh(features)
    tf.train.Checkpoint(model=fresh).restore(path).assert_existing_objects_matched()
    np.testing.assert_allclose(fresh(features).numpy(), expected, atol=1e-6)


def test_model_returns_the_attention_weights_of_every_layer():
    model = tiny_model()
    features = {"inputs": tf.constant([[5, 6, 7, 1]]), "targets": tf.constant([[8, 1]])}
    logits, weights = model(features, return_attention_scores=True)
    np.testing.assert_allclose(logits.numpy(), model(features).numpy())
    shapes = {ENCODER_SELF_ATTENTION: (1, 4, 4, 4), DECODER_SELF_ATTENTION: (1, 4, 2, 2),
              ENCODER_DECODER_ATTENTION: (1, 4, 2, 4)}
    assert sorted(weights) == sorted(shapes)
    for kind, shape in shapes.items():
        assert [w.shape for w in weights[kind]] == [shape] * TINY.num_layers
        np.testing.assert_allclose(np.sum(weights[kind], axis=-1), 1.0, rtol=1e-5)
