"""The REST server: TensorFlow Serving's API, batching of concurrent requests with answers equal to the
model's own, and a clear 4xx (or 500) for every bad request without ever going down."""

import base64
import http.client
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
import tensorflow as tf

from t2t_repro.cli import serve
from t2t_repro.cli.common import run_main
from t2t_repro.run import jobs
from t2t_repro.serve.batcher import BatchingQueue
from t2t_repro.serve.saved_model_backend import SavedModelBackend
from t2t_repro.serve.served_model import ServingLimits
from t2t_repro.serve.server import ModelServer

LIMITS = ServingLimits(max_batch_size=16, batch_timeout_ms=20, max_body_bytes=4096, max_input_chars=200)


@pytest.fixture(scope="module")
def server(exported_model):
    """A server on 127.0.0.1 and a free port, serving `exported_model` as "wmt_ende"; stopped afterwards."""
    running = ModelServer(jobs.served_model(str(exported_model.parent), LIMITS), model_name="wmt_ende", port=0).start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def sentences(parallel_text_dir):
    lines = (parallel_text_dir / "train.en").read_text(encoding="utf-8").splitlines()
    return list(dict.fromkeys(lines))[:48]


@pytest.fixture(scope="module")
def direct(server, sentences):
    """What the SavedModel itself answers for each sentence: {sentence: (output, score)}."""
    outputs = server.served_model.backend.loaded.signatures["serving_default"](inputs=tf.constant(sentences))
    return {s: (o.decode("utf-8"), float(v)) for s, o, v in
            zip(sentences, outputs["outputs"].numpy(), outputs["scores"].numpy())}


def _request(server, method, path, body=None, headers=None, connection=None):
    """(status, parsed JSON answer) of one request; `body` may be a dict (sent as JSON) or bytes."""
    if isinstance(body, dict):
        body = json.dumps(body).encode("utf-8")
    own = connection is None
    connection = connection or http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, json.loads(response.read().decode("utf-8"))
    finally:
        if own:
            connection.close()


PREDICT = "/v1/models/wmt_ende:predict"


def test_status_and_metadata_as_tensorflow_serving(server):
    assert server.server_address[0] == "127.0.0.1"
    status, answer = _request(server, "GET", "/v1/models/wmt_ende")
    assert status == 200
    assert answer == {"model_version_status": [
        {"version": "1", "state": "AVAILABLE", "status": {"error_code": "OK", "error_message": ""}}]}
    assert _request(server, "GET", "/v1/models/wmt_ende/versions/1")[0] == 200
    status, metadata = _request(server, "GET", "/v1/models/wmt_ende/metadata")
    assert status == 200 and metadata["model_spec"] == {"name": "wmt_ende", "signature_name": "", "version": "1"}
    signature = metadata["metadata"]["signature_def"]["signature_def"]["serving_default"]
    assert signature["inputs"]["inputs"]["dtype"] == "DT_STRING"
    # The problem's output ("outputs"; for translation the decoded text itself) and the decoded text.
    assert set(signature["outputs"]) == {"outputs", "raw_outputs", "scores"}
    assert signature["method_name"] == "tensorflow/serving/predict"


def test_200_concurrent_requests_from_16_clients_all_answered_correctly(server, sentences, direct):
    assert any(output for output, _ in direct.values())  # the model gives real, varied outputs
    requests = [[sentences[(7 * i + k) % len(sentences)] for k in range(1 + i % 3)] for i in range(200)]
    failures, lock = [], threading.Lock()

    def client(indices):
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
        for i in indices:
            status, answer = _request(server, "POST", PREDICT, {"instances": requests[i]}, connection=connection)
            expected = [direct[s] for s in requests[i]]
            got = [(p["outputs"], p["scores"]) if status == 200 else None for p in answer.get("predictions", [])]
            if status != 200 or [g[0] for g in got] != [e[0] for e in expected] or any(
                    abs(g[1] - e[1]) > 1e-4 for g, e in zip(got, expected)):
                with lock:
                    failures.append((i, status, answer, expected))
        connection.close()

    before = server.served_model.batching_stats()["serving_default"]
    threads = [threading.Thread(target=client, args=(range(t, 200, 16),)) for t in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in threads)
    assert failures == []
    stats = server.served_model.batching_stats()["serving_default"]
    assert stats["requests"] - before["requests"] == 200
    assert stats["batches"] - before["batches"] < 200  # concurrent requests shared model calls
    assert stats["largest_batch_requests"] > 1


