"""Benchmark suites run by tools/benchmark.py, and what they share without importing TensorFlow.

A suite is a module `benchmarks/<suite>.py` with

    def run(args) -> list[dict]         # the measurements, each made by `measurement(...)`
    def add_arguments(parser)           # optional: the suite's own flags, added after the common ones

`args` carries the dispatcher's common flags (hparams, hparams_overrides, problem, peer, batch_sentences,
src_len, tgt_len, data_dir, warmup, repeats). TensorFlow-dependent helpers (timing, matmul peak, memory) are
in `benchmarks.timing`.
"""

import math
import os
import shutil
import sys

import numpy as np

from t2t_repro.errors import UserError

# Table 2's EN-DE setting (section 5.1): a shared vocabulary of about 37,000 tokens.
DEFAULT_VOCAB_SIZE = 37_000
# The first ids are PAD, EOS and UNK (t2t_repro.special_tokens); random batches use real-token ids only.
FIRST_WORD_ID = 3


def console_script(name):
    """The path of an installed t2t-repro console script, e.g. console_script("t2t-repro-serve").

    Suites run the installed commands, never `python -m t2t_repro...`: run from the repository root, that
    would import the source tree, where problems/ and hparams/ are not mapped into the package."""
    beside_python = os.path.join(os.path.dirname(sys.executable), name)
    path = beside_python if os.path.exists(beside_python) else shutil.which(name)
    if not path:
        raise UserError(f"{name} is not installed: pip install . first")
    return path


def measurement(metric, value, unit, config, peer=None, peer_value=None):
    """One benchmark result; with a peer, also the peer's value and ratio = value / peer_value."""
    result = {"metric": metric, "value": value, "unit": unit, "config": dict(config)}
    if peer is not None:
        result.update(peer=peer, peer_value=peer_value, ratio=value / peer_value if peer_value else None)
    return result


def progress(message):
    """A progress line on stderr, so that stdout stays one JSON object per line."""
    print(f"[benchmark] {message}", file=sys.stderr, flush=True)


def check_peer(args, supported):
    """Refuses a --peer the suite cannot run."""
    if args.peer is not None and args.peer not in supported:
        known = ", ".join(supported) if supported else "none"
        raise UserError(f"suite {args.suite!r} has no peer {args.peer!r} (peers it can run: {known})")


def resolve_hparams(args):
    """The HParams named by --hparams with --hparams_overrides applied."""
    from t2t_repro import catalog
    from t2t_repro.hparams_type import apply_overrides

    return apply_overrides(catalog.get_hparams(args.hparams), args.hparams_overrides)


def resolve_vocab_size(args):
    """37,000 (the paper's EN-DE vocabulary) unless --problem is given: then its vocabulary's size, read from
    --data_dir when the data is there, else the size the problem requests."""
    if not args.problem:
        return DEFAULT_VOCAB_SIZE
    from t2t_repro import catalog

    problem = catalog.get_problem(args.problem, args.problem_overrides)
    if args.data_dir and problem.data_ready(args.data_dir):
        return problem.vocabularies(args.data_dir).target.vocab_size
    return problem.vocab_size


def random_token_batch(batch_sentences, src_len, tgt_len, vocab_size, seed=0):
    """{"inputs": int32 [B, S], "targets": int32 [B, T]} of uniformly drawn real-token ids (no padding)."""
    rng = np.random.default_rng(seed)
    return {
        "inputs": rng.integers(FIRST_WORD_ID, vocab_size, size=(batch_sentences, src_len), dtype=np.int32),
        "targets": rng.integers(FIRST_WORD_ID, vocab_size, size=(batch_sentences, tgt_len), dtype=np.int32),
    }


def batch_config(args, vocab_size):
    """The batch shape fields every model-running suite reports in its config."""
    return {
        "batch_sentences": args.batch_sentences,
        "src_len": args.src_len,
        "tgt_len": args.tgt_len,
        "vocab_size": vocab_size,
    }


def fit_power_law(sizes, values):
    """The exponent k of the least-squares fit values ~ c * sizes^k on a log-log scale."""
    if len(sizes) < 2:
        raise ValueError("a growth exponent needs at least two sizes")
    x = np.log(np.asarray(sizes, dtype=np.float64))
    y = np.log(np.asarray(values, dtype=np.float64))
    slope, _ = np.polyfit(x, y, 1)
    return float(slope)


