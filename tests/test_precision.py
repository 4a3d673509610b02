"""Mixed precision, loss scaling, vocabulary padding, TF32 and XLA: what a user relies on, checked on CPU."""

import dataclasses
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from conftest import TINY_RUN_FLAGS, run_cli, run_cli_in_process
from t2t_repro.decode.transformer_search import beam_decode
from t2t_repro.decode_settings import DecodeSettings
from t2t_repro.errors import UserError
from t2t_repro.hparams_type import HParams, apply_overrides
from t2t_repro.model import build_transformer, half_precision_weights
from t2t_repro.model.transformer import ENCODER_SELF_ATTENTION, padded_vocab_size
from t2t_repro.train.precision import configure_tf32, precision_line, with_loss_scaling
from t2t_repro.train.step import TrainStep, _non_finite_everywhere_if_anywhere, training_loss

HPARAMS = HParams(num_layers=2, d_model=16, d_ff=32, num_heads=2, d_k=8, d_v=8, dropout=0.0)
VOCAB = 29
BATCH = {
    "inputs": np.array([[5, 6, 7, 1], [8, 9, 1, 0]], np.int32),
    "targets": np.array([[10, 11, 12, 1], [13, 1, 0, 0]], np.int32),
}


def _model(seed=3, vocab=VOCAB, **overrides):
    keras.utils.set_random_seed(seed)
    return build_transformer(dataclasses.replace(HPARAMS, **overrides), vocab)


def _dataset(batches):
    signature = {k: tf.TensorSpec([None, None], tf.int32) for k in ("inputs", "targets")}
    return tf.data.Dataset.from_generator(lambda: iter(batches), output_signature=signature)


@pytest.mark.parametrize("precision,compute", [("mixed_bfloat16", tf.bfloat16), ("mixed_float16", tf.float16)])
def test_mixed_precision_computes_in_half_with_float32_weights_and_float32_islands(precision, compute):
    model = _model(precision=precision)
    assert {v.dtype for v in model.weights} == {"float32"}
    assert model.final_states(BATCH).dtype == compute
    logits, weights = model(BATCH, return_attention_scores=True)
    assert logits.dtype == tf.float32  # the logits and the loss: float32
    assert weights[ENCODER_SELF_ATTENTION][0].dtype == tf.float32  # the attention softmax: float32
    # Close to the float32 model with the same weights (the policy changes no weight).
    reference = _model(precision="float32")
    reference.set_weights(model.get_weights())
    np.testing.assert_allclose(logits, reference(BATCH), atol=0.15)


@pytest.mark.parametrize("precision,half", [("mixed_bfloat16", "bfloat16"), ("mixed_float16", "float16")])
def test_weights_cast_once_decode_exactly_as_the_mixed_model(precision, half):
    model = _model(precision=precision)
    copy = half_precision_weights(model)
    norms = [v for v in copy.weights if "norm" in v.path]
    assert norms and {v.dtype for v in norms} == {"float32"}  # the normalizations use theirs in float32
    assert {v.dtype for v in copy.weights if "norm" not in v.path} == {half}
    assert copy.compute_dtype == model.compute_dtype
    np.testing.assert_array_equal(copy(BATCH), model(BATCH))
    settings = DecodeSettings(beam_size=3, alpha=0.6, extra_length=5)
    for use_cache in (True, False):
        ids, scores = beam_decode(model, BATCH["inputs"], settings, use_cache=use_cache)
        copy_ids, copy_scores = beam_decode(copy, BATCH["inputs"], settings, use_cache=use_cache)
        np.testing.assert_array_equal(copy_ids, ids)
        np.testing.assert_array_equal(copy_scores, scores)
    assert half_precision_weights(_model()).dtype_policy.name == "float32"


def test_checkpoints_interchange_between_precisions(tmp_path):
    mixed = _model(seed=5, precision="mixed_bfloat16")
    path = tf.train.Checkpoint(model=mixed).write(str(tmp_path / "ckpt"))
    plain = _model(seed=9)
    tf.train.Checkpoint(model=plain).read(path).assert_existing_objects_matched()
    for a, b in zip(mixed.get_weights(), plain.get_weights()):
        np.testing.assert_array_equal(a, b)


def _scaled_step(scale):
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    with strategy.scope():
        model = _model(precision="mixed_float16")
        optimizer = with_loss_scaling(keras.optimizers.SGD(learning_rate=0.1), "mixed_float16")
        optimizer.build(model.trainable_variables)
    optimizer.dynamic_scale.assign(scale)
    return model, optimizer, TrainStep(model, optimizer, strategy, label_smoothing=0.1)


