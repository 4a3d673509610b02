"""Serving speed of t2t-repro-serve on CPU: single-sentence latency and throughput under concurrent clients.

A trained run is exported with t2t-repro-exporter and served by t2t-repro-serve in its own process on
127.0.0.1 and a free port, with the GPU hidden; the clients are threads of this process using keep-alive
HTTP connections. The run is --output_dir if given (exported with the problem's beam search settings), else
a run of --train_steps (default 1) steps of --hparams on --problem (transformer_tiny, toy_ende) trained into
a temporary directory. Such a barely trained model almost never emits EOS, so each output runs to its maximum
length, source length + --extra_length; its default 0 for the temporary run gives outputs as long as their
sources, roughly as real translations are, with beam 4 and alpha 0.6 (section 6.1).

- serve_latency_p50_ms, serve_latency_p99_ms: one client sending one dev sentence per request, one request at
  a time (--repeats requests after --warmup untimed ones);
- serve_sentences_per_s: --clients clients sending --concurrent_requests one-sentence requests in all, as
  fast as they are answered; the server batches them (up to --max_batch_size, waiting --batch_timeout_ms);
- serve_latency_under_load_p50_ms: the median request latency during that run.

Beam search time grows with the output length, so the config reports the mean output length in words
(SentencePiece pieces joined by the detokenizer) beside the mean source length. With --peer unbatched, the
same is measured against a server that runs every request alone (--max_batch_size=1), and the ratio shows
what batching gains.

With --engine ctranslate2 the run is exported as a CTranslate2 model (--quantization, int8 by default) and
served with t2t-repro-serve --engine=ctranslate2; --peer tensorflow serves the SavedModel export of the same
run beside it, both servers up at once: the single-request latencies alternate between the two, request by
request, and the concurrent runs alternate too (--rounds each, the median reported).

    python tools/benchmark.py --suite serve [--output_dir O] [--peer unbatched] [--json]
    python tools/benchmark.py --suite serve --engine ctranslate2 --quantization int8 --peer tensorflow --json
    python tools/benchmark.py --suite serve --page --json     # the page's requests (tools/benchmarks/serve_page.py)
"""

import http.client
import json
import os
import selectors
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from benchmarks import check_peer, console_script, measurement, progress, serve_page
from t2t_repro.errors import UserError

PEERS = ("unbatched", "tensorflow")
DEFAULT_PROBLEM = "toy_ende"
DEFAULT_HPARAMS = "transformer_tiny"
DEFAULT_TRAIN_STEPS = 1
DEFAULT_WARMUP = 5
DEFAULT_REPEATS = 50
_SENTENCES = 200  # distinct dev sentences the requests cycle through
_START_TIMEOUT_S = 300
_REQUEST_TIMEOUT_S = 120
_CPU_ONLY = {"CUDA_VISIBLE_DEVICES": "-1", "TF_CPP_MIN_LOG_LEVEL": "2"}


def add_arguments(parser):
    parser.set_defaults(hparams=DEFAULT_HPARAMS)
    parser.add_argument("--output_dir", help="a trained run to export and serve (default: train one in a temporary "
                        "directory)")
    parser.add_argument("--train_steps", type=int, default=DEFAULT_TRAIN_STEPS,
                        help=f"steps of the temporary run (default {DEFAULT_TRAIN_STEPS})")
    parser.add_argument("--extra_length", type=int, help="beam search's max output length = source length + this "
                        "(default: 0 for the temporary run, the problem's for --output_dir)")
    parser.add_argument("--tmp_dir", help="datagen scratch directory for the temporary run's problem")
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients (default 16)")
    parser.add_argument("--concurrent_requests", type=int, default=160,
                        help="one-sentence requests the concurrent clients send in all (default 160)")
    parser.add_argument("--max_batch_size", type=int, default=32, help="the server's batch limit (default 32)")
    parser.add_argument("--batch_timeout_ms", type=float, default=5.0,
                        help="how long the server waits for a batch to fill (default 5)")
    parser.add_argument("--engine", choices=("tensorflow", "ctranslate2"), default="tensorflow",
                        help="the server's engine (default tensorflow); ctranslate2 compares with --peer tensorflow")
    parser.add_argument("--quantization", default="int8", help="--engine ctranslate2: the export's weight type "
                        "(default int8)")
    parser.add_argument("--rounds", type=int, default=1, help="concurrent runs per server, in turns (median)")
    serve_page.add_arguments(parser)


def _cli(module, *flags, env=None):
    """Runs a t2t-repro console script; UserError with its last stderr line if it fails."""
    completed = subprocess.run([console_script(f"t2t-repro-{module}"), *flags], capture_output=True,
                               text=True, env=dict(os.environ, **(env or {})))
    if completed.returncode != 0:
        lines = completed.stderr.strip().splitlines() or ["(no output)"]
        raise UserError(f"t2t-repro-{module} failed: {lines[-1]}")
    return completed.stdout


