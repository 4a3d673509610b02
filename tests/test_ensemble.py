"""Ensembles: one beam search over several models scores each token with the log of the mean of their
probabilities (models of different sizes, each with its own cache); an ensemble of a run with itself decodes
exactly as the run alone, in t2t-repro-decoder and in an exported SavedModel; runs of another problem or
vocabulary, and CTranslate2, are refused in one line."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from conftest import copy_run, run_cli_in_process
from t2t_repro.decode.beam_search import length_penalty
from t2t_repro.decode.ensemble import Ensemble
from t2t_repro.decode.transformer_search import beam_decode
from t2t_repro.decode_settings import DecodeSettings
from t2t_repro.hparams_type import HParams
from t2t_repro.model import build_transformer
from t2t_repro.special_tokens import EOS_ID, PAD_ID

EXTRA_LENGTH = 6


def _tiny_model(seed, **sizes):
    keras.utils.set_random_seed(seed)
    return build_transformer(HParams(dropout=0.0, **sizes), vocab_size=12)


def _log_probs(model, inputs, targets):
    """log p(target token | previous ones, source) [batch, length] by teacher forcing (no cache), PAD's
    probability removed as the search removes it (positions after a target's end are meaningless)."""
    logits = model({"inputs": inputs, "targets": targets})
    logits += tf.one_hot(PAD_ID, model.vocab_size, on_value=float("-inf"), off_value=0.0)
    return tf.gather(tf.nn.log_softmax(logits), targets, batch_dims=2).numpy().astype(np.float64)


def test_ensemble_scores_each_token_with_the_mean_of_its_models_probabilities():
    models = [
        _tiny_model(1, num_layers=1, d_model=16, d_ff=32, num_heads=4, d_k=4, d_v=4),
        _tiny_model(2, num_layers=2, d_model=24, d_ff=48, num_heads=3, d_k=8, d_v=8),
        _tiny_model(3, num_layers=1, d_model=16, d_ff=32, num_heads=2, d_k=8, d_v=8, norm_placement="pre"),
    ]
    inputs = tf.constant([[4, 5, 6, 1, 0], [7, 3, 9, 10, 1], [8, 1, 0, 0, 0]])
    settings = DecodeSettings(beam_size=4, alpha=0.6, extra_length=4, nbest=4)
    ids, scores = beam_decode(Ensemble(models), inputs, settings)
    targets = ids.numpy().reshape([-1, ids.shape[-1]])  # every hypothesis, PAD after its end
    sources = tf.repeat(inputs, settings.nbest, axis=0)
    real = targets != PAD_ID
    per_model = [np.where(real, _log_probs(model, sources, targets), 0.0) for model in models]
    log_mean = np.log(np.mean(np.exp(per_model), axis=0))
    expected = log_mean.sum(axis=1) / length_penalty(real.sum(axis=1), 0.6).numpy()
    np.testing.assert_allclose(scores.numpy().reshape(-1), expected, rtol=1e-5, atol=1e-5)
    assert (targets == EOS_ID).any(), "the test should cover hypotheses that end with EOS"
    # The models disagree, so the mean is none of them.
    assert all(np.abs(log_probs - log_mean).max() > 1e-2 for log_probs in per_model)


@pytest.fixture(scope="module")
def sources_file(parallel_text_dir, tmp_path_factory):
    lines = (parallel_text_dir / "test.en").read_text(encoding="utf-8").splitlines()[:8]
    path = tmp_path_factory.mktemp("ensemble") / "sources.en"
    path.write_text("\n".join(lines + ["", lines[0]]) + "\n", encoding="utf-8")
    return path


def _decode(serving_run, sources_file, *flags):
    """The bytes t2t-repro-decoder --nbest=2 writes for `sources_file`, with `flags`."""
    target = sources_file.parent / f"decoded{len(list(sources_file.parent.iterdir()))}.txt"
    result = run_cli_in_process("decoder", f"--output_dir={serving_run}", f"--decode_from_file={sources_file}",
                                f"--decode_to_file={target}", f"--extra_length={EXTRA_LENGTH}", "--nbest=2",
                                "--quiet", *flags)
    assert result.returncode == 0, result.stderr
    return target.read_bytes()


def _nbest_lines(decoded):
    """[(text, score)] per source of the decoder's --nbest=2 output."""
    rows = [line.split("\t") for line in decoded.decode("utf-8").split("\n")[:-1]]
    return [[(text, float(score)) for score, text in rows[i : i + 2]] for i in range(0, len(rows), 2)]


def test_an_ensemble_of_a_run_with_itself_decodes_as_the_run_alone(serving_run, sources_file, tmp_path):
    alone = _decode(serving_run, sources_file)
    together = _decode(serving_run, sources_file, f"--ensemble={serving_run}")
    assert together == alone  # outputs and their scores, to the 6 decimals written
    assert len(set(alone.decode("utf-8").splitlines())) > 8  # varied outputs, not a comparison of empty ones
    sources = sources_file.read_text(encoding="utf-8").splitlines()
    got = _nbest_lines(together)

    # The ensemble exported as a SavedModel answers as the decoder with --ensemble.
    result = run_cli_in_process("exporter", f"--output_dir={serving_run}", f"--ensemble={serving_run}",
                                f"--export_dir={tmp_path}", f"--extra_length={EXTRA_LENGTH}", "--nbest=2")
    assert result.returncode == 0, result.stderr
    metadata = json.loads((tmp_path / "1" / "assets.extra" / "t2t_repro_export.json").read_text())
    assert [member["output_dir"] for member in metadata["ensemble"]] == [str(serving_run)]
    import tensorflow_text  # noqa: F401 - the graph's SentencePiece ops

    answer = tf.saved_model.load(str(tmp_path / "1")).signatures["serving_default"](inputs=tf.constant(sources))
    assert [[text.decode("utf-8") for text in row] for row in answer["outputs"].numpy()] == [
        [text for text, _ in hypotheses] for hypotheses in got]
    np.testing.assert_allclose(answer["scores"].numpy(), [[score for _, score in hs] for hs in got], atol=1e-5)


def _edited_copy(run, directory, **values):
    copy = copy_run(run, directory)
    info = copy / "run.json"
    info.write_text(json.dumps(dict(json.loads(info.read_text()), **values)))
    return copy


@pytest.mark.parametrize("tool, flags, message", [
    ("decoder", ["--ensemble={other_vocabulary}"], "{other_vocabulary} trained with another vocabulary than {run}"),
    ("decoder", ["--ensemble={run},{other_problem}"], "{other_problem} is a run of problem 'wmt_enfr', not "
                                                      "'wmt_ende'"),
    ("exporter", ["--ensemble={other_vocabulary}"], "{other_vocabulary} trained with another vocabulary"),
    ("decoder", ["--ensemble={run}", "--engine=ctranslate2"], "--ensemble is for the tensorflow engine"),
    ("exporter", ["--ensemble={run}", "--format=ctranslate2"], "--ensemble is for --format=saved_model"),
    ("decoder", ["--ensemble={run},"], "none of them empty"),
])
def test_what_cannot_be_an_ensemble_is_refused_in_one_line(serving_run, tmp_path, tool, flags, message):
    names = {"run": serving_run,
             "other_vocabulary": _edited_copy(serving_run, tmp_path / "a", vocabulary_sha256="0" * 64),
             "other_problem": _edited_copy(serving_run, tmp_path / "b", problem="wmt_enfr")}
    flags = [flag.format(**names) for flag in flags]
    where = [f"--export_dir={tmp_path / 'export'}"] if tool == "exporter" else []
    result = run_cli_in_process(tool, f"--output_dir={serving_run}", *where, *flags)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert message.format(**names) in result.stderr
