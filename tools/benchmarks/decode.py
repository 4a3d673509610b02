"""Beam-search decoding speed: with the key/value cache against recomputing the decoder over the prefix.

Random weights and random source ids (vocabulary 37,000 unless --problem says otherwise); beam 4, 16
sentences, outputs of exactly 64 tokens by default. Both searches run t2t_repro.decode.beam_search with EOS
disabled (eos_id=-1), so no hypothesis ends early and the two do the same number of steps; the maximum
output length is the source length plus (output length - source length), as section 6.1's "input length +
extra". Throughput counts the output tokens of one hypothesis per sentence: sentences x output length /
median seconds per batch. The cached / uncached ratio should be at least 5.

With --peer keras_hub, the cached search is compared with keras-hub's BeamSampler generating the same number
of tokens at the same beam size from an encoder-decoder of keras-hub layers of the same sizes
(benchmarks.train.KerasHubTransformer), with keras-hub's own fixed-size self-attention cache and
precomputed encoder-decoder keys/values, laid out as keras-hub's BART does. keras-hub generates XLA-compiled
on TensorFlow; the peer is timed both XLA-compiled and as a plain graph and the faster is reported
(--peer_jit_compile). The cached search and the peer are timed in turns, so both see the same machine load;
the slow uncached search is timed --uncached_repeats times (default 1) after them.

The decode suite's batch and output length are its own flags (--decode_batch, --output_length,
--beam_size), since the common --batch_sentences/--tgt_len defaults are the training suite's.

With --engine ctranslate2 the same random-weight model is exported with the project's CTranslate2 export in
--quantization (int8 by default) and decoded by CTranslate2 (benchmarks.decode_ctranslate2) on the same
sources, to the same output length, at the same beam; --peer tensorflow times the cached TensorFlow search in
turns with it (the target: int8 at least 1.7 times as fast).

decode_mfu is the cached search's model FLOPs (benchmarks.cached_decode_flops: matrix multiplies only)
per second against a matmul peak in the search's compute dtype, timed in the same rounds (matmul_peak); with
a peer, the peer's MFU against the same peak.

The TensorFlow search computes in --precision (default the hparams'; e.g. mixed_bfloat16, as
t2t-repro-decoder --serving_precision=mixed_bfloat16 does, with its weights cast to bfloat16 once). --peer
float32 times the same weights decoding in float32 in turns with it: the speed-up of decoding in mixed
precision. --peer xla times the same search with its loop compiled by XLA (t2t-repro-decoder --jit_compile,
with the preallocated self-attention cache) in turns with it: the ratio is the default search against XLA's.

    python tools/benchmark.py --suite decode [--hparams transformer_base] [--peer keras_hub] [--json]
    python tools/benchmark.py --suite decode --precision mixed_bfloat16 --peer float32 --json
    python tools/benchmark.py --suite decode --peer xla --json
    python tools/benchmark.py --suite decode --engine ctranslate2 --quantization int8 --peer tensorflow --json
"""

import dataclasses
import importlib.util
import statistics

import tensorflow as tf

from benchmarks import (
    DECODE_FLOPS_FORMULA,
    cached_decode_flops,
    check_peer,
    measurement,
    peak_config,
    peak_measurement,
    progress,
    random_token_batch,
    resolve_hparams,
    resolve_vocab_size,
)
from benchmarks.decode_ctranslate2 import run_ctranslate2
from benchmarks.timing import (
    block_peak,
    device_description,
    interleaved_times,
    matmul_block,
    median_mfu,
    median_seconds,
    time_calls,
)
from t2t_repro.decode.transformer_search import compiled_search
from t2t_repro.decode_settings import DecodeSettings
from t2t_repro.errors import UserError
from t2t_repro.hparams_type import PRECISIONS
from t2t_repro.model import build_transformer, half_precision_weights
from t2t_repro.special_tokens import PAD_ID

PEERS = ("keras_hub", "tensorflow", "float32", "xla")
ENGINES = ("tensorflow", "ctranslate2")
DEFAULT_WARMUP = 0  # beyond the first call, which traces, runs once and checks the output length
DEFAULT_REPEATS = 5
TARGET_SPEEDUP = 5.0
NO_EOS = -1  # an id no token has: hypotheses run to the maximum length


