"""The API behind t2t-repro-serve's page: the attention signature (the visualizer's weights for the served
translation), the models' cards, the page's files, several models on one server, and their errors."""

import http.client
import json

import numpy as np
import pytest

from t2t_repro.cli import serve
from t2t_repro.cli.common import run_main
from t2t_repro.model.transformer import ENCODER_DECODER_ATTENTION
from t2t_repro.run import jobs
from t2t_repro.serve.served_model import ServingLimits
from t2t_repro.serve.server import ModelServer

LIMITS = ServingLimits(max_batch_size=8, batch_timeout_ms=5, max_input_chars=300)
SENTENCES = ["the cat sees the dog", "a big red car finds the old tree"]


@pytest.fixture(scope="module")
def server(exported_model):
    """The exported model served twice, under two names (a model picker's case)."""
    first = jobs.served_model(str(exported_model.parent), LIMITS)
    second = jobs.served_model(str(exported_model.parent), LIMITS)
    running = ModelServer({"ende": first, "again": second}, port=0).start()
    yield running
    running.stop()


def _get(server, path, body=None):
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    try:
        connection.request("POST" if body is not None else "GET", path,
                           body=json.dumps(body).encode("utf-8") if body is not None else None)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def _predict(server, body, name="ende"):
    status, _, data = _get(server, f"/v1/models/{name}:predict", body)
    return status, json.loads(data)


def test_the_attention_signature_answers_the_visualizers_weights_for_the_served_translation(server, serving_run):
    status, answer = _predict(server, {"signature_name": "attention", "instances": SENTENCES + ["  "]})
    assert status == 200
    _, plain = _predict(server, {"instances": SENTENCES})
    for sentence, prediction, expected in zip(SENTENCES, answer["predictions"], plain["predictions"]):
        assert (prediction["outputs"], prediction["scores"]) == (expected["outputs"], expected["scores"])
        maps = jobs.attention_maps(str(serving_run), sentence, extra_length=6)  # the export's decode settings
        assert maps.translation == prediction["outputs"]
        assert prediction["source_pieces"] == maps.source_tokens
        assert prediction["target_pieces"] == maps.output_tokens
        weights = np.array(prediction["attention"])  # [layers, heads, target, source], this sentence's size
        expected_weights = np.stack(maps.weights[ENCODER_DECODER_ATTENTION])
        assert weights.shape == expected_weights.shape
        np.testing.assert_allclose(weights, expected_weights, atol=2e-5)
    empty = answer["predictions"][2]  # an empty source among others: nothing decoded, nothing to show
    assert (empty["outputs"], empty["scores"], empty["source_pieces"], empty["target_pieces"]) == ("", 0.0, [], [])


def test_cards_describe_each_served_model_from_its_export(server):
    status, headers, data = _get(server, "/page/models")
    assert status == 200 and headers["Content-Type"] == "application/json"
    cards = json.loads(data)["models"]
    assert [card["name"] for card in cards] == ["ende", "again"]
    card = cards[0]
    assert (card["problem"], card["hparams_set"], card["step"], card["engine"]) == (
        "wmt_ende", "transformer_tiny", 1, "tensorflow")
    assert card["max_input_chars"] == 300 and card["max_input_tokens"] == 32
    assert card["decode"]["beam_size"] == 4 and card["nbest"] == 1
    assert card["attention"] is True and card["attention_note"] is None


def test_the_page_and_its_files_are_served_with_a_policy_that_allows_this_server_only(server):
    status, headers, data = _get(server, "/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert "default-src 'self'" in headers["Content-Security-Policy"]
    html = data.decode("utf-8")
    assert '<script src="/static/page.js"' in html and "http://" not in html and "https://" not in html
    for name, kind in (("page.js", "text/javascript"), ("page.css", "text/css")):
        status, headers, data = _get(server, f"/static/{name}")
        assert status == 200 and headers["Content-Type"].startswith(kind) and data
        assert b"http://" not in data.replace(b"http://www.w3.org/2000/svg", b"")  # nothing fetched from outside
    for path in ("/static/../served_model.py", "/static/nothing.js", "/static/%2e%2e/page.py"):
        status, _, data = _get(server, path)
        assert status == 404 and "no such path" in json.loads(data)["error"]


@pytest.mark.parametrize("name, body, status, message", [
    ("nobody", {"instances": ["a"]}, 404, "Latest(nobody)"),
    ("again", {"instances": ["x" * 301]}, 400, "301 characters: at most 300"),
    ("again", {"instances": [" "]}, 400, "example 0 is empty"),
    ("again", {"instances": ["", " \t"]}, 400, "all 2 examples are empty"),
    ("again", {"signature_name": "attention", "instances": [7]}, 400, "expected a string"),
])
def test_what_the_page_can_send_wrong_gets_a_4xx_line_and_the_server_goes_on(server, name, body, status, message):
    got, answer = _predict(server, body, name)
    assert got == status and set(answer) == {"error"} and message in answer["error"]
    assert _predict(server, {"instances": ["the cat"]}, "again")[0] == 200


@pytest.mark.parametrize("flags, message", [
    (["--model_dir={model}", "--model_dir={model}"], "2 --model_dir and 0 --model_name"),
    (["--model_dir={model}", "--model_name=a", "--model_dir={model}", "--model_name=a"],
     "--model_name=a is given twice"),
    (["--model_dir={model}", "--engine=tensorflow", "--engine=tensorflow"], "2 --engine for 1 models"),
    (["--model_dir={model}", "--threads=2"], "--threads=2 applies to --engine=ctranslate2 only"),
])
def test_serving_several_models_refuses_flags_that_do_not_pair_in_one_line(exported_model, capsys, flags, message):
    flags = [flag.format(model=exported_model.parent) for flag in flags]
    assert run_main(serve._main, flags) == 2
    stderr = capsys.readouterr().err
    assert stderr.strip().count("\n") == 0 and message in stderr, stderr
