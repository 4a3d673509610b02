"""Timing and hardware measurements shared by the suites: warm-up then medians, matmul peak, peak memory."""

import resource
import statistics
import sys
import time

import tensorflow as tf


def device_name():
    """"GPU:0" when TensorFlow sees a GPU, else "CPU:0": where the suites' computations run."""
    return "GPU:0" if tf.config.list_logical_devices("GPU") else "CPU:0"


def device_description():
    """A short description of the device for the config of every measurement."""
    name = device_name()
    if name.startswith("GPU"):
        details = tf.config.experimental.get_device_details(tf.config.list_physical_devices("GPU")[0])
        return f"{name} {details.get('device_name', '')}".strip()
    return f"{name} ({tf.config.threading.get_intra_op_parallelism_threads() or 'default'} intra-op threads)"


def wait_for(result):
    """Blocks until `result` (a tensor or nest of tensors) is computed, by fetching one element of it."""
    for tensor in tf.nest.flatten(result):
        if isinstance(tensor, (tf.Tensor, tf.Variable)):
            tf.reshape(tensor, [-1])[:1].numpy()
            return


def time_calls(fn, warmup, repeats):
    """Seconds taken by each of `repeats` calls of `fn()`, after `warmup` untimed calls (tracing, compiling,
    caches). Each call is waited for, so asynchronous devices are timed fully."""
    for _ in range(warmup):
        wait_for(fn())
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        wait_for(fn())
        seconds.append(time.perf_counter() - start)
    return seconds


def median_seconds(fn, warmup, repeats):
    """The median of `time_calls`."""
    return statistics.median(time_calls(fn, warmup, repeats))


def interleaved_times(fns, warmup, repeats):
    """{name: seconds of each timed call} for several callables timed in turns: one call of each per round.

    On a shared, noisy machine the calls of every round see the same load, so ratios between them hold up
    far better than with one callable timed after the other.
    """
    for fn in fns.values():
        for _ in range(warmup):
            wait_for(fn())
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            wait_for(fn())
            times[name].append(time.perf_counter() - start)
    return times


def matmul_product(size=None, dtype=tf.float32):
    """(fn, flops, info): a [size, size] @ [size, size] product to time, its 2 size^3 FLOPs, and a description.

    The default size is 2048 on a CPU (a tenth of a second at ~100 GFLOP/s) and 8192 on a GPU. On GPUs
    TensorFlow runs float32 matmuls in TF32 unless that is disabled; the model's matmuls then do too, so the
    peak and the model are measured alike.
    """
    on_gpu = device_name().startswith("GPU")
    size = size or (8192 if on_gpu else 2048)
    with tf.device(device_name()):
        a = tf.random.stateless_normal([size, size], seed=[1, 2], dtype=dtype)
        b = tf.random.stateless_normal([size, size], seed=[3, 4], dtype=dtype)
    product = tf.function(lambda: tf.reduce_sum(tf.matmul(a, b)))
    info = {
        "size": size,
        "dtype": dtype.name,
        "tf32": bool(on_gpu and tf.config.experimental.tensor_float_32_execution_enabled()),
    }
    return product, 2.0 * size**3, info


def matmul_peak(size=None, warmup=2, repeats=5, dtype=tf.float32):
    """The sustained matmul rate of this device: {"flops_per_sec", "size", "dtype", "tf32", "warmup", "repeats"},
    from the median time of `matmul_product`."""
    product, flops, info = matmul_product(size, dtype)
    seconds = median_seconds(product, warmup, repeats)
    return {"flops_per_sec": flops / seconds, **info, "warmup": warmup, "repeats": repeats}


def matmul_block(seconds, dtype):
    """(fn, flops, info): as many back-to-back matmul_product calls in `dtype` as take about `seconds`, so the
    peak is sampled over as long a stretch of a noisy machine as each timed call of a suite is."""
    product, product_flops, info = matmul_product(dtype=dtype)
    wait_for(product())
    calls = max(1, round(seconds / time_calls(product, warmup=0, repeats=1)[0]))

    def block():
        for _ in range(calls):
            wait_for(product())

    return block, calls * product_flops, {**info, "calls_per_timing": calls}


def block_peak(block_flops, info, round_seconds):
    """The matmul peak of a block timed in every round: info plus flops_per_sec (from the median round),
    block_flops, round_seconds and timed_calls."""
    return {**info, "flops_per_sec": block_flops / statistics.median(round_seconds), "block_flops": block_flops,
            "round_seconds": round_seconds, "timed_calls": len(round_seconds)}


def median_mfu(flops, call_seconds, peak):
    """The median over the rounds of each round's MFU: the call against the matmul block timed in the same
    round, so that a change of load between rounds moves both alike."""
    return statistics.median(
        flops / call / (peak["block_flops"] / block) for call, block in zip(call_seconds, peak["round_seconds"])
    )


def _max_rss_bytes():
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # Linux reports kilobytes, macOS bytes


class PeakMemory:
    """Peak memory growth of the code run inside `with PeakMemory() as memory:`; then `memory.bytes`.

    On a GPU: the allocator's peak minus what was allocated before (exact). On a CPU, TensorFlow keeps no
    allocator statistics, so it is the growth of the process's peak resident set size: memory that the
    process had already touched earlier is not counted again, so small workloads can show 0.
    """

    def __init__(self):
        self.device = device_name()
        self.method = "gpu_allocator_peak" if self.device.startswith("GPU") else "process_max_rss_growth"
        self.bytes = None

    def __enter__(self):
        if self.device.startswith("GPU"):
            tf.config.experimental.reset_memory_stats(self.device)
            self._start = tf.config.experimental.get_memory_info(self.device)["current"]
        else:
            self._start = _max_rss_bytes()
        return self

    def __exit__(self, *exc_info):
        if self.device.startswith("GPU"):
            self.bytes = tf.config.experimental.get_memory_info(self.device)["peak"] - self._start
        else:
            self.bytes = _max_rss_bytes() - self._start
        return False