def add_arguments(parser):
    parser.add_argument("--beam_size", type=int, default=4, help="beam width (default 4, section 6.1)")
    parser.add_argument("--decode_batch", type=int, default=16, help="sentences per batch (default 16)")
    parser.add_argument("--output_length", type=int, default=64, help="tokens generated per hypothesis "
                        "(default 64; must be at least --src_len)")
    parser.add_argument("--peer_jit_compile", choices=sorted(_PEER_MODES), default="both",
                        help="time the keras-hub peer as a plain graph (false), XLA-compiled (true), or both "
                        "and report the faster (default)")
    parser.add_argument("--uncached_repeats", type=int, default=1, help="timed batches of the slow uncached "
                        "search (default 1)")
    parser.add_argument("--engine", choices=ENGINES, default="tensorflow", help="what decodes: the project's "
                        "TensorFlow search (default) or its CTranslate2 export (peer: tensorflow)")
    parser.add_argument("--quantization", default="int8", help="--engine ctranslate2: the export's weight type "
                        "(int8, int8_float32, int16, float32; default int8)")
    parser.add_argument("--ctranslate2_threads", type=int, default=0, help="--engine ctranslate2: CPU threads "
                        "(default 0: CTranslate2's default)")
    parser.add_argument("--precision", choices=PRECISIONS, default=None, help="the Keras dtype policy the "
                        "TensorFlow search computes in (default: the hparams'); --peer float32 compares with float32")


def build_keras_hub_search(hparams, vocab_size, inputs, beam_size, output_length, jit_compile):
    """A tf.function: inputs [batch, source_length] -> keras-hub BeamSampler output [batch, output_length + 1],
    on a keras-hub encoder-decoder of the hparams' sizes with random weights."""
    import keras_hub
    from benchmarks.train import build_keras_hub_peer

    model = build_keras_hub_peer(hparams, vocab_size, {"inputs": inputs[:1], "targets": inputs[:1, :2]})
    sampler = keras_hub.samplers.BeamSampler(num_beams=beam_size)
    heads, head_size = hparams.num_heads, hparams.d_model // hparams.num_heads

    @tf.function(jit_compile=jit_compile)
    def generate(source):
        batch = tf.shape(source)[0]
        source_mask = tf.not_equal(source, PAD_ID)
        memory = model._embed(source, model.source_dropout, False)
        for layer in model.encoder_layers:
            memory = layer(memory, padding_mask=source_mask, training=False)
        cross = []
        for layer in model.decoder_layers:
            attention = layer._cross_attention_layer
            cross.append(tf.stack([attention._key_dense(memory), attention._value_dense(memory)], axis=1))
        cache = {
            "self": tf.zeros([batch, len(model.decoder_layers), 2, output_length + 1, heads, head_size]),
            "cross": tf.stack(cross, axis=1),
            "memory": memory,
            "mask": source_mask,
        }

        def next_token_logits(prompt, cache, index):
            position = index - 1
            y = model.embedding(prompt[:, position:position + 1]) * model.scale
            y = y + model.positions(y, start_index=position)
            self_caches = []
            for i, layer in enumerate(model.decoder_layers):
                y, self_cache, _ = layer(
                    y, encoder_sequence=cache["memory"], encoder_padding_mask=cache["mask"],
                    self_attention_cache=cache["self"][:, i], self_attention_cache_update_index=position,
                    cross_attention_cache=cache["cross"][:, i], cross_attention_cache_update_index=None,
                    training=False,
                )
                self_caches.append(self_cache)
            logits = model.embedding(y, reverse=True)[:, 0]
            return logits, None, {**cache, "self": tf.stack(self_caches, axis=1)}

        prompt = tf.fill([batch, output_length + 1], tf.constant(PAD_ID, source.dtype))
        return sampler(next_token_logits, prompt, cache=cache, index=1, stop_token_ids=None)

    return generate


_PEER_MODES = {"both": (True, False), "true": (True,), "false": (False,)}


