"""t2t-repro-serve with the CTranslate2 engine (the same REST API, signatures and batching as with a SavedModel),
and parsing models served as Penn Treebank trees by either engine, the linearised output beside them."""

import http.client
import json
import shutil
import threading

import pytest

from t2t_repro.data.ptb_tree import delinearise, parse_tree
from t2t_repro.run import ctranslate2_jobs, jobs
from t2t_repro.serve.export_files import CTRANSLATE2_METADATA, SAVED_MODEL_METADATA
from t2t_repro.serve.served_model import ServingLimits
from t2t_repro.serve.server import ModelServer

LIMITS = ServingLimits(max_batch_size=16, batch_timeout_ms=20, max_body_bytes=4096, max_input_chars=200)
PREDICT = "/v1/models/wmt_ende:predict"


@pytest.fixture(scope="module")
def ct2_base(serving_run, tmp_path_factory):
    """An export directory holding version 1 of a CTranslate2 export of `serving_run` (beam 4, extra length 6)."""
    base = tmp_path_factory.mktemp("ct2_export")
    ctranslate2_jobs.export(str(serving_run), str(base), extra_length=6)
    return base


def _serve(served):
    return ModelServer(served, model_name="wmt_ende", port=0).start()


@pytest.fixture(scope="module")
def server(ct2_base):
    running = _serve(ctranslate2_jobs.served_model(str(ct2_base), LIMITS, threads=1))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def sentences(parallel_text_dir):
    lines = (parallel_text_dir / "train.en").read_text(encoding="utf-8").splitlines()
    return list(dict.fromkeys(lines))[:32]


def _request(server, body, path=PREDICT, connection=None):
    own = connection is None
    connection = connection or http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    try:
        connection.request("POST" if body is not None else "GET", path,
                           body=json.dumps(body).encode("utf-8") if body is not None else None)
        response = connection.getresponse()
        return response.status, json.loads(response.read().decode("utf-8"))
    finally:
        if own:
            connection.close()


def test_status_and_metadata_as_with_a_saved_model(server):
    assert _request(server, None, "/v1/models/wmt_ende")[1]["model_version_status"][0]["version"] == "1"
    status, metadata = _request(server, None, "/v1/models/wmt_ende/metadata")
    definitions = metadata["metadata"]["signature_def"]["signature_def"]
    assert status == 200 and sorted(definitions) == ["ids", "serving_default"]
    assert definitions["serving_default"]["inputs"]["inputs"]["dtype"] == "DT_STRING"
    assert definitions["ids"]["inputs"]["inputs"]["dtype"] == "DT_INT32"
    assert set(definitions["serving_default"]["outputs"]) == {"outputs", "raw_outputs", "scores"}