def test_float16_overflow_skips_the_update_and_lowers_the_scale():
    model, optimizer, step = _scaled_step(3e38)  # the scaled loss overflows: every gradient is inf or NaN
    before = model.get_weights()
    loss, _ = step(iter(_dataset([BATCH])))
    assert np.isfinite(float(loss))  # the loss itself is fine: only the update is skipped
    assert int(optimizer.iterations) == 0
    assert float(optimizer.dynamic_scale) == pytest.approx(1.5e38)
    for a, b in zip(before, model.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_float16_step_unscales_the_gradients_once():
    scaled_model, scaled_optimizer, scaled_step = _scaled_step(2.0**10)
    scaled_step(iter(_dataset([BATCH])))
    unscaled_model, unscaled_optimizer, unscaled_step = _scaled_step(1.0)
    unscaled_step(iter(_dataset([BATCH])))
    assert int(scaled_optimizer.iterations) == int(unscaled_optimizer.iterations) == 1
    initial = _model(precision="mixed_float16").get_weights()
    moved = [np.abs(a - b).max() for a, b in zip(scaled_model.get_weights(), initial)]
    assert max(moved) > 1e-4, "the step must change the weights"
    for a, b in zip(scaled_model.get_weights(), unscaled_model.get_weights()):
        np.testing.assert_allclose(a, b, atol=2e-4)


def test_an_overflow_on_one_replica_skips_the_update_on_every_replica():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])

    def replica_gradients():
        context = tf.distribute.get_replica_context()
        bad = tf.cast(context.replica_id_in_sync_group, tf.float32) * np.inf  # replica 1 overflows
        gradients = _non_finite_everywhere_if_anywhere([tf.ones([3]), tf.ones([2, 2]) + bad], context)
        return tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in gradients])

    finite = strategy.experimental_local_results(strategy.run(tf.function(replica_gradients)))
    assert [bool(f) for f in finite] == [False, False]


def test_padded_vocabulary_gives_the_same_loss_and_decoding_in_float32():
    assert padded_vocab_size(VOCAB, 8) == 32 and padded_vocab_size(32, 8) == 32
    plain = _model(seed=11)
    padded = _model(seed=12, vocab_multiple=8)
    assert padded.output_matrix.shape[0] == 32 and padded.vocab_size == VOCAB
    weights = [np.concatenate([w, np.random.default_rng(0).normal(size=(3, w.shape[1])).astype(w.dtype) * 5])
               if w.shape[0] == VOCAB else w for w in plain.get_weights()]
    padded.set_weights(weights)  # real rows equal, padding rows large and random
    assert padded(BATCH).shape[-1] == VOCAB
    np.testing.assert_allclose(padded(BATCH), plain(BATCH), rtol=1e-6, atol=1e-6)
    with tf.GradientTape(persistent=True) as tape:
        plain_loss, _ = training_loss(plain, BATCH, 0.1)
        padded_loss, _ = training_loss(padded, BATCH, 0.1)
    assert float(padded_loss) == pytest.approx(float(plain_loss), rel=1e-6)
    plain_grads = tape.gradient(plain_loss, plain.trainable_variables)
    padded_grads = tape.gradient(padded_loss, padded.trainable_variables)
    for variable, a, b in zip(padded.trainable_variables, plain_grads, padded_grads):
        b = tf.convert_to_tensor(b).numpy()
        if variable.path == padded.output_matrix.path:
            np.testing.assert_array_equal(b[VOCAB:], 0)  # padding rows take no gradient: no smoothing mass
            b = b[:VOCAB]
        np.testing.assert_allclose(tf.convert_to_tensor(a), b, rtol=1e-5, atol=1e-6)
    settings = DecodeSettings(beam_size=3, alpha=0.6, extra_length=6, nbest=3)
    ids_plain, scores_plain = beam_decode(plain, BATCH["inputs"], settings)
    ids_padded, scores_padded = beam_decode(padded, BATCH["inputs"], settings)
    np.testing.assert_array_equal(ids_plain, ids_padded)
    np.testing.assert_allclose(scores_plain, scores_padded, rtol=1e-6)


