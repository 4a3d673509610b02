"""The latency the page of t2t-repro-serve waits on (`--suite serve --page`): one sentence of Multi30K's mean
length through the page's request, `POST /v1/models/<name>:predict` with one instance, as the page sends it.

Three servers of one run are up at once and answered in turn, request by request: the SavedModel export under
the TensorFlow engine asked for `serving_default` (the page without the heat map) and for `attention` (with
it), and its CTranslate2 export (--quantization, int8 by default). The sentence is the dev sentence whose
length in words is nearest --sentence_words (default 12, the mean of Multi30K's English val side).

- page_latency_p50_ms, page_latency_p99_ms: serving_default on the TensorFlow engine, and on CTranslate2 with
  the TensorFlow figure as its peer;
- page_attention_latency_p50_ms, page_attention_latency_p99_ms: the attention signature (the translation, its
  pieces and every layer's and head's encoder-decoder weights) with serving_default as its peer: the ratio is
  what the heat map's extra output costs. serving_default's graph holds none of it, so the page pays it only
  when the heat map is shown;
- page_attention_answer_bytes: the size of that answer (JSON) against serving_default's.
"""

import json
import os
import statistics
import tempfile
import time

from benchmarks import measurement, progress

MULTI30K_MEAN_WORDS = 12  # English side of Multi30K val: 12.0 words a sentence


def add_arguments(parser):
    parser.add_argument("--page", action="store_true", help="measure the page's requests instead (one "
                        "sentence; TensorFlow with and without the attention output, CTranslate2)")
    parser.add_argument("--sentence_words", type=int, default=MULTI30K_MEAN_WORDS,
                        help=f"--page: the sentence's length in words (default {MULTI30K_MEAN_WORDS})")


def _request(connection, signature, sentence):
    """(seconds, answer bytes, outputs) of one page request."""
    body = json.dumps({"signature_name": signature, "instances": [sentence]})
    start = time.perf_counter()
    connection.request("POST", "/v1/models/bench:predict", body=body, headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    data = response.read()
    seconds = time.perf_counter() - start
    if response.status != 200:
        raise RuntimeError(f"the server answered {response.status}: {json.loads(data).get('error')}")
    return seconds, len(data), json.loads(data)["predictions"][0]["outputs"]


def _percentiles(latencies):
    p99 = statistics.quantiles(latencies, n=100)[98] if len(latencies) > 1 else latencies[0]
    return 1000 * statistics.median(latencies), 1000 * p99


def run(args, serve):
    """The page's measurements; `serve` is the serve suite's module (its server, export and training helpers)."""
    warmup = serve.DEFAULT_WARMUP if args.warmup is None else args.warmup
    repeats = serve.DEFAULT_REPEATS if args.repeats is None else args.repeats
    with tempfile.TemporaryDirectory(prefix="t2t-repro-page-bench-") as work_dir:
        output_dir = args.output_dir or serve._train(args, work_dir)
        problem, sentences = serve._dev_sentences(output_dir)
        sentence = min(sentences, key=lambda s: (abs(len(s.split()) - args.sentence_words), s))
        extra_length = args.extra_length if args.extra_length is not None else (None if args.output_dir else 0)
        length_flag = [] if extra_length is None else [f"--extra_length={extra_length}"]
        progress(f"exporting {output_dir} as a SavedModel and as CTranslate2 {args.quantization}")
        exported = serve._export(output_dir, work_dir, "tensorflow", length_flag)
        ct2 = serve._export(output_dir, work_dir, "ctranslate2", length_flag,
                            ["--format=ctranslate2", f"--quantization={args.quantization}"])
        batching = (args.max_batch_size, args.batch_timeout_ms)  # the server's own: a lone request waits for company
        servers = {"tensorflow": serve._Server(os.path.join(work_dir, "tensorflow"), *batching),
                   "ctranslate2": serve._Server(os.path.join(work_dir, "ctranslate2"), *batching, "ctranslate2")}
        kinds = (("tensorflow", "serving_default"), ("tensorflow", "attention"), ("ctranslate2", "serving_default"))
        connections = {name: server.connect() for name, server in servers.items()}
        latencies, sizes, outputs = {kind: [] for kind in kinds}, {}, {}
        try:
            for i in range(warmup + repeats):
                for engine, signature in kinds:
                    seconds, size, output = _request(connections[engine], signature, sentence)
                    if i >= warmup:
                        latencies[(engine, signature)].append(seconds)
                    sizes[(engine, signature)], outputs[(engine, signature)] = size, output
        finally:
            for connection in connections.values():
                connection.close()
            for server in servers.values():
                server.stop()
    config = {"device": "CPU", "problem": problem, "hparams": args.hparams, "step": exported["step"],
              **exported["decode"], "sentence_words": len(sentence.split()),
              "output_words": len(outputs[kinds[0]].split()), "requests": repeats, "warmup": warmup,
              "max_batch_size": args.max_batch_size, "batch_timeout_ms": args.batch_timeout_ms,
              "output_dir": args.output_dir or f"temporary, {args.train_steps} training step(s)"}
    plain = _percentiles(latencies[kinds[0]])
    attention = _percentiles(latencies[kinds[1]])
    ctranslate2 = _percentiles(latencies[kinds[2]])
    tf_config = dict(config, engine="tensorflow", signature="serving_default")
    ct2_config = dict(config, engine="ctranslate2", quantization=ct2["quantization"], signature="serving_default")
    attention_config = dict(config, engine="tensorflow", signature="attention")
    results = []
    for index, suffix in enumerate(("p50_ms", "p99_ms")):
        results += [
            measurement(f"page_latency_{suffix}", plain[index], "ms", tf_config),
            measurement(f"page_latency_{suffix}", ctranslate2[index], "ms", ct2_config, "tensorflow", plain[index]),
            measurement(f"page_attention_latency_{suffix}", attention[index], "ms", attention_config,
                        "serving_default", plain[index]),
        ]
    results.append(measurement("page_attention_answer_bytes", sizes[kinds[1]], "bytes", attention_config,
                               "serving_default", sizes[kinds[0]]))
    return results