def _train(args, work_dir):
    problem = args.problem or DEFAULT_PROBLEM
    output_dir = os.path.join(work_dir, "run")
    progress(f"training {args.hparams} on {problem} for {args.train_steps} steps in {output_dir} (data generated "
             "first if missing)")
    _cli("trainer", f"--problem={problem}", f"--hparams={args.hparams}",
         f"--hparams_overrides={args.hparams_overrides}", f"--train_steps={args.train_steps}",
         f"--data_dir={args.data_dir or os.path.join(work_dir, 'data')}",
         f"--tmp_dir={args.tmp_dir or os.path.join(work_dir, 'raw')}", f"--output_dir={output_dir}",
         "--eval_decode_sentences=0", f"--eval_steps={args.train_steps}", "--skip_average", "--skip_test")
    return output_dir


def _dev_sentences(output_dir):
    from t2t_repro import catalog
    from t2t_repro.run.layout import RunLayout

    info = RunLayout(output_dir).load_info()
    sources = [source for source, _ in catalog.get_problem(info.problem).text_pairs("dev", info.data_dir)]
    sentences = [source for source in dict.fromkeys(sources) if source.strip()][:_SENTENCES]
    if not sentences:
        raise UserError(f"the dev split of {info.problem} in {info.data_dir} holds no sentence")
    return info.problem, sentences


class _Server:
    """t2t-repro-serve in its own process on 127.0.0.1 and a free port, CPU only."""

    def __init__(self, export_dir, max_batch_size, batch_timeout_ms, engine="tensorflow"):
        self.process = subprocess.Popen(
            [console_script("t2t-repro-serve"), f"--model_dir={export_dir}", "--port=0", f"--engine={engine}",
             "--model_name=bench", f"--max_batch_size={max_batch_size}", f"--batch_timeout_ms={batch_timeout_ms}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ, **_CPU_ONLY),
        )
        selector = selectors.DefaultSelector()
        selector.register(self.process.stdout, selectors.EVENT_READ)
        deadline, line = time.monotonic() + _START_TIMEOUT_S, ""
        while not line and time.monotonic() < deadline and self.process.poll() is None:
            if selector.select(timeout=1):
                line = self.process.stdout.readline()
        if " at http://127.0.0.1:" not in line:
            self.stop()
            raise UserError(f"t2t-repro-serve did not start: {self.process.stderr.read().strip()[-500:]}")
        self.port = int(line.rsplit(" at http://127.0.0.1:", 1)[1].split("/", 1)[0])

    def connect(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=_REQUEST_TIMEOUT_S)

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _translate(connection, sentences):
    """(seconds, outputs) of one predict request."""
    body = json.dumps({"instances": sentences})
    start = time.perf_counter()
    connection.request("POST", "/v1/models/bench:predict", body=body, headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    answer = json.loads(response.read())
    seconds = time.perf_counter() - start
    if response.status != 200:
        raise RuntimeError(f"the server answered {response.status}: {answer.get('error')}")
    return seconds, [prediction["outputs"] for prediction in answer["predictions"]]


def _sequential_latencies(server, sentences, warmup, repeats):
    """(per-request seconds, outputs) of `repeats` one-sentence requests sent one after the other."""
    connection = server.connect()
    try:
        for i in range(warmup):
            _translate(connection, [sentences[i % len(sentences)]])
        timed = [_translate(connection, [sentences[i % len(sentences)]]) for i in range(repeats)]
        return [seconds for seconds, _ in timed], [outputs[0] for _, outputs in timed]
    finally:
        connection.close()


def _concurrent_run(server, sentences, clients, requests):
    """(wall seconds, per-request latencies) of `requests` one-sentence requests from `clients` threads."""
    latencies, errors, lock = [], [], threading.Lock()
    start_together = threading.Barrier(clients + 1)

    def client(indices):
        connection = server.connect()
        try:
            start_together.wait()
            for i in indices:
                seconds, _ = _translate(connection, [sentences[i % len(sentences)]])
                with lock:
                    latencies.append(seconds)
        except Exception as error:  # noqa: BLE001 - reported after the run
            with lock:
                errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=client, args=(range(c, requests, clients),)) for c in range(clients)]
    for thread in threads:
        thread.start()
    start_together.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - start
    if errors:
        raise RuntimeError(f"{len(errors)} client(s) failed, first: {errors[0]}")
    return wall, latencies