def _token_flops(hparams):
    """Matrix-multiply FLOPs per token in one layer: (an encoder token and a decoder token, each without its
    attention products; the two attention products per query and key; the encoder-decoder keys and values of
    one source token)."""
    d, h, d_k, d_v, d_ff = hparams.d_model, hparams.num_heads, hparams.d_k, hparams.d_v, hparams.d_ff
    ffn = 2 * (2 * d * d_ff)
    self_projections = 2 * d * h * (2 * d_k + d_v) + 2 * h * d_v * d
    cross_projections = 2 * d * h * d_k + 2 * h * d_v * d  # Q and the output: K and V come from the memory
    per_key = 2 * h * (d_k + d_v)  # Q K^T and weights x V
    memory_keys_values = 2 * d * h * (d_k + d_v)
    return self_projections + ffn, self_projections + cross_projections + ffn, per_key, memory_keys_values


def _encoding_flops(hparams, src_len):
    """Matrix-multiply FLOPs of encoding one sentence, with every decoder layer's keys and values of it."""
    encoder_token, _, per_key, memory_keys_values = _token_flops(hparams)
    return hparams.num_layers * src_len * (encoder_token + per_key * src_len + memory_keys_values)


def forward_matmul_flops(hparams, vocab_size, batch_sentences, src_len, tgt_len):
    """Floating-point operations of the matrix multiplies in one teacher-forced forward pass.

    Counts 2 operations per multiply-add, for every dense projection, both attention products (Q K^T and
    weights x V, over the full length: the causal mask hides future positions but they are still computed),
    the feed-forward network and the pre-softmax projection onto the vocabulary. Embedding lookups,
    softmax, layer normalization and biases are not matrix multiplies and are left out.
    """
    _, decoder_token, per_key, _ = _token_flops(hparams)
    decoding = hparams.num_layers * tgt_len * (decoder_token + per_key * (tgt_len + src_len))
    output_projection = tgt_len * 2 * hparams.d_model * vocab_size
    return batch_sentences * (_encoding_flops(hparams, src_len) + decoding + output_projection)


def cached_decode_flops(hparams, vocab_size, batch_sentences, beam_size, src_len, output_length):
    """Matrix-multiply FLOPs of a cached beam search that runs `output_length` steps: each sentence encoded once,
    and at every step each of its `beam_size` hypotheses passes one token through the decoder (its
    self-attention over the positions so far, step t over t keys) and the pre-softmax projection. Counted as in
    `forward_matmul_flops`; work a search repeats per beam (the memory's keys and values) counts once."""
    _, decoder_token, per_key, _ = _token_flops(hparams)
    keys_over_steps = output_length * (output_length + 1) // 2
    per_hypothesis = (
        hparams.num_layers * (output_length * (decoder_token + per_key * src_len) + per_key * keys_over_steps)
        + output_length * 2 * hparams.d_model * vocab_size
    )
    return batch_sentences * (_encoding_flops(hparams, src_len) + beam_size * per_hypothesis)


DECODE_FLOPS_FORMULA = (
    "each sentence encoded once, then per step and hypothesis one decoder token (self-attention over the "
    "positions so far) and the vocabulary projection; 2 per multiply-add, matrix multiplies only"
)


TRAIN_FLOPS_FORMULA = (
    "3 x forward matmul FLOPs (backward = 2 x forward); forward = 2 per multiply-add over all projections, "
    "Q K^T and weights x V at full length, feed-forward and the vocabulary projection"
)


def train_step_flops(hparams, vocab_size, batch_sentences, src_len, tgt_len):
    """Model FLOPs of one training step: the forward matmuls and a backward pass of twice their cost."""
    return 3 * forward_matmul_flops(hparams, vocab_size, batch_sentences, src_len, tgt_len)


MFU_METHOD = "median over the rounds of the FLOPs / seconds of a call / the matmul peak timed in the same round"


def peak_measurement(peak, device):
    """The "matmul_peak" measurement (GFLOP/s) of a `benchmarks.timing.block_peak`."""
    return measurement("matmul_peak", peak["flops_per_sec"] / 1e9, "GFLOP/s",
                       {key: value for key, value in peak.items() if key not in ("flops_per_sec", "round_seconds")}
                       | {"device": device})


def peak_config(peak):
    """The matmul peak's part of an MFU measurement's config."""
    config = {f"matmul_{key}": peak[key] for key in ("size", "dtype", "tf32", "calls_per_timing")}
    return {**config, "matmul_peak_gflops_per_sec": peak["flops_per_sec"] / 1e9,
            "matmul_round_ms": [s * 1e3 for s in peak["round_seconds"]], "mfu_method": MFU_METHOD}


def format_number(value):
    """A compact, readable rendering of a measured value for the human table."""
    if value is None:
        return "-"
    if isinstance(value, bool) or isinstance(value, int):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if abs(value) >= 10_000:
        return f"{value:,.0f}"
    return f"{value:.4g}"