def test_concurrent_requests_are_batched_and_answered_as_the_decoder_answers(server, ct2_base, sentences,
                                                                              exported_model):
    decoder = ctranslate2_jobs.export_decoder(str(ct2_base))
    from t2t_repro.decode.decode_text import search_texts_nbest

    best = search_texts_nbest(sentences, decoder.search, decoder.vocabularies, decoder.settings, progress=False)
    direct = {s: (h[0].text, h[0].score) for s, h in zip(sentences, best)}
    requests = [[sentences[(5 * i + k) % len(sentences)] for k in range(1 + i % 3)] for i in range(96)]
    failures, lock = [], threading.Lock()

    def client(indices):
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
        for i in indices:
            status, answer = _request(server, {"instances": requests[i]}, connection=connection)
            got = [(p["outputs"], p["scores"]) for p in answer.get("predictions", [])]
            expected = [direct[s] for s in requests[i]]
            if status != 200 or [g[0] for g in got] != [e[0] for e in expected] or any(
                    abs(g[1] - e[1]) > 1e-4 for g, e in zip(got, expected)):
                with lock:
                    failures.append((i, status, answer))
        connection.close()

    threads = [threading.Thread(target=client, args=(range(t, 96, 16),)) for t in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert failures == []
    stats = server.served_model.batching_stats()["serving_default"]
    assert stats["batches"] < stats["requests"] and stats["largest_batch_requests"] > 1
    # The SavedModel of the same run answers the same (beam 4 of a barely trained model: no search differs).
    tf_server = _serve(jobs.served_model(str(exported_model.parent), LIMITS))
    try:
        status, answer = _request(tf_server, {"instances": sentences[:8]})
    finally:
        tf_server.stop()
    assert status == 200 and [p["outputs"] for p in answer["predictions"]] == [direct[s][0] for s in sentences[:8]]


def test_ids_signature_and_columnar_form(server, sentences):
    search = server.served_model.backend.model.search(server.served_model.backend.settings)
    expected = [hypotheses[0] for hypotheses in search([[5, 6, 7, 1], [8, 1]])]
    status, answer = _request(server, {"signature_name": "ids", "instances": [[5, 6, 7, 1], [8, 1, 0, 0], [0]]})
    assert status == 200
    assert [(p["outputs"], p["scores"]) for p in answer["predictions"][:2]] == [
        (ids, pytest.approx(score, abs=1e-5)) for ids, score in expected]
    assert answer["predictions"][2] == {"outputs": [], "scores": 0.0}  # PAD only: an empty source
    status, answer = _request(server, {"inputs": {"inputs": sentences[:2]}})
    assert status == 200 and set(answer["outputs"]) == {"outputs", "raw_outputs", "scores"}
    assert answer["outputs"]["raw_outputs"] == answer["outputs"]["outputs"]  # translation: final as decoded


@pytest.mark.parametrize("body, message", [
    ({"instances": ["  "]}, "example 0 is empty"),
    ({"instances": [" ".join(["the big red car sees the small old tree"] * 4)]}, "at most 32"),
    ({"signature_name": "ids", "instances": [[10 ** 6]]}, "outside the vocabulary"),
    ({"signature_name": "nope", "instances": ["a"]}, "signature 'nope' not found"),
    ({"instances": ["a"] * 17}, "at most 16"),
])
def test_bad_requests_get_the_same_errors(server, sentences, body, message):
    status, answer = _request(server, body)
    assert status == 400 and message in answer["error"]
    assert _request(server, {"instances": [sentences[0]]})[0] == 200


@pytest.mark.parametrize("engine", ["tensorflow", "ctranslate2"])
def test_an_empty_source_in_a_batch_gives_an_empty_output_and_the_others_are_translated(
        engine, server, exported_model, sentences):
    """As serving.md and the decoder say: "" (score 0.0) for an empty source, the request is not refused."""
    running = server if engine == "ctranslate2" else _serve(jobs.served_model(str(exported_model.parent), LIMITS))
    try:
        _, alone = _request(running, {"instances": sentences[:2]})
        status, answer = _request(running, {"instances": [sentences[0], "", " \t ", sentences[1]]})
    finally:
        if running is not server:
            running.stop()
    assert status == 200, answer
    expected = [p["outputs"] for p in alone["predictions"]]
    assert [p["outputs"] for p in answer["predictions"]] == [expected[0], "", "", expected[1]]
    assert [p["scores"] for p in answer["predictions"]][1:3] == [0.0, 0.0]
    assert all(p["raw_outputs"] == p["outputs"] for p in answer["predictions"])


def _as_parsing_export(version_dir, metadata_file, target):
    """A copy of an export version whose metadata names a parsing problem (its model still translates: what
    matters here is that whatever it decodes is served as a tree on the source words)."""
    shutil.copytree(version_dir, target / "1")
    path = target / "1" / metadata_file
    path.write_text(json.dumps(dict(json.loads(path.read_text()), problem="toy_parsing")))
    return target


@pytest.mark.parametrize("engine", ["tensorflow", "ctranslate2"])
def test_a_parsing_model_answers_trees_on_the_source_words_and_its_linearised_output(
        engine, exported_model, ct2_base, sentences, tmp_path):
    if engine == "tensorflow":
        served = jobs.served_model(str(_as_parsing_export(exported_model, SAVED_MODEL_METADATA, tmp_path)), LIMITS)
    else:
        served = ctranslate2_jobs.served_model(
            str(_as_parsing_export(ct2_base / "1", CTRANSLATE2_METADATA, tmp_path)), LIMITS)
    running = _serve(served)
    try:
        texts = [" " + sentences[0] + " ", sentences[1], "John runs , Mary sleeps ."]
        status, answer = _request(running, {"instances": texts})
    finally:
        running.stop()
    assert status == 200
    for text, prediction in zip(texts, answer["predictions"]):
        assert set(prediction) == {"outputs", "raw_outputs", "scores"}
        tree = prediction["outputs"]
        assert tree.startswith("(") and parse_tree(tree).words() == text.split()
        assert tree == delinearise(prediction["raw_outputs"], text.split()).to_ptb()
