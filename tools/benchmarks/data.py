"""Data measurements: datagen speed and memory, and the training input pipeline's speed and padding.

    python tools/benchmark.py --suite data [--problem toy_ende] [--hparams transformer_tiny] [--data_dir D]
        [--manual_dir M] [--workers N] [--batch_tokens T] [--json]
    python tools/benchmark.py --suite data --problem wmt_ende --hparams transformer_base \\
        --manual_dir /tmp/wmt_synthetic --data_dir /tmp/wmt_data --json   # tools/synthetic_wmt.py makes M

- datagen_pairs_per_s: sentence pairs (all splits, dropped ones included) read, encoded and written per second
  by `generate_data` with --workers processes, vocabulary sampling and training included; raw data from
  TFDS or the toy generators is fetched or made beforehand, untimed. Its config has the seconds, the CPU
  seconds of this process and its workers (wall time below CPU time / cores: the machine was busy), the
  pairs, the bytes written and the load average before and after (the machine may be shared).
- datagen_peak_rss_bytes: the largest resident memory of this process and its datagen workers together,
  sampled every 0.2 s, or this process's own peak if larger (config: both). Target: at most 4 GB.
- pipeline_target_tokens_per_s: real (non-padding) target tokens per second delivered by the pipeline the
  trainer reads: TFRecords -> parsing and the max_length limit (blocks of records) -> shuffle -> length
  buckets -> token batches of --batch_tokens (default: the hparams set's) per side, repeated; the median of
  --repeats windows of --window_batches batches, after --warmup windows (default: 9 after 3). Target on a
  2-core host: 600,000 at 25,000 tokens.
- padding_efficiency: real tokens / padded positions, both sides, over the timed batches. Target: 0.9.
  The config also says whether the iterator's position checkpoints: saved with tf.train.Checkpoint, restored
  into a new iterator, the next batch must be the same.

Datagen is measured when it actually runs: always without --data_dir (a temporary directory is used), and
with --data_dir only when the data is not there yet (one run, not a median: a second would only reuse).
"""

import os
import resource
import statistics
import tempfile
import threading
import time

import numpy as np
import tensorflow as tf

from benchmarks import check_peer, measurement, progress, resolve_hparams
from t2t_repro import catalog
from t2t_repro.data.batching import token_batches
from t2t_repro.special_tokens import PAD_ID

DEFAULT_PROBLEM = "toy_ende"
DEFAULT_HPARAMS = "transformer_tiny"


def add_arguments(parser):
    parser.set_defaults(hparams=DEFAULT_HPARAMS)
    parser.add_argument("--manual_dir", default=None, help="raw data for datagen (e.g. tools/synthetic_wmt.py's)")
    parser.add_argument("--tmp_dir", default=None, help="datagen scratch directory (TFDS downloads, toy raw text)")
    parser.add_argument("--workers", type=int, default=None, help="datagen worker processes (default: one per core)")
    parser.add_argument("--batch_tokens", type=int, default=None, help="tokens per side of a batch (default: hparams')")
    parser.add_argument("--window_batches", type=int, default=50, help="batches per timed pipeline window")


def _process_tree_rss(pid=None):
    """Resident bytes of process `pid` (default: this one) and all its descendants, from /proc."""
    pid = pid or os.getpid()
    total = 0
    stack = [pid]
    while stack:
        current = stack.pop()
        try:
            with open(f"/proc/{current}/status") as status:
                total += next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:"))
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as children:
                    stack += [int(child) for child in children.read().split()]
        except (OSError, StopIteration, ValueError):
            continue
    return total


class _PeakMemory:
    """Samples the process tree's resident memory in a thread; `peak` is the largest sum seen."""

    def __init__(self, interval=0.2):
        self.interval, self.peak = interval, _process_tree_rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self):
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, _process_tree_rss())

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join()


def _cpu_seconds():
    """User and system CPU seconds of this process and of its finished child processes (the datagen workers)."""
    return sum(getattr(resource.getrusage(who), field) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for field in ("ru_utime", "ru_stime"))


def _kib_to_bytes(kib):
    return kib * 1024


def _directory_bytes(directory):
    return sum(os.path.getsize(os.path.join(directory, name)) for name in os.listdir(directory))


