"""Time and memory of one self-attention layer as the sequence length doubles (Table 1).

Table 1 puts a self-attention layer at O(n^2 d) operations: the attention weights are an n x n matrix per head.
The layer measured is t2t_repro.model.attention.MultiHeadAttention at the hparams' sizes (its Q/K/V and output
projections, O(n d^2), included), forward only, for n = min_length, 2 min_length, ..., max_length. Per length:
the median time, the bytes of the attention-weights tensor, and the peak memory growth. Then the fitted
exponent k of time ~ n^k over all lengths and over the lengths n >= d_model, where the n^2 d term dominates
the projections' n d^2 and k should approach 2.

    python tools/benchmark.py --suite attention [--hparams transformer_base] [--max_length 2048] [--json]
"""

import tensorflow as tf

from benchmarks import check_peer, fit_power_law, measurement, progress, resolve_hparams
from benchmarks.timing import PeakMemory, device_description, median_seconds
from t2t_repro.errors import UserError
from t2t_repro.model.attention import MultiHeadAttention, scaled_dot_product_attention

DEFAULT_WARMUP = 2
DEFAULT_REPEATS = 5


def add_arguments(parser):
    parser.add_argument("--min_length", type=int, default=64, help="shortest sequence length (default 64)")
    parser.add_argument("--max_length", type=int, default=2048, help="longest sequence length (default 2048)")
    parser.add_argument("--attention_batch", type=int, default=1, help="sequences per call (default 1)")


def sequence_lengths(min_length, max_length):
    """min_length, 2 min_length, 4 min_length, ... up to max_length."""
    if min_length <= 0 or max_length < min_length:
        raise UserError(f"--min_length={min_length}, --max_length={max_length}: need 0 < min_length <= max_length")
    lengths = [min_length]
    while lengths[-1] * 2 <= max_length:
        lengths.append(lengths[-1] * 2)
    return lengths


def attention_weights_bytes(layer, x):
    """Bytes of the [batch, h, n, n] attention-weights tensor the layer computes for `x`."""
    batch, length = x.shape[0], x.shape[1]
    heads = tf.zeros([batch, layer.num_heads, length, layer.d_k], x.dtype)
    _, weights = scaled_dot_product_attention(heads, heads, heads)
    return weights.shape.num_elements() * weights.dtype.size


def run(args):
    check_peer(args, supported=())
    if args.attention_batch <= 0:
        raise UserError(f"--attention_batch={args.attention_batch}: must be positive")
    hparams = resolve_hparams(args)
    warmup = DEFAULT_WARMUP if args.warmup is None else args.warmup
    repeats = args.repeats or DEFAULT_REPEATS
    lengths = sequence_lengths(args.min_length, args.max_length)
    layer = MultiHeadAttention(hparams.num_heads, hparams.d_k, hparams.d_v, hparams.d_model, name="self_attention")
    # One trace serves every length, so per-length memory is not inflated by tracing.
    forward = tf.function(
        lambda x: layer(x, training=False),
        input_signature=[tf.TensorSpec([args.attention_batch, None, hparams.d_model], tf.float32)],
    )
    forward(tf.zeros([args.attention_batch, lengths[0], hparams.d_model]))
    base_config = {
        "hparams": args.hparams,
        "d_model": hparams.d_model,
        "num_heads": hparams.num_heads,
        "d_k": hparams.d_k,
        "d_v": hparams.d_v,
        "batch": args.attention_batch,
        "pass": "forward",
        "warmup": warmup,
        "repeats": repeats,
        "device": device_description(),
    }
    results, times_ms = [], []
    for length in lengths:
        progress(f"attention: n={length}")
        x = tf.random.stateless_normal([args.attention_batch, length, hparams.d_model], seed=[length, 0])
        with PeakMemory() as memory:
            seconds = median_seconds(lambda: forward(x), warmup, repeats)
        times_ms.append(seconds * 1e3)
        config = {**base_config, "n": length}
        results += [
            measurement("self_attention_ms", times_ms[-1], "ms", config),
            measurement("attention_weights_bytes", attention_weights_bytes(layer, x), "bytes", config),
            measurement("peak_memory_growth_bytes", memory.bytes, "bytes", {**config, "method": memory.method}),
        ]
    if len(lengths) >= 2:
        fit_config = {**base_config, "lengths": lengths, "expected": "2 for n >> d_model (Table 1: O(n^2 d))"}
        results.append(measurement("time_growth_exponent", fit_power_law(lengths, times_ms), "exponent",
                                   fit_config))
        long = [(n, t) for n, t in zip(lengths, times_ms) if n >= hparams.d_model]
        if len(long) >= 2:
            results.append(measurement(
                "time_growth_exponent_n_ge_d_model",
                fit_power_law(*zip(*long)),
                "exponent",
                {**fit_config, "lengths": [n for n, _ in long]},
            ))
    return results