def _keras_hub_calls(hparams, vocab_size, inputs, args):
    """{"keras_hub_xla" / "keras_hub_graph": call} for the peer modes asked for; keras-hub itself generates
    XLA-compiled on TensorFlow (its models' default jit_compile), so both are timed by default and the faster
    is reported. A mode XLA cannot compile is left out, its error in the second dict."""
    calls, errors = {}, {}
    for jit_compile in _PEER_MODES[args.peer_jit_compile]:
        mode = "xla" if jit_compile else "graph"
        generate = build_keras_hub_search(hparams, vocab_size, inputs, args.beam_size, args.output_length,
                                          jit_compile)
        progress(f"decode: tracing keras-hub's BeamSampler ({mode})")
        try:
            generate(inputs)
        except (tf.errors.InvalidArgumentError, tf.errors.UnimplementedError) as error:
            if not jit_compile:
                raise
            errors[f"peer_{mode}_error"] = error.message.splitlines()[0]
            progress(f"decode: keras-hub under XLA failed: {errors[f'peer_{mode}_error']}")
            continue
        calls[f"keras_hub_{mode}"] = lambda generate=generate: generate(inputs)
    return calls, errors


def _float32_call(model, hparams, vocab_size, inputs, settings):
    """A call of the cached search over `model`'s weights computing in float32 (the --peer float32)."""
    float32_model = build_transformer(hparams, vocab_size, precision="float32")
    float32_model.set_weights(model.get_weights())
    search = compiled_search(float32_model, settings, use_cache=True, eos_id=NO_EOS)
    progress("decode: tracing the float32 search")
    search(inputs)
    return lambda: search(inputs)


def _xla_call(model, inputs, settings):
    """A call of the cached search over `model` with its loop compiled by XLA (the --peer xla)."""
    search = compiled_search(model, settings, use_cache=True, eos_id=NO_EOS, jit_compile=True)
    progress("decode: tracing and compiling the XLA search")
    search(inputs)
    return lambda: search(inputs)


