"""Training throughput and model FLOPs utilization of one full training step on a fixed random batch.

The step is the paper's: teacher-forced forward pass of t2t_repro.model.Transformer, label-smoothed cross
entropy (section 5.4), backward pass, Adam update on the section 5.3 schedule, inside one tf.function. It is
timed as a graph and compiled by XLA (jit_compile=True); the faster is reported and named in the config.
MFU = model FLOPs per step (`benchmarks.TRAIN_FLOPS_FORMULA`) / step time / the float32 matmul peak measured
in the same run: every step (each model, each mode) and a block of matmuls lasting about one step are timed in
turns, one of each per round. Times and the peak are medians over the rounds; the MFU is the median of each
round's MFU (the step against the block of the same round), so that load changing between rounds cancels.

With --precision mixed_bfloat16 (or mixed_float16, with dynamic loss scaling as the trainer does) our model
runs under that Keras policy, and the matmul peak is measured in its compute dtype. --peer float32 times our
own model in float32 in the same rounds (the speed-up of mixed precision); --peer keras_hub builds the peer
under the same policy.

With --peer keras_hub, the same step on an encoder-decoder made of keras_hub.layers.TransformerEncoder and
TransformerDecoder with equal sizes, vocabulary, tied embeddings, dropout, loss and optimizer is timed too.
keras-hub's attention projections have biases, so ours are given them too (attention_bias=True) for equal work.
Both minimise the same label-smoothed cross entropy: ours computes it from the decoder states and the shared
matrix, as the trainer does (`t2t_repro.train.step.training_loss`); the peer, a model that returns logits, from
its logits with `label_smoothed_cross_entropy`.

With --source_vocab_size S our model has separate vocabularies: S source ids, and the target vocabulary's
(--problem's, or 37,000) tied with the softmax; the source ids of the batch are drawn from the S. --peer
shared_vocabulary then times, in the same rounds, the shared vocabulary of the same total size, S + the target
vocabulary's ids, all three embeddings one matrix (section 3.4), on the same batch: what each choice costs at
equal embedding parameters.

    python tools/benchmark.py --suite train [--hparams transformer_base] [--precision mixed_bfloat16]
        [--peer keras_hub|float32|shared_vocabulary] [--source_vocab_size S] [--json]
"""

import dataclasses
import functools
import statistics

import keras
import tensorflow as tf

from benchmarks import (
    TRAIN_FLOPS_FORMULA,
    batch_config,
    check_peer,
    measurement,
    peak_config,
    peak_measurement,
    progress,
    random_token_batch,
    resolve_hparams,
    resolve_vocab_size,
    train_step_flops,
)
from benchmarks.timing import block_peak, device_description, interleaved_times, matmul_block, median_mfu, time_calls
from t2t_repro.errors import UserError
from t2t_repro.hparams_type import PRECISIONS
from t2t_repro.model import build_transformer
from t2t_repro.special_tokens import PAD_ID
from t2t_repro.train.loss import label_smoothed_cross_entropy
from t2t_repro.train.optimizer import make_optimizer
from t2t_repro.train.precision import with_loss_scaling
from t2t_repro.train.step import training_loss

PEERS = ("keras_hub", "float32", "shared_vocabulary")
DEFAULT_WARMUP = 2  # the first call traces (and with XLA compiles); at least one warm-up call is always made
DEFAULT_REPEATS = 7
_MODES = {"both": ("graph", "xla"), "false": ("graph",), "true": ("xla",)}


def add_arguments(parser):
    parser.add_argument(
        "--jit_compile", choices=sorted(_MODES), default="both",
        help="time the step as a plain graph (false), XLA-compiled (true), or both and report the faster",
    )
    parser.add_argument(
        "--precision", choices=PRECISIONS, default=None,
        help="the Keras dtype policy of our model and of the keras_hub peer (default: the hparams')",
    )
    parser.add_argument(
        "--source_vocab_size", type=int, default=None,
        help="separate vocabularies: the source vocabulary's ids (the target's is the problem's, or 37,000)",
    )