def test_row_columnar_named_and_base64_forms(server, sentences, direct):
    first, second = sentences[:2]
    status, answer = _request(server, "POST", PREDICT, {"inputs": [first, second]})
    assert status == 200
    assert answer["outputs"]["outputs"] == [direct[first][0], direct[second][0]]
    assert answer["outputs"]["scores"] == pytest.approx([direct[first][1], direct[second][1]], abs=1e-4)
    status, answer = _request(server, "POST", PREDICT, {"inputs": {"inputs": [first]}})
    assert status == 200 and answer["outputs"]["outputs"] == [direct[first][0]]
    encoded = {"b64": base64.b64encode(second.encode("utf-8")).decode("ascii")}
    status, answer = _request(server, "POST", "/v1/models/wmt_ende/versions/1:predict",
                              {"signature_name": "serving_default", "instances": [{"inputs": first}, encoded]})
    assert status == 200 and [p["outputs"] for p in answer["predictions"]] == [direct[first][0], direct[second][0]]


def test_ids_signature_takes_and_returns_token_ids(server):
    ids_signature = server.served_model.backend.loaded.signatures["ids"]
    ids = ids_signature(inputs=tf.constant([[5, 6, 7, 1], [8, 1, 0, 0]], tf.int32))
    expected = [[int(t) for t in row if t != 0] for row in ids["outputs"].numpy()]
    status, answer = _request(server, "POST", PREDICT, {"signature_name": "ids", "instances": [[5, 6, 7, 1], [8, 1]]})
    assert status == 200
    assert [p["outputs"] for p in answer["predictions"]] == expected


def _long_text():
    return " ".join(["the big red car sees the small old tree"] * 4)  # 36 words: over 32 tokens, under 200 chars


@pytest.mark.parametrize("method, path, body, headers, status, message", [
    ("POST", PREDICT, b"{not json", {}, 400, "not valid JSON"),
    ("POST", PREDICT, b"\xff\xfe", {}, 400, "not UTF-8"),
    ("POST", PREDICT, b"[1, 2]", {}, 400, "must be a JSON object"),
    ("POST", PREDICT, {"instances": [3]}, {}, 400, "expected a string, got a number"),
    ("POST", PREDICT, {"instances": [["a"]]}, {}, 400, "expected a string, got a list"),
    ("POST", PREDICT, {"instances": "a"}, {}, 400, "'instances' must be a list"),
    ("POST", PREDICT, {"instances": [{"text": "a"}]}, {}, 400, "expected the input 'inputs' only"),
    ("POST", PREDICT, {"instances": [{"b64": "***"}]}, {}, 400, "base64"),
    ("POST", PREDICT, {"signature_name": "ids", "instances": [["a"]]}, {}, 400, "must be integers"),
    ("POST", PREDICT, {"signature_name": "ids", "instances": [[10 ** 6]]}, {}, 400, "outside the vocabulary"),
    ("POST", PREDICT, {"instances": []}, {}, 400, "no examples"),
    ("POST", PREDICT, {"instances": ["  "]}, {}, 400, "example 0 is empty"),
    ("POST", PREDICT, {"instances": ["", "  "]}, {}, 400, "all 2 examples are empty"),
    ("POST", PREDICT, {}, {}, 400, "exactly one of 'instances'"),
    ("POST", PREDICT, {"instances": ["a"], "inputs": ["a"]}, {}, 400, "exactly one of 'instances'"),
    ("POST", PREDICT, {"instances": ["a"], "extra": 1}, {}, 400, "unknown request field"),
    ("POST", PREDICT, {"signature_name": "nope", "instances": ["a"]}, {}, 400, "signature 'nope' not found"),
    ("POST", PREDICT, {"instances": ["a"] * 17}, {}, 400, "at most 16"),
    ("POST", PREDICT, {"instances": ["x" * 201]}, {}, 400, "201 characters: at most 200"),
    ("POST", PREDICT, {"instances": [_long_text()]}, {}, 400, "at most 32"),
    ("POST", PREDICT, b"x" * 5000, {}, 413, "at most 4096"),
    ("POST", "/v1/models/other:predict", {"instances": ["a"]}, {}, 404, "Latest(other)"),
    ("POST", "/v1/models/wmt_ende/versions/7:predict", {"instances": ["a"]}, {}, 404, "Specific(wmt_ende, 7)"),
    ("GET", "/v1/models/other", None, {}, 404, "Servable not found"),
    ("GET", "/v2/anything", None, {}, 404, "no such path"),
    ("POST", "/v1/models/wmt_ende:explain", {"instances": ["a"]}, {}, 404, "unknown verb"),
    ("POST", "/v1/models/wmt_ende:classify", {"examples": []}, {}, 400, "predict only"),
    ("GET", PREDICT, None, {}, 405, "use POST"),
    ("POST", "/v1/models/wmt_ende", {"instances": ["a"]}, {}, 405, "use GET"),
    ("DELETE", "/v1/models/wmt_ende", None, {}, 405, "not allowed"),
    ("POST", PREDICT, b"[" * 2000 + b"]" * 2000, {}, 400, "nested too deeply"),
    ("POST", PREDICT, b'{"instances": ' + b"[" * 1500 + b"]" * 1500 + b"}", {}, 400, "nested too deeply"),
    ("OPTIONS", "/v1/models/wmt_ende", None, {}, 501, "Unsupported method ('OPTIONS')"),
])
def test_bad_requests_get_a_clear_error_and_the_server_goes_on(server, sentences, direct, method, path, body,
                                                               headers, status, message):
    got_status, answer = _request(server, method, path, body, headers)
    assert got_status == status, answer
    assert set(answer) == {"error"} and message in answer["error"], answer
    status, answer = _request(server, "POST", PREDICT, {"instances": [sentences[0]]})
    assert status == 200 and answer["predictions"][0]["outputs"] == direct[sentences[0]][0]