def test_xla_step_equals_the_graph_step():
    def run(jit_compile):
        strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
        with strategy.scope():
            model = _model(seed=4)
            optimizer = keras.optimizers.SGD(learning_rate=1.0)
        step = TrainStep(model, optimizer, strategy, label_smoothing=0.1, jit_compile=jit_compile)
        loss, _ = step(iter(_dataset([BATCH])))
        return float(loss), model.get_weights()

    graph, compiled = run(False), run(True)
    assert compiled[0] == pytest.approx(graph[0], rel=1e-5)
    for a, b in zip(graph[1], compiled[1]):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_precision_and_tf32_settings():
    assert apply_overrides(HPARAMS, "precision=mixed_bfloat16,tf32=false").precision == "mixed_bfloat16"
    with pytest.raises(UserError, match="precision='bf16': must be one of float32, mixed_bfloat16, mixed_float16"):
        apply_overrides(HPARAMS, "precision=bf16")
    ampere = {"type": "GPU", "name": "NVIDIA A100-SXM4-80GB", "compute_capability": [8, 0]}
    assert "TF32 on NVIDIA A100" in precision_line(HPARAMS, ampere)
    assert "strict" in precision_line(dataclasses.replace(HPARAMS, tf32=False), ampere)
    volta = {"type": "GPU", "name": "Tesla V100", "compute_capability": [7, 0]}
    assert precision_line(HPARAMS, volta) == "precision float32"
    try:
        configure_tf32(False)
        assert not tf.config.experimental.tensor_float_32_execution_enabled()
    finally:
        configure_tf32(True)


def test_a_run_changes_precision_only_when_asked(tmp_path, tiny_data_dir):
    output_dir = tmp_path / "run"
    common = [*TINY_RUN_FLAGS, "--checkpoint_steps=2", "--skip_average", "--skip_test", "--skip_export",
              "--eval_decode_sentences=0", "--log_steps=1", f"--data_dir={tiny_data_dir}",
              f"--output_dir={output_dir}"]
    overrides = TINY_RUN_FLAGS[2]

    def train(steps, precision, *extra):
        return run_cli_in_process("trainer", *common, f"{overrides},precision={precision}", f"--train_steps={steps}",
                                  *extra)

    first = train(4, "float32")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "precision float32" in first.stdout
    environment = json.loads((output_dir / "run.json").read_text())["environment"]
    assert environment["training_precision"] == "float32" and environment["devices"] == 1
    assert environment["xla"] is False
    assert environment["device_kind"] == "CPU" and environment["device_name"]

    refused = train(6, "mixed_float16")
    assert refused.returncode != 0 and len(refused.stderr.strip().splitlines()) == 1
    assert "precision: saved 'float32', now 'mixed_float16'" in refused.stderr
    assert "--allow_precision_change" in refused.stderr

    # float32 -> float16: the checkpoint has no loss scale, which starts at its initial value.
    scaled = train(6, "mixed_float16", "--allow_precision_change")
    assert scaled.returncode == 0, scaled.stdout + scaled.stderr
    assert "resumed from" in scaled.stdout and "ckpt-4 at step 4" in scaled.stdout
    assert "loss_scale 32768" in scaled.stdout and "skipped_steps 0" in scaled.stdout
    report = json.loads((output_dir / "report.json").read_text())
    assert report["training_precision"] == "mixed_float16" and report["steps"] == 6 and report["skipped_steps"] == 0
    # float16 -> float32: the loss scale in the checkpoint is left unread.
    back = train(8, "float32", "--allow_precision_change")
    assert back.returncode == 0, back.stdout + back.stderr
    assert "ckpt-6 at step 6" in back.stdout
    assert json.loads((output_dir / "run.json").read_text())["environment"]["training_precision"] == "float32"


def _bfloat16_ops(graph_def):
    """Names of the ops of a GraphDef (its function library included) that output bfloat16."""
    nodes = list(graph_def.node) + [node for function in graph_def.library.function for node in function.node_def]
    return [node.op for node in nodes if any(value.type == tf.bfloat16.as_datatype_enum or
                                             tf.bfloat16.as_datatype_enum in value.list.type
                                             for value in node.attr.values())]


def test_a_bfloat16_export_answers_as_the_bfloat16_decoder(serving_run, parallel_text_dir, tmp_path):
    import tensorflow_text  # noqa: F401  (the export's tokenizer ops)

    export_dir = tmp_path / "export"
    exported = run_cli_in_process("exporter", f"--output_dir={serving_run}", f"--export_dir={export_dir}",
                                  "--extra_length=6", "--serving_precision=mixed_bfloat16")
    assert exported.returncode == 0, exported.stderr
    assert json.loads(exported.stdout)["serving_precision"] == "mixed_bfloat16"
    metadata = json.loads((export_dir / "1" / "assets.extra" / "t2t_repro_export.json").read_text())
    assert (metadata["training_precision"], metadata["serving_precision"]) == ("float32", "mixed_bfloat16")

    sources = (parallel_text_dir / "test.en").read_text(encoding="utf-8").splitlines()[:6]
    (tmp_path / "sources.en").write_text("\n".join(sources) + "\n", encoding="utf-8")
    result = run_cli_in_process("decoder", f"--output_dir={serving_run}", f"--decode_from_file={tmp_path}/sources.en",
                                f"--decode_to_file={tmp_path}/decoded.de", "--extra_length=6",
                                "--serving_precision=mixed_bfloat16", "--quiet")
    assert result.returncode == 0, result.stderr
    decoded = (tmp_path / "decoded.de").read_text(encoding="utf-8").splitlines()

    loaded = tf.saved_model.load(str(export_dir / "1"))
    answer = loaded.signatures["serving_default"](inputs=tf.constant(sources))
    assert [text.decode("utf-8") for text in answer["outputs"].numpy()] == decoded
    assert all(decoded)
    graph = loaded.signatures["ids"].graph.as_graph_def()
    assert "BatchMatMulV2" in _bfloat16_ops(graph) or "MatMul" in _bfloat16_ops(graph)  # it computes in bf16
    stored = tf.train.load_checkpoint(str(export_dir / "1" / "variables" / "variables"))
    dtypes = [dtype for name, dtype in stored.get_variable_to_dtype_map().items() if dtype.is_floating]
    # The weights are stored in bfloat16, but for the layer normalizations' float32 gamma and beta.
    assert dtypes.count(tf.bfloat16) > dtypes.count(tf.float32) > 0