def run(args):
    check_peer(args, PEERS)
    for name in ("beam_size", "decode_batch", "output_length", "uncached_repeats"):
        if getattr(args, name) < 1:
            raise UserError(f"--{name}={getattr(args, name)}: must be at least 1")
    if args.output_length < args.src_len:
        raise UserError(f"--output_length={args.output_length} must be at least --src_len={args.src_len}")
    hparams = resolve_hparams(args)
    if args.precision:
        hparams = dataclasses.replace(hparams, precision=args.precision)
    if args.peer == "float32" and (hparams.precision == "float32" or args.engine != "tensorflow"):
        raise UserError("--peer float32 compares the TensorFlow search in a mixed precision with float32: give "
                        "--precision")
    vocab_size = resolve_vocab_size(args)
    warmup = DEFAULT_WARMUP if args.warmup is None else args.warmup
    repeats = args.repeats or DEFAULT_REPEATS
    inputs = tf.constant(random_token_batch(args.decode_batch, args.src_len, 1, vocab_size)["inputs"])
    extra_length = args.output_length - args.src_len
    model = build_transformer(hparams, vocab_size)
    served = half_precision_weights(model)  # what the decoder and the exporter run in a mixed precision

    config = {
        "hparams": args.hparams,
        "hparams_overrides": args.hparams_overrides,
        "beam_size": args.beam_size,
        "batch_sentences": args.decode_batch,
        "src_len": args.src_len,
        "output_length": args.output_length,
        "vocab_size": vocab_size,
        "precision": hparams.precision,
        "tokens": "sentences x output_length per batch (one hypothesis per sentence)",
        "weights": "random",
        "warmup": warmup,
        "repeats": repeats,
        "device": device_description(),
    }
    tokens = args.decode_batch * args.output_length
    if args.engine == "ctranslate2" and args.peer not in (None, "tensorflow"):
        raise UserError(f"--engine ctranslate2 is compared with --peer tensorflow, not {args.peer}")
    if args.peer == "tensorflow" and args.engine != "ctranslate2":
        raise UserError("--peer tensorflow is the peer of --engine ctranslate2")
    calls = {}
    settings = DecodeSettings(beam_size=args.beam_size, alpha=0.6, extra_length=extra_length)
    for use_cache in (True, False) if args.engine == "tensorflow" else (True,):
        label = "cached" if use_cache else "uncached"
        search = compiled_search(served, settings, use_cache=use_cache, eos_id=NO_EOS)
        progress(f"decode: tracing the {label} search")
        ids, _ = search(inputs)  # also checks that the search really generates output_length tokens
        if ids.shape[-1] != args.output_length:
            raise RuntimeError(f"{label} search produced {ids.shape[-1]} tokens, not {args.output_length}")
        calls[label] = lambda search=search: search(inputs)
    if args.peer == "float32":
        calls["float32"] = _float32_call(model, hparams, vocab_size, inputs, settings)
    if args.peer == "xla":
        calls["xla"] = _xla_call(served, inputs, settings)
    if args.engine == "ctranslate2":
        return run_ctranslate2(args, model, inputs.numpy(), calls["cached"], config, warmup, repeats)
    if args.peer == "keras_hub" and importlib.util.find_spec("keras_hub") is None:
        progress("decode: keras-hub is not installed (pip install keras-hub, the [bench] extra): peer skipped")
        config["peer_skipped"] = "keras-hub not installed"
    elif args.peer == "keras_hub":
        peer_calls, peer_errors = _keras_hub_calls(hparams, vocab_size, inputs, args)
        calls.update(peer_calls)
        config.update(peer_errors)

    # The cached search, the peer and a block of matmuls lasting about one search are timed in turns, so that
    # all see the same load on a shared machine.
    fast = {name: call for name, call in calls.items() if name != "uncached"}
    one_search = time_calls(calls["cached"], warmup=0, repeats=1)[0]
    block, block_flops, block_info = matmul_block(one_search, tf.as_dtype(served.compute_dtype))
    progress(f"decode: {', '.join(fast)} and {block_info['calls_per_timing']} matmuls: {warmup} warm-up and "
             f"{repeats} timed batches each, in turns")
    round_seconds = interleaved_times({**fast, "matmul": block}, warmup, repeats)
    peak = block_peak(block_flops, block_info, round_seconds.pop("matmul"))
    seconds = {name: statistics.median(times) for name, times in round_seconds.items()}
    progress(f"decode: {', '.join(f'{n} {s * 1e3:.0f} ms' for n, s in seconds.items())} per batch")
    peer = {}
    peer_modes = {name: value for name, value in seconds.items() if name.startswith("keras_hub_")}
    peer_label = None
    for name in ("float32", "xla"):
        if name in seconds:
            peer_label = name
            peer = {"peer": name, "peer_value": tokens / seconds[name]}
            config.update(peer_batch_ms=seconds[name] * 1e3)
    if peer_modes:
        fastest = min(peer_modes, key=peer_modes.get)
        peer_label = fastest
        peer = {"peer": "keras_hub", "peer_value": tokens / peer_modes[fastest]}
        config.update(peer_compiled=fastest[len("keras_hub_"):],
                      **{f"peer_{name[len('keras_hub_'):]}_batch_ms": value * 1e3 for name, value in
                         peer_modes.items()})
    progress(f"decode: uncached: {warmup} warm-up and {args.uncached_repeats} timed batches")
    seconds["uncached"] = median_seconds(calls["uncached"], warmup, args.uncached_repeats)
    progress(f"decode: uncached {seconds['uncached'] * 1e3:.0f} ms per batch")

    cached_rate, uncached_rate = tokens / seconds["cached"], tokens / seconds["uncached"]
    flops = cached_decode_flops(hparams, vocab_size, args.decode_batch, args.beam_size, args.src_len,
                                args.output_length)
    mfu_peer = {}
    if peer_label:
        mfu_peer = {"peer": peer["peer"], "peer_value": median_mfu(flops, round_seconds[peer_label], peak)}
    return [
        measurement("decode_tokens_per_s_cached", cached_rate, "tokens/s",
                    {**config, "batch_ms": seconds["cached"] * 1e3}, **peer),
        measurement("decode_tokens_per_s_uncached", uncached_rate, "tokens/s",
                    {**config, "repeats": args.uncached_repeats, "batch_ms": seconds["uncached"] * 1e3}),
        measurement("decode_cache_speedup", cached_rate / uncached_rate, "x",
                    {**config, "target": f">= {TARGET_SPEEDUP:g}", "meets_target": cached_rate / uncached_rate
                     >= TARGET_SPEEDUP}),
        peak_measurement(peak, config["device"]),
        measurement("decode_mfu", median_mfu(flops, round_seconds["cached"], peak), "fraction",
                    {**config, "flops_per_batch": flops, "flops_formula": DECODE_FLOPS_FORMULA,
                     "model_gflops_per_sec": flops / seconds["cached"] / 1e9,
                     "round_batch_ms": [s * 1e3 for s in round_seconds["cached"]], **peak_config(peak)},
                    **mfu_peer),
    ]
