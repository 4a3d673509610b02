"""n-best exports: a SavedModel exported with --nbest=N answers the N hypotheses and scores t2t-repro-decoder
--nbest=N gives, and t2t-repro-serve answers them as lists per example with either engine (parsing exports:
a tree per hypothesis, the linearised outputs beside them)."""

import http.client
import json
import shutil

import numpy as np
import pytest
import tensorflow as tf

from t2t_repro.cli import decoder, exporter
from t2t_repro.cli.common import run_main
from t2t_repro.data.ptb_tree import delinearise
from t2t_repro.decode.decode_text import search_texts_nbest
from t2t_repro.run import ctranslate2_jobs, jobs
from t2t_repro.serve.export_files import CTRANSLATE2_METADATA, read_export_metadata
from t2t_repro.serve.served_model import ServingLimits
from t2t_repro.serve.server import ModelServer

NBEST = 2
EXTRA_LENGTH = 6
LIMITS = ServingLimits(max_batch_size=16, batch_timeout_ms=20, max_body_bytes=4096, max_input_chars=200)


@pytest.fixture(scope="module")
def sources(parallel_text_dir):
    lines = (parallel_text_dir / "test.en").read_text(encoding="utf-8").splitlines()[:6]
    return lines + ["", "  " + lines[0] + " "]


def _export(serving_run, export_dir, *flags):
    status = run_main(exporter._main, [f"--output_dir={serving_run}", f"--export_dir={export_dir}",
                                       f"--extra_length={EXTRA_LENGTH}", f"--nbest={NBEST}", *flags])
    assert status == 0
    return export_dir / "1"


@pytest.fixture(scope="module")
def nbest_export(serving_run, tmp_path_factory):
    return _export(serving_run, tmp_path_factory.mktemp("nbest_export"))


@pytest.fixture(scope="module")
def decoded(serving_run, sources, tmp_path_factory):
    """t2t-repro-decoder --nbest=2 on `sources`: per source, its [(text, score)] best first."""
    directory = tmp_path_factory.mktemp("nbest_decoded")
    source_file, target_file = directory / "sources.en", directory / "decoded.de"
    source_file.write_text("\n".join(sources) + "\n", encoding="utf-8")
    assert run_main(decoder._main, [f"--output_dir={serving_run}", f"--decode_from_file={source_file}",
                                    f"--decode_to_file={target_file}", f"--extra_length={EXTRA_LENGTH}",
                                    f"--nbest={NBEST}", "--quiet"]) == 0
    rows = [line.split("\t") for line in target_file.read_text(encoding="utf-8").split("\n")[:-1]]
    hypotheses = [(text, float(score)) for score, text in rows]
    return [hypotheses[i : i + NBEST] for i in range(0, len(hypotheses), NBEST)]


def _assert_same_hypotheses(outputs, scores, expected):
    """outputs, scores: per example a list of NBEST; expected: per example [(text, score)]."""
    assert [list(texts) for texts in outputs] == [[text for text, _ in hypotheses] for hypotheses in expected]
    np.testing.assert_allclose(np.array(scores, np.float64), [[score for _, score in h] for h in expected],
                               atol=2e-5)


def test_saved_model_answers_the_decoders_nbest_lists(nbest_export, decoded, sources):
    metadata = read_export_metadata(nbest_export)
    assert metadata["decode"]["nbest"] == NBEST
    import tensorflow_text  # noqa: F401 - the graph's SentencePiece ops

    loaded = tf.saved_model.load(str(nbest_export))
    answer = loaded.signatures["serving_default"](inputs=tf.constant(sources))
    outputs = [[text.decode("utf-8") for text in row] for row in answer["outputs"].numpy()]
    assert answer["outputs"].shape == [len(sources), NBEST] and answer["scores"].shape == [len(sources), NBEST]
    _assert_same_hypotheses(outputs, answer["scores"].numpy(), decoded)
    assert all(len(set(texts)) == NBEST for texts in outputs[:6])  # two distinct hypotheses, not a copy
    assert outputs[6] == ["", ""] and outputs[-1] == outputs[0]  # empty source; whitespace stripped
    ids = loaded.signatures["ids"](inputs=tf.constant([[5, 6, 7, 1], [8, 1, 0, 0]], tf.int32))
    assert ids["outputs"].shape[:2] == [2, NBEST] and ids["scores"].shape == [2, NBEST]


def _predict(server, body):
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    try:
        connection.request("POST", "/v1/models/m:predict", body=json.dumps(body).encode("utf-8"))
        response = connection.getresponse()
        return response.status, json.loads(response.read().decode("utf-8"))
    finally:
        connection.close()


def _served(served, body):
    server = ModelServer(served, model_name="m", port=0).start()
    try:
        return _predict(server, body)
    finally:
        server.stop()


def test_tensorflow_engine_serves_nbest_lists(nbest_export, decoded, sources):
    served = jobs.served_model(str(nbest_export.parent), LIMITS)
    definition = served.signature_defs["serving_default"]["outputs"]["outputs"]["tensor_shape"]["dim"]
    assert [int(dim["size"]) for dim in definition] == [-1, NBEST]
    status, answer = _served(served, {"instances": sources[:6]})
    assert status == 200
    predictions = answer["predictions"]
    _assert_same_hypotheses([p["outputs"] for p in predictions], [p["scores"] for p in predictions], decoded[:6])
    assert [p["raw_outputs"] for p in predictions] == [p["outputs"] for p in predictions]  # translation


def test_ctranslate2_engine_serves_nbest_lists_and_parsing_trees_per_hypothesis(serving_run, sources,
                                                                                  tmp_path):
    version = _export(serving_run, tmp_path / "ct2", "--format=ctranslate2")
    assert read_export_metadata(version)["decode"]["nbest"] == NBEST
    text_decoder = ctranslate2_jobs.export_decoder(str(version))
    assert text_decoder.settings.nbest == NBEST  # the export's default, as its beam size
    expected = search_texts_nbest(sources[:6], text_decoder.search, text_decoder.vocabularies, text_decoder.settings,
                                  progress=False)
    # The same export with its metadata naming a parsing problem: each hypothesis is served as a tree.
    parsing = tmp_path / "parsing"
    shutil.copytree(version, parsing / "1")
    metadata_file = parsing / "1" / CTRANSLATE2_METADATA
    metadata_file.write_text(json.dumps(dict(json.loads(metadata_file.read_text()), problem="toy_parsing")))
    status, answer = _served(ctranslate2_jobs.served_model(str(parsing), LIMITS),
                             {"instances": sources[:6], "signature_name": "serving_default"})
    assert status == 200
    predictions = answer["predictions"]
    raw = [p["raw_outputs"] for p in predictions]
    _assert_same_hypotheses(raw, [p["scores"] for p in predictions],
                            [[(h.text, h.score) for h in hypotheses] for hypotheses in expected])
    for source, prediction in zip(sources, predictions):
        assert len(prediction["outputs"]) == NBEST
        assert prediction["outputs"] == [delinearise(text, source.split()).to_ptb() for text in
                                         prediction["raw_outputs"]]