def _datagen(problem, data_dir, tmp_dir, manual_dir, workers):
    """Runs datagen once; returns its measurements (none when the data was already complete)."""
    if problem.data_ready(data_dir):
        progress(f"{problem.name}: data already in {data_dir}; datagen not measured")
        return []
    progress(f"{problem.name}: preparing raw data (untimed)")
    problem.check_raw_data(tmp_dir, manual_dir)
    progress(f"{problem.name}: generating data in {data_dir}")
    load_before = os.getloadavg()
    cpu_before = _cpu_seconds()
    start = time.perf_counter()
    with _PeakMemory() as memory:
        summary = problem.generate_data(data_dir, tmp_dir=tmp_dir, manual_dir=manual_dir, workers=workers)
    seconds = time.perf_counter() - start
    pairs = sum(sum(counts.values()) for counts in summary["splits"].values())
    config = {
        "problem": problem.name,
        "pairs": pairs,
        "train_examples": summary["splits"]["train"]["examples"],
        "vocab_size": summary["vocab_size"],
        "vocab_model_type": problem.vocab_model_type,
        "vocab_sample_sentences": problem.vocab_sample_sentences,
        "workers": workers or len(os.sched_getaffinity(0)),
        "seconds": round(seconds, 2),
        "cpu_seconds": round(_cpu_seconds() - cpu_before, 2),
        "bytes_written": _directory_bytes(summary["directory"]),
        "cpus": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }
    own_peak = _kib_to_bytes(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    return [
        measurement("datagen_pairs_per_s", pairs / seconds, "pairs/s", config),
        measurement("datagen_peak_rss_bytes", max(memory.peak, own_peak), "bytes",
                    dict(config, main_process_peak_bytes=own_peak, process_tree_sampled_peak_bytes=memory.peak)),
    ]


def _checkpoint_round_trip(dataset, iterator):
    """(seconds to save, checkpoint bytes, whether a restored iterator gives the same next batch)."""
    with tempfile.TemporaryDirectory(prefix="t2t_repro_bench_iterator_") as directory:
        start = time.perf_counter()
        path = tf.train.Checkpoint(data=iterator).write(os.path.join(directory, "data"))
        seconds = time.perf_counter() - start
        size = _directory_bytes(directory)
        restored = iter(dataset)
        tf.train.Checkpoint(data=restored).read(path).assert_consumed()
        expected, actual = next(iterator), next(restored)
    same = all(np.array_equal(expected[key].numpy(), actual[key].numpy()) for key in ("inputs", "targets"))
    return seconds, size, same


def _pipeline(problem, data_dir, hparams, batch_tokens, args):
    dataset = token_batches(problem.dataset("train", data_dir, hparams.max_length), batch_tokens,
                            hparams.max_length, shuffle=True, seed=1, repeat=True,
                            bucket_growth=hparams.bucket_growth)
    iterator = iter(dataset)
    # The first windows still fill the length buckets (76 of them at max_length 256), so three warm up.
    warmup = 3 if args.warmup is None else args.warmup
    repeats = 9 if args.repeats is None else args.repeats
    rates, real, padded = [], 0, 0
    load_before = os.getloadavg()
    for window in range(warmup + repeats):
        start = time.perf_counter()
        window_tokens = 0
        for _ in range(args.window_batches):
            batch = next(iterator)
            targets = batch["targets"].numpy()
            target_tokens = int(np.count_nonzero(targets != PAD_ID))
            window_tokens += target_tokens
            if window >= warmup:
                inputs = batch["inputs"].numpy()
                real += target_tokens + int(np.count_nonzero(inputs != PAD_ID))
                padded += targets.size + inputs.size
        if window >= warmup:
            rates.append(window_tokens / (time.perf_counter() - start))
    save_seconds, checkpoint_bytes, resumes = _checkpoint_round_trip(dataset, iterator)
    config = {
        "problem": problem.name,
        "hparams": args.hparams,
        "batch_tokens": batch_tokens,
        "max_length": hparams.max_length,
        "bucket_growth": hparams.bucket_growth,
        "window_batches": args.window_batches,
        "windows": repeats,
        "cpus": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "iterator_checkpoint_seconds": round(save_seconds, 3),
        "iterator_checkpoint_bytes": checkpoint_bytes,
        "iterator_resumes_exactly": resumes,
    }
    return [
        measurement("pipeline_target_tokens_per_s", statistics.median(rates), "target tokens/s",
                    dict(config, window_rates=[round(rate) for rate in rates])),
        measurement("padding_efficiency", real / padded if padded else 0.0, "real/padded tokens", config),
    ]


def run(args):
    check_peer(args, ())
    hparams = resolve_hparams(args)
    problem = catalog.get_problem(args.problem or DEFAULT_PROBLEM, args.problem_overrides)
    with tempfile.TemporaryDirectory(prefix="t2t_repro_bench_data_") as scratch:
        data_dir = args.data_dir or scratch
        results = _datagen(problem, data_dir, args.tmp_dir, args.manual_dir, args.workers)
        batch_tokens = args.batch_tokens or hparams.batch_tokens
        progress(f"{problem.name}: timing the input pipeline at batch_tokens={batch_tokens}")
        results += _pipeline(problem, data_dir, hparams, batch_tokens, args)
    return results