def test_serving_precision_is_refused_where_it_cannot_apply(tmp_path):
    result = run_cli_in_process("exporter", f"--output_dir={tmp_path}", "--format=ctranslate2",
                                "--serving_precision=mixed_bfloat16")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "--quantization" in result.stderr.strip().splitlines()[-1]
    result = run_cli("serve", "--model_dir=x", "--serving_precision=mixed_bfloat16")
    assert result.returncode == 2 and "unrecognized arguments: --serving_precision" in result.stderr


def test_bfloat16_without_kernels_is_refused_in_one_line_before_data_or_run_is_written(tmp_path, monkeypatch):
    from t2t_repro.model import cpu_kernels

    monkeypatch.setattr(cpu_kernels, "_missing_bfloat16_kernels", lambda: "could not create a primitive descriptor")
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    completed = run_cli_in_process("trainer", "--problem=toy_ende", "--hparams=transformer_tiny",
                                   "--hparams_overrides=precision=mixed_bfloat16", f"--data_dir={tmp_path / 'data'}",
                                   f"--output_dir={tmp_path / 'run'}")
    assert completed.returncode == 2
    [line] = completed.stderr.strip().splitlines()
    assert line.endswith(
        ": error: precision mixed_bfloat16 cannot run here: this CPU's bfloat16 kernels fail (could not create a "
        "primitive descriptor): use float32, or set TF_ENABLE_ONEDNN_OPTS=0 for TensorFlow's own bfloat16 kernels")
    assert list(tmp_path.iterdir()) == []
    for precision in ("float32", "mixed_float16"):
        cpu_kernels.check_compute_kernels(precision)  # these compute everywhere
    # A bf16 export is refused by the server before its graph is loaded.
    from t2t_repro.serve.export_files import SAVED_MODEL_METADATA
    from t2t_repro.serve.saved_model_backend import SavedModelBackend

    version_dir = tmp_path / "export" / "1"
    metadata = version_dir / SAVED_MODEL_METADATA
    metadata.parent.mkdir(parents=True)
    metadata.write_text(json.dumps({"serving_precision": "mixed_bfloat16"}))
    with pytest.raises(UserError, match="precision mixed_bfloat16 cannot run here"):
        SavedModelBackend(str(version_dir))


# The check, then (refused or not) the kind of compiled bf16 op a training step runs.
_BF16_CHECK_THEN_STEP = """
import tensorflow as tf
from t2t_repro.errors import UserError
from t2t_repro.model.cpu_kernels import check_compute_kernels
try:
    check_compute_kernels("mixed_bfloat16")
except UserError as error:
    print("refused:", error, flush=True)
x = tf.ones([8, 8], tf.bfloat16)
tf.function(lambda a: tf.nn.relu(tf.matmul(a, a) + tf.constant(1.0, tf.bfloat16)))(x).numpy()
"""


def test_bfloat16_is_refused_exactly_where_its_compiled_step_would_end_the_process():
    # With oneDNN held to AVX2: on an AVX-512 CPU TensorFlow still hands it bf16 ops it has no kernels for (the
    # process dies without a message), on an AVX2-only CPU it keeps its own kernels and both run.
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX2", TF_ENABLE_ONEDNN_OPTS="1", TF_CPP_MIN_LOG_LEVEL="3")
    completed = subprocess.run([sys.executable, "-c", _BF16_CHECK_THEN_STEP], capture_output=True, text=True,
                               env=env, timeout=300)
    refused = completed.stdout.startswith("refused: precision mixed_bfloat16 cannot run here: oneDNN held to "
                                          "ONEDNN_MAX_CPU_ISA=AVX2 has no bfloat16 kernels: unset it, use float32")
    assert refused == (completed.returncode != 0), (completed.stdout, completed.stderr[-500:], completed.returncode)