def _measure(servers, args, sentences, warmup, repeats):
    """{server name: figures} of servers that are all up: single-request latencies in alternation, request by
    request, then the concurrent runs in turns (args.rounds each; the median throughput and latency)."""
    sequential = {name: [] for name in servers}
    outputs = {name: [] for name in servers}
    for name, server in servers.items():
        _sequential_latencies(server, sentences, warmup, 0)
    for i in range(repeats):
        for name, server in servers.items():
            seconds, output = _sequential_latencies(server, sentences[i % len(sentences):], 0, 1)
            sequential[name] += seconds
            outputs[name] += output
    loaded = {name: [] for name in servers}
    for round_number in range(args.rounds):
        for name, server in servers.items():
            progress(f"{name}: {args.clients} clients, {args.concurrent_requests} requests (round {round_number + 1})")
            loaded[name].append(_concurrent_run(server, sentences, args.clients, args.concurrent_requests))
    figures = {}
    for name in servers:
        latencies = sequential[name]
        percentile_99 = statistics.quantiles(latencies, n=100)[98] if len(latencies) > 1 else latencies[0]
        walls = [wall for wall, _ in loaded[name]]
        figures[name] = {
            "serve_latency_p50_ms": 1000 * statistics.median(latencies),
            "serve_latency_p99_ms": 1000 * percentile_99,
            "serve_sentences_per_s": args.concurrent_requests / statistics.median(walls),
            "serve_latency_under_load_p50_ms": 1000 * statistics.median(
                statistics.median(under_load) for _, under_load in loaded[name]),
            "mean_output_words": statistics.mean(len(output.split()) for output in outputs[name]),
        }
    return figures


def _export(output_dir, work_dir, name, length_flag, format_flags=()):
    return json.loads(_cli("exporter", f"--output_dir={output_dir}", f"--export_dir={os.path.join(work_dir, name)}",
                           *length_flag, *format_flags, env=_CPU_ONLY).strip().splitlines()[-1])


def _start_servers(args, work_dir):
    """{name: server}: the measured one, and the peer's when there is one."""
    engine = args.engine
    servers = {engine: _Server(os.path.join(work_dir, engine), args.max_batch_size, args.batch_timeout_ms, engine)}
    if args.peer == "unbatched":
        servers["unbatched"] = _Server(os.path.join(work_dir, engine), 1, args.batch_timeout_ms, engine)
    elif args.peer == "tensorflow":
        servers["tensorflow_peer"] = _Server(os.path.join(work_dir, "tensorflow"), args.max_batch_size,
                                             args.batch_timeout_ms)
    return servers


def run(args):
    check_peer(args, PEERS)
    for name in ("clients", "concurrent_requests", "max_batch_size", "train_steps", "rounds"):
        if getattr(args, name) < 1:
            raise UserError(f"--{name}={getattr(args, name)}: must be at least 1")
    if args.page:
        if args.peer is not None:
            raise UserError("--page measures its own comparisons: give no --peer")
        return serve_page.run(args, sys.modules[__name__])
    warmup = DEFAULT_WARMUP if args.warmup is None else args.warmup
    repeats = DEFAULT_REPEATS if args.repeats is None else args.repeats
    if args.engine == "ctranslate2" and args.peer == "unbatched" or args.peer == "tensorflow" and (
            args.engine != "ctranslate2"):
        raise UserError("--peer tensorflow goes with --engine ctranslate2, --peer unbatched with --engine tensorflow")
    with tempfile.TemporaryDirectory(prefix="t2t-repro-serve-bench-") as work_dir:
        output_dir = args.output_dir or _train(args, work_dir)
        problem, sentences = _dev_sentences(output_dir)
        progress(f"exporting {output_dir}")
        extra_length = args.extra_length if args.extra_length is not None else (None if args.output_dir else 0)
        length_flag = [] if extra_length is None else [f"--extra_length={extra_length}"]
        if args.engine == "tensorflow" or args.peer == "tensorflow":
            exported = _export(output_dir, work_dir, "tensorflow", length_flag)
        if args.engine == "ctranslate2":
            exported = _export(output_dir, work_dir, "ctranslate2", length_flag,
                               ["--format=ctranslate2", f"--quantization={args.quantization}"])
        servers = _start_servers(args, work_dir)
        try:
            figures = _measure(servers, args, sentences, warmup, repeats)
        finally:
            for server in servers.values():
                server.stop()
    values = figures[args.engine]
    peer_values = figures.get("unbatched") or figures.get("tensorflow_peer")
    config = {
        "device": "CPU", "problem": problem, "engine": args.engine,
        **({"quantization": exported["quantization"]} if args.engine == "ctranslate2" else {}),
        "output_dir": args.output_dir or f"temporary, {args.train_steps} training step(s)",
        "step": exported["step"], **exported["decode"], "max_batch_size": args.max_batch_size,
        "batch_timeout_ms": args.batch_timeout_ms, "mean_output_words": round(values["mean_output_words"], 1),
        "mean_source_words": round(statistics.mean(len(s.split()) for s in sentences), 1),
    }
    sequential_config = dict(config, requests=repeats, warmup=warmup, sentences_per_request=1)
    load_config = dict(config, clients=args.clients, requests=args.concurrent_requests, sentences_per_request=1)
    results = []
    for metric, unit, metric_config in (
        ("serve_latency_p50_ms", "ms", sequential_config),
        ("serve_latency_p99_ms", "ms", sequential_config),
        ("serve_sentences_per_s", "sentences/s", load_config),
        ("serve_latency_under_load_p50_ms", "ms", load_config),
    ):
        peer = {"peer": args.peer, "peer_value": peer_values[metric]} if peer_values else {}
        results.append(measurement(metric, values[metric], unit, metric_config, **peer))
    return results