@pytest.mark.parametrize("request_bytes, status, message", [
    (b"GET /v1/models/wmt_ende extra HTTP/1.1\r\n\r\n", 400, "Bad request syntax"),
    (b"GET /v1/models/wmt_ende HTTP/1.1\r\nX-Long: " + b"x" * 70000 + b"\r\n\r\n", 431, "Line too long"),
    (b"GET /" + b"x" * 70000 + b" HTTP/1.1\r\n\r\n", 414, "Request-URI Too Long"),
])
def test_errors_of_the_http_layer_are_json_too(server, request_bytes, status, message):
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as connection:
        connection.sendall(request_bytes)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.split(b"\r\n")[0].startswith(f"HTTP/1.1 {status} ".encode()), head
    assert b"Content-Type: application/json" in head and b"Connection: close" in head
    error = json.loads(body.decode("utf-8"))
    assert set(error) == {"error"} and message in error["error"], error
    status, answer = _request(server, "GET", "/v1/models/wmt_ende")
    assert status == 200


def test_loading_an_export_prints_no_sentencepiece_log_line(exported_model, capfd):
    capfd.readouterr()
    SavedModelBackend(str(exported_model))
    printed = capfd.readouterr()
    assert "normalizer.cc" not in printed.err and "LOG(INFO)" not in printed.err, printed.err
    assert "normalizer.cc" not in printed.out


def test_missing_content_length_is_refused(server):
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    connection.putrequest("POST", PREDICT)
    connection.endheaders()
    response = connection.getresponse()
    assert response.status == 411 and "Content-Length" in json.loads(response.read())["error"]
    connection.close()


def test_a_failing_batch_answers_500_and_the_next_request_works(server, sentences, direct):
    signature = server.served_model.signatures["serving_default"]
    working = signature.run

    def fails_on_marker(texts):
        if "FAIL" in texts:
            raise tf.errors.InvalidArgumentError(None, None, "simulated kernel failure")
        return working(texts)

    signature.run = fails_on_marker
    try:
        status, answer = _request(server, "POST", PREDICT, {"instances": ["FAIL"]})
        assert status == 500 and "simulated kernel failure" in answer["error"]
        status, answer = _request(server, "POST", PREDICT, {"instances": [sentences[1]]})
        assert status == 200 and answer["predictions"][0]["outputs"] == direct[sentences[1]][0]
    finally:
        signature.run = working


def test_batching_queue_groups_requests_without_splitting_them_and_isolates_failures():
    seen = []

    def run_batch(items):
        seen.append(list(items))
        if "bad" in items:
            raise ValueError("bad item")
        return [item.upper() for item in items]

    queue = BatchingQueue(run_batch, max_batch_size=5, max_wait_seconds=0.2)
    futures = [queue.submit(items) for items in (["a", "b"], ["c", "d"], ["e", "f"])]
    assert [future.result(timeout=10) for future in futures] == [["A", "B"], ["C", "D"], ["E", "F"]]
    assert seen == [["a", "b", "c", "d"], ["e", "f"]]  # ["e", "f"] would overflow the first batch: it waits
    with pytest.raises(ValueError, match="bad item"):
        queue.submit(["bad"]).result(timeout=10)
    assert queue.submit(["g"]).result(timeout=10) == ["G"]  # the queue survives a failed batch
    with pytest.raises(ValueError):
        queue.submit(["x"] * 6)
    queue.close()
    assert queue.stats()["failed_batches"] == 1


