"""Data pipeline measurements: padding efficiency of token-budget batching, datagen throughput and memory.

    python tools/benchmark.py --suite data [--problem toy_ende] [--hparams transformer_tiny] [--data_dir D] [--json]

- padding_efficiency: real tokens / padded positions, both sides, over the train split batched as training
  batches it (`t2t_repro.data.batching.token_batches` at the hparams set's batch_tokens and max_length,
  shuffled with seed 1), over at most --max_batches batches. Target: at least 0.85 at batch_tokens=2048.
- datagen_sentences_per_s: sentence pairs (the paper's "sentences") read, encoded and written per second by
  `generate_data`, vocabulary training included; the raw data is fetched or made beforehand, untimed.
- datagen_peak_rss: the process's peak resident memory after datagen (target for wmt_enfr: under 4 GB).

Datagen is measured when it actually runs: always without --data_dir (a temporary directory is used), and
with --data_dir only when the data is not there yet. It is one run, not a median: generating twice would
only measure reuse. This suite defaults to --hparams transformer_tiny and --problem toy_ende; it has no peer.
"""

import os
import resource
import sys
import tempfile
import time

from benchmarks import check_peer, measurement, progress, resolve_hparams
from t2t_repro import catalog
from t2t_repro.data.batching import padding_efficiency, token_batches

DEFAULT_PROBLEM = "toy_ende"
DEFAULT_HPARAMS = "transformer_tiny"
DEFAULT_MAX_BATCHES = 2000


def add_arguments(parser):
    parser.set_defaults(hparams=DEFAULT_HPARAMS)
    parser.add_argument(
        "--max_batches", type=int, default=DEFAULT_MAX_BATCHES,
        help="train batches the padding efficiency is taken over",
    )
    parser.add_argument("--tmp_dir", default=None, help="datagen scratch directory (TFDS downloads, toy raw text)")


def _peak_rss_bytes():
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def _datagen(problem, data_dir, tmp_dir):
    """Runs datagen once; returns its measurements (none when the data was already complete)."""
    if problem.data_ready(data_dir):
        progress(f"{problem.name}: data already in {data_dir}; datagen not measured")
        return []
    progress(f"{problem.name}: preparing raw data (untimed)")
    problem.check_raw_data(tmp_dir, None)
    progress(f"{problem.name}: generating data in {data_dir}")
    start = time.perf_counter()
    summary = problem.generate_data(data_dir, tmp_dir=tmp_dir)
    seconds = time.perf_counter() - start
    pairs = sum(sum(counts.values()) for counts in summary["splits"].values())
    config = {
        "problem": problem.name,
        "pairs": pairs,
        "vocab_size": summary["vocab_size"],
        "vocab_model_type": problem.vocab_model_type,
        "seconds": round(seconds, 2),
        "cpus": os.cpu_count(),
    }
    return [
        measurement("datagen_sentences_per_s", pairs / seconds, "pairs/s", config),
        measurement("datagen_peak_rss", _peak_rss_bytes() / 2**20, "MiB", config),
    ]


def _padding_efficiency(problem, data_dir, hparams, hparams_name, max_batches):
    batches = token_batches(
        problem.dataset("train", data_dir), hparams.batch_tokens, hparams.max_length, shuffle=True, seed=1
    ).take(max_batches)
    measured = list(batches.as_numpy_iterator())
    config = {
        "problem": problem.name,
        "hparams": hparams_name,
        "batch_tokens": hparams.batch_tokens,
        "max_length": hparams.max_length,
        "batches": len(measured),
    }
    return measurement("padding_efficiency", padding_efficiency(measured), "real/padded tokens", config)


def run(args):
    check_peer(args, ())
    hparams = resolve_hparams(args)
    problem = catalog.get_problem(args.problem or DEFAULT_PROBLEM)
    max_batches = getattr(args, "max_batches", DEFAULT_MAX_BATCHES)
    tmp_dir = getattr(args, "tmp_dir", None)
    with tempfile.TemporaryDirectory(prefix="t2t_repro_bench_data_") as scratch:
        data_dir = args.data_dir or scratch
        results = _datagen(problem, data_dir, tmp_dir)
        progress(f"{problem.name}: batching the train split at batch_tokens={hparams.batch_tokens}")
        results.insert(0, _padding_efficiency(problem, data_dir, hparams, args.hparams, max_batches))
    return results