def logits_loss(model, features, label_smoothing):
    """(loss_sum, tokens) of any model returning logits: the peer's loss."""
    return label_smoothed_cross_entropy(features["targets"], model(features, training=True), label_smoothing)


def make_train_step(model, optimizer, label_smoothing, jit_compile, loss=training_loss):
    """A tf.function running one training step on a {"inputs", "targets"} batch; returns the mean loss.
    `loss(model, features, label_smoothing)` gives (loss_sum, tokens): ours by default, `logits_loss` for a
    peer."""

    scaling = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)

    @tf.function(jit_compile=jit_compile)
    def train_step(features):
        with tf.GradientTape() as tape:
            loss_sum, tokens = loss(model, features, label_smoothing)
            loss_value = loss_sum / tokens
            scaled = optimizer.scale_loss(loss_value) if scaling else loss_value
        gradients = tape.gradient(scaled, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        return loss_value

    return train_step


class KerasHubTransformer(keras.Model):
    """The peer: the paper's encoder-decoder assembled from keras-hub's Transformer layers.

    Shared source/target/pre-softmax embedding (keras_hub.layers.ReversibleEmbedding with tied weights), scaled
    by sqrt(d_model), plus sinusoidal positions, dropout on the sums, N encoder and N decoder layers with
    d_model / num_heads per head. keras-hub applies its `dropout` to attention weights as well as to
    sub-layer outputs, where the paper has residual dropout only.
    """

    def __init__(self, hparams, vocab_size, **kwargs):
        super().__init__(**kwargs)
        import keras_hub

        policy = {"dtype": self.dtype_policy}
        layer_args = dict(
            **policy,
            intermediate_dim=hparams.d_ff,
            num_heads=hparams.num_heads,
            dropout=hparams.dropout,
            layer_norm_epsilon=hparams.layer_norm_epsilon,
            normalize_first=hparams.norm_placement == "pre",
        )
        self.scale = hparams.d_model**0.5
        self.embedding = keras_hub.layers.ReversibleEmbedding(vocab_size, hparams.d_model, tie_weights=True, **policy)
        self.positions = keras_hub.layers.SinePositionEncoding(**policy)
        self.source_dropout = keras.layers.Dropout(hparams.dropout, **policy)
        self.target_dropout = keras.layers.Dropout(hparams.dropout, **policy)
        self.encoder_layers = [keras_hub.layers.TransformerEncoder(**layer_args) for _ in range(hparams.num_layers)]
        self.decoder_layers = [keras_hub.layers.TransformerDecoder(**layer_args) for _ in range(hparams.num_layers)]

    def _embed(self, ids, dropout, training):
        x = self.embedding(ids) * self.scale
        return dropout(x + self.positions(x), training=training)

    def call(self, features, training=None):
        inputs, targets = features["inputs"], features["targets"]
        decoder_inputs = tf.pad(targets[:, :-1], [[0, 0], [1, 0]], constant_values=PAD_ID)
        source_mask = tf.not_equal(inputs, PAD_ID)
        x = self._embed(inputs, self.source_dropout, training)
        for layer in self.encoder_layers:
            x = layer(x, padding_mask=source_mask, training=training)
        y = self._embed(decoder_inputs, self.target_dropout, training)
        for layer in self.decoder_layers:
            y = layer(y, encoder_sequence=x, encoder_padding_mask=source_mask, training=training)
        return self.embedding(y, reverse=True)


def build_keras_hub_peer(hparams, vocab_size, features):
    """The keras-hub peer with its weights created; refuses settings it cannot match."""
    try:
        import keras_hub  # noqa: F401
    except ImportError:
        raise UserError("--peer keras_hub needs keras-hub: pip install keras-hub (the [bench] extra)") from None
    if hparams.d_k != hparams.d_model // hparams.num_heads or hparams.d_v != hparams.d_k:
        raise UserError("--peer keras_hub needs d_k = d_v = d_model / num_heads (keras-hub's head size)")
    if not hparams.shared_embedding or hparams.position_encoding != "sinusoid":
        raise UserError("--peer keras_hub needs shared_embedding=true and position_encoding=sinusoid")
    model = KerasHubTransformer(hparams, vocab_size, name="keras_hub_transformer", dtype=hparams.precision)
    model({name: ids[:1] for name, ids in features.items()})
    return model


def _warmed_up_steps(models, optimizers, hparams, features, mode, warmup):
    """({label: a callable running one step}, {label: seconds of its last warm-up call}) for `mode`, each
    traced (compiled) and warmed up; and {label: error} for the models XLA could not compile (a graph failure
    is raised)."""
    steps, warm_seconds, errors = {}, {}, {}
    for label, model in models.items():
        progress(f"train: {label}, {mode}: tracing{' and XLA compiling' if mode == 'xla' else ''}, "
                 f"{warmup} warm-up steps")
        step = functools.partial(
            make_train_step(model, optimizers[label], hparams.label_smoothing, jit_compile=mode == "xla",
                            loss=logits_loss if isinstance(model, KerasHubTransformer) else training_loss),
            features,
        )
        try:
            for _ in range(warmup):
                warm_seconds[label] = time_calls(step, warmup=0, repeats=1)[0]
        except (tf.errors.InvalidArgumentError, tf.errors.UnimplementedError) as error:
            if mode != "xla":
                raise
            errors[label] = error.message.splitlines()[0]
            progress(f"train: {label}: XLA failed: {errors[label]}")
            continue
        steps[label] = step
    return steps, warm_seconds, errors


def measure(models, hparams, features, modes, warmup, repeats):
    """Step seconds of every round {label: {mode: [seconds]}}, XLA errors {label: {mode: error}}, and the
    matmul peak, with the seconds of its block in every round under "round_seconds".

    Every model's step in every mode and a block of large matmuls lasting about one step are timed in turns,
    one call of each per round, so a busy machine slows them alike: the ratios and the MFU survive the noise.
    """
    optimizers = {}
    for label, model in models.items():
        optimizers[label] = with_loss_scaling(make_optimizer(hparams), model.dtype_policy.name)
        optimizers[label].build(model.trainable_variables)
    steps, warm_seconds = {}, []
    errors = {label: {} for label in models}
    for mode in modes:
        mode_steps, mode_seconds, mode_errors = _warmed_up_steps(models, optimizers, hparams, features, mode, warmup)
        steps.update({(label, mode): step for label, step in mode_steps.items()})
        warm_seconds += mode_seconds.values()
        for label, error in mode_errors.items():
            errors[label][mode] = error
    for label in models:
        if not any(step_label == label for step_label, _ in steps):
            raise UserError(f"{label}: the training step ran in no mode: {errors[label]}")
    compute_dtype = models["t2t_repro"].compute_dtype
    block, block_flops, info = matmul_block(min(warm_seconds), tf.as_dtype(compute_dtype))
    progress(f"train: {repeats} timed rounds of {', '.join(f'{label} {mode}' for label, mode in steps)} and "
             f"{info['calls_per_timing']} matmuls")
    times = interleaved_times({**steps, "matmul": block}, warmup=0, repeats=repeats)
    peak = block_peak(block_flops, info, times.pop("matmul"))
    seconds = {label: {} for label in models}
    for (label, mode), step_times in times.items():
        seconds[label][mode] = step_times
    return seconds, errors, peak


def _best(seconds):
    """(mode, its seconds of every round) of the mode with the smallest median."""
    mode = min(seconds, key=lambda m: statistics.median(seconds[m]))
    return mode, seconds[mode]


def run(args):
    check_peer(args, PEERS)
    hparams = resolve_hparams(args)
    vocab_size = resolve_vocab_size(args)
    warmup = max(1, DEFAULT_WARMUP if args.warmup is None else args.warmup)
    repeats = args.repeats or DEFAULT_REPEATS
    source_vocab_size = args.source_vocab_size
    if args.peer == "shared_vocabulary" and not source_vocab_size:
        raise UserError("--peer shared_vocabulary compares separate vocabularies with a shared one: give "
                        "--source_vocab_size")
    if args.peer == "keras_hub" and source_vocab_size:
        raise UserError("--peer keras_hub shares one vocabulary between the sides: leave out --source_vocab_size")
    batch = random_token_batch(args.batch_sentences, args.src_len, args.tgt_len, vocab_size)
    if source_vocab_size:
        batch["inputs"] = random_token_batch(args.batch_sentences, args.src_len, 1, source_vocab_size, seed=1)["inputs"]
    features = {name: tf.constant(ids) for name, ids in batch.items()}
    if args.precision:
        hparams = dataclasses.replace(hparams, precision=args.precision)
    if args.peer == "keras_hub":  # keras-hub's attention projections have biases: the same weights, the same work
        hparams = dataclasses.replace(hparams, attention_bias=True)
    models = {"t2t_repro": build_transformer(hparams, vocab_size, source_vocab_size=source_vocab_size)}
    if args.peer == "shared_vocabulary":
        models["shared_vocabulary"] = build_transformer(hparams, source_vocab_size + vocab_size)
    if args.peer == "keras_hub":
        models["keras_hub"] = build_keras_hub_peer(hparams, vocab_size, features)
    if args.peer == "float32":
        if hparams.precision == "float32":
            raise UserError("--peer float32 compares a mixed precision with float32: give --precision")
        models["float32"] = build_transformer(hparams, vocab_size, precision="float32",
                                              source_vocab_size=source_vocab_size)
    seconds, errors, peak = measure(models, hparams, features, _MODES[args.jit_compile], warmup, repeats)

    mode, round_seconds = _best(seconds["t2t_repro"])
    step_seconds = statistics.median(round_seconds)
    config = {
        "hparams": args.hparams,
        "hparams_overrides": args.hparams_overrides,
        "precision": hparams.precision,
        "attention_bias": hparams.attention_bias,
        **batch_config(args, vocab_size),
        "source_vocab_size": source_vocab_size,
        "params": models["t2t_repro"].count_params(),
        "compiled": mode,
        **{f"{m}_step_ms": statistics.median(s) * 1e3 for m, s in seconds["t2t_repro"].items()},
        "round_step_ms": [s * 1e3 for s in round_seconds],
        **{f"{m}_error": e for m, e in errors["t2t_repro"].items()},
        "warmup": warmup,
        "repeats": repeats,
        "device": device_description(),
    }
    peer = {}
    if args.peer:
        peer_mode, peer_round_seconds = _best(seconds[args.peer])
        peer = {"peer": args.peer, "seconds": statistics.median(peer_round_seconds),
                "round_seconds": peer_round_seconds}
        config.update(
            peer_compiled=peer_mode,
            peer_params=models[args.peer].count_params(),
            **{f"peer_{m}_step_ms": statistics.median(s) * 1e3 for m, s in seconds[args.peer].items()},
            peer_round_step_ms=[s * 1e3 for s in peer_round_seconds],
            **{f"peer_{m}_error": e for m, e in errors[args.peer].items()},
        )

    target_tokens = args.batch_sentences * args.tgt_len
    flops = train_step_flops(hparams, vocab_size, args.batch_sentences, args.src_len, args.tgt_len)

    def compared(metric, of_seconds, unit, extra=None):
        peer_args = {"peer": peer["peer"], "peer_value": of_seconds(peer["seconds"])} if peer else {}
        return measurement(metric, of_seconds(step_seconds), unit, {**config, **(extra or {})}, **peer_args)

    peer_flops = (train_step_flops(hparams, source_vocab_size + vocab_size, args.batch_sentences, args.src_len,
                                   args.tgt_len) if args.peer == "shared_vocabulary" else flops)
    mfu_peer = ({"peer": peer["peer"], "peer_value": median_mfu(peer_flops, peer["round_seconds"], peak)} if peer
                else {})
    return [
        compared("train_target_tokens_per_sec", lambda s: target_tokens / s, "tokens/s"),
        compared("train_step_ms", lambda s: s * 1e3, "ms"),
        peak_measurement(peak, config["device"]),
        measurement(
            "mfu",
            median_mfu(flops, round_seconds, peak),
            "fraction",
            {**config, "flops_per_step": flops, "flops_formula": TRAIN_FLOPS_FORMULA,
             "model_gflops_per_sec": flops / step_seconds / 1e9, **peak_config(peak)},
            **mfu_peer,
        ),
    ]