def test_serve_cli_starts_answers_and_stops_on_sigterm(exported_model):
    process = subprocess.Popen(
        [sys.executable, "-m", "t2t_repro.cli.serve", f"--model_dir={exported_model.parent}", "--port=0",
         "--model_name=wmt_ende"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
    )
    try:
        selector = selectors.DefaultSelector()
        selector.register(process.stdout, selectors.EVENT_READ)
        deadline, line = time.monotonic() + 180, ""
        while not line and time.monotonic() < deadline and process.poll() is None:
            if selector.select(timeout=1):
                line = process.stdout.readline()
        assert "at http://127.0.0.1:" in line, process.stderr.read() if process.poll() is not None else line
        url = line.split(" at ", 1)[1].strip()
        port = int(url.split(":")[2].split("/")[0])
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        connection.request("GET", "/v1/models/wmt_ende")
        assert connection.getresponse().status == 200
        connection.close()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.parametrize("flags, message", [
    ([], "missing --model_dir"),
    (["--model_dir={missing}"], "does not exist"),
    (["--model_dir={empty}"], "holds no version directory"),
    (["--model_dir={corrupt}"], "cannot load the SavedModel"),
    (["--model_dir={corrupt}/3/saved_model.pb"], "is a file, not an export directory"),
    (["--model_dir={model}", "--max_batch_size=0"], "--max_batch_size=0"),
])
def test_serve_cli_errors_are_one_line(exported_model, tmp_path, capsys, flags, message):
    (tmp_path / "empty").mkdir()
    (tmp_path / "corrupt" / "3").mkdir(parents=True)
    (tmp_path / "corrupt" / "3" / "saved_model.pb").write_bytes(b"not a protobuf")
    flags = [flag.format(missing=tmp_path / "nothing", empty=tmp_path / "empty", corrupt=tmp_path / "corrupt",
                         model=exported_model.parent) for flag in flags]
    assert run_main(serve._main, flags) == 2
    stderr = capsys.readouterr().err
    assert stderr.strip().count("\n") == 0 and message in stderr, stderr


def test_serve_cli_refuses_a_port_in_use(exported_model, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert run_main(serve._main, [f"--model_dir={exported_model.parent}", f"--port={port}"]) == 2
    stderr = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1:{port}" in stderr and stderr.strip().count("\n") == 0, stderr


def test_benchmark_serve_suite_compares_the_engines_latency_and_throughput(serving_run):
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    completed = subprocess.run(
        [sys.executable, os.path.join(repo, "tools", "benchmark.py"), "--suite=serve", f"--output_dir={serving_run}",
         "--extra_length=2", "--warmup=1", "--repeats=3", "--clients=4", "--concurrent_requests=8",
         "--engine=ctranslate2", "--quantization=int8", "--peer=tensorflow", "--json"],
        capture_output=True, text=True, timeout=600, cwd=repo, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
    )
    assert completed.returncode == 0, completed.stderr
    lines = {line["metric"]: line for line in map(json.loads, completed.stdout.splitlines())}
    assert set(lines) == {"serve_latency_p50_ms", "serve_latency_p99_ms", "serve_sentences_per_s",
                          "serve_latency_under_load_p50_ms"}
    assert all(line["suite"] == "serve" and line["value"] > 0 for line in lines.values())
    assert lines["serve_latency_p99_ms"]["value"] >= lines["serve_latency_p50_ms"]["value"]
    assert lines["serve_sentences_per_s"]["config"]["clients"] == 4
    assert lines["serve_latency_p50_ms"]["config"]["extra_length"] == 2
    # The CTranslate2 server measured against the SavedModel's, both serving the same run.
    config = lines["serve_sentences_per_s"]["config"]
    assert (config["engine"], config["quantization"]) == ("ctranslate2", "int8")
    assert all(line["peer"] == "tensorflow" and line["peer_value"] > 0 for line in lines.values())
    assert lines["serve_sentences_per_s"]["ratio"] == pytest.approx(
        lines["serve_sentences_per_s"]["value"] / lines["serve_sentences_per_s"]["peer_value"])
