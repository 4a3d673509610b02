"""The Transformer encoder-decoder (section 3, Figure 1) as a Keras 3 model."""

import keras
import tensorflow as tf

from t2t_repro.model.attention import causal_bias, empty_cache, padding_bias, unwritten_bias
from t2t_repro.model.built_by_call import BuiltByCall
from t2t_repro.model.config import HParamsConfig
from t2t_repro.model.cpu_kernels import check_compute_kernels
from t2t_repro.model.dropout import Dropout
from t2t_repro.model.embedding import PositionEncoding, TokenEmbedding
from t2t_repro.model.layer_norm import LayerNormalization
from t2t_repro.model.layers import DecoderLayer, EncoderLayer
from t2t_repro.special_tokens import PAD_ID

# The keys of the attention weights `call(..., return_attention_scores=True)` returns.
ENCODER_SELF_ATTENTION = "encoder_self_attention"
DECODER_SELF_ATTENTION = "decoder_self_attention"
ENCODER_DECODER_ATTENTION = "encoder_decoder_attention"


class Transformer(HParamsConfig, BuiltByCall, keras.Model):
    """Encoder-decoder Transformer (section 3, Figure 1), its vocabulary shared by both sides (section 5.1) or
    each side's own.

    The decoder reads the targets shifted right by one position, with PAD_ID (0) as the start symbol, so the
    prediction for position i depends only on the targets before i (section 3.1).

    Args:
        hparams: a `t2t_repro.hparams_type.HParams`; the model reads its architecture: num_layers, d_model,
            d_ff, num_heads, d_k, d_v, attention_bias (equation 4), dropout, attention_dropout, relu_dropout,
            shared_embedding (section 3.4), position_encoding (section 3.5, Table 3 row E), max_position,
            norm_placement, layer_norm_epsilon, vocab_multiple (embedding rows padded past vocab_size) and
            precision (the Keras dtype policy: float32, or mixed_bfloat16 / mixed_float16, whose float32 islands
            are the attention softmax, the layer-normalization statistics, the positional encodings and the
            logits).
        vocab_size: size of the target vocabulary (the softmax's), and of the source one when shared.
        source_vocab_size: the source vocabulary's size when the sides have their own (None: shared). Section 3.4
            ties all three embedding matrices because the vocabulary is shared; with separate vocabularies only
            the target embedding and the pre-softmax projection can be one matrix (shared_embedding), and the
            source embedding has its own rows.

    Call arguments:
        features: {"inputs": [batch, source_length], "targets": [batch, target_length]} int ids, 0-padded.
        training: enables dropout.
        return_attention_scores: also return the attention weights of every layer, {ENCODER_SELF_ATTENTION,
            DECODER_SELF_ATTENTION, ENCODER_DECODER_ATTENTION: [per layer, [batch, h, queries, keys]]}.

    Returns float32 logits [batch, target_length, vocab_size] (teacher forcing), or (logits, weights). Training takes
    `final_states` and `output_matrix` instead, so that the loss can include the projection
    (`projected_label_smoothed_cross_entropy`). Beam search takes `scoring_function` (section 6.1).

    Example:
        >>> model = Transformer(HParams(num_layers=2, d_model=16, d_ff=32, num_heads=4, d_k=4, d_v=4), 100)
        >>> model({"inputs": tf.constant([[5, 1]]), "targets": tf.constant([[7, 8, 1]])}).shape
        TensorShape([1, 3, 100])
    """

    def __init__(self, hparams, vocab_size, source_vocab_size=None, **kwargs):
        # The precision policy (float32 weights; mixed_* compute in bfloat16 or float16) is the hparams' unless
        # a `dtype` is given, e.g. a float32 serving graph of a mixed-precision run.
        kwargs.setdefault("dtype", hparams.precision)
        super().__init__(**kwargs)
        self.hparams = hparams
        self.vocab_size = vocab_size
        self.source_vocab_size = source_vocab_size
        d_model = hparams.d_model
        rows = padded_vocab_size(vocab_size, hparams.vocab_multiple)
        sublayer = {"dtype": self.dtype_policy}

        if source_vocab_size is None:
            source_name = "shared_embedding" if hparams.shared_embedding else "source_embedding"
            self.source_embedding = TokenEmbedding(rows, d_model, name=source_name, **sublayer)
            self.target_embedding = self.source_embedding if hparams.shared_embedding else None
        else:
            source_rows = padded_vocab_size(source_vocab_size, hparams.vocab_multiple)
            self.source_embedding = TokenEmbedding(source_rows, d_model, name="source_embedding", **sublayer)
            self.target_embedding = None
        if self.target_embedding is None:
            self.target_embedding = TokenEmbedding(rows, d_model, name="target_embedding", **sublayer)
        if hparams.shared_embedding:
            self.output_projection = self.target_embedding
        else:
            self.output_projection = TokenEmbedding(rows, d_model, name="output_projection", **sublayer)
        positions = (d_model, hparams.position_encoding, hparams.max_position)
        self.source_positions = PositionEncoding(*positions, name="source_positions", **sublayer)
        self.target_positions = PositionEncoding(*positions, name="target_positions", **sublayer)
        self.source_dropout = Dropout(hparams.dropout, **sublayer)
        self.target_dropout = Dropout(hparams.dropout, **sublayer)
        # Tuples, not lists: tf.train.Checkpoint does not see into the lists Keras 3 tracks, but does into tuples.
        self.encoder_layers = tuple(
            EncoderLayer(hparams, name=f"encoder_{i}", **sublayer) for i in range(hparams.num_layers)
        )
        self.decoder_layers = tuple(
            DecoderLayer(hparams, name=f"decoder_{i}", **sublayer) for i in range(hparams.num_layers)
        )
        # Pre-norm stacks end with a normalization; post-norm layers already end normalized.
        if hparams.norm_placement == "pre":
            epsilon = hparams.layer_norm_epsilon
            self.encoder_norm = LayerNormalization(epsilon=epsilon, name="encoder_norm", **sublayer)
            self.decoder_norm = LayerNormalization(epsilon=epsilon, name="decoder_norm", **sublayer)

    def _final_norm(self, x, norm_name):
        return getattr(self, norm_name)(x) if self.hparams.norm_placement == "pre" else x

    def _encode(self, inputs, training):
        """(memory, memory_bias, encoder self-attention weights per layer)."""
        memory_bias = padding_bias(inputs, PAD_ID)
        x = self.source_positions(self.source_embedding(inputs))
        x = self.source_dropout(x, training=training)
        weights = []
        for layer in self.encoder_layers:
            x, layer_weights = layer(x, bias=memory_bias, training=training, return_attention_scores=True)
            weights.append(layer_weights)
        return self._final_norm(x, "encoder_norm"), memory_bias, weights

    def _decode_states(self, decoder_inputs, memory, memory_bias, training):
        """(final decoder states, {"self", "cross"} weights per layer)."""
        x = self.target_positions(self.target_embedding(decoder_inputs))
        x = self.target_dropout(x, training=training)
        self_bias = causal_bias(tf.shape(decoder_inputs)[1])
        weights = []
        for layer in self.decoder_layers:
            x, layer_weights = layer(
                x, memory=memory, self_bias=self_bias, memory_bias=memory_bias, training=training,
                return_attention_scores=True,
            )
            weights.append(layer_weights)
        return self._final_norm(x, "decoder_norm"), weights

    def encode(self, inputs, training=None):
        """Encodes source ids [batch, source_length]; returns (memory, memory_bias)."""
        return self._encode(inputs, training)[:2]

    def decode(self, decoder_inputs, memory, memory_bias, training=None):
        """Teacher-forced decoder: logits [batch, length, vocab] for already shifted decoder inputs."""
        states, _ = self._decode_states(decoder_inputs, memory, memory_bias, training)
        return self.logits(states)

    def final_states(self, features, training=None, return_attention_scores=False):
        """The decoder's final states [batch, target_length, d_model] for a batch, before the pre-softmax
        projection: `call` is `output_projection.project(final_states(...))`. The training step feeds them
        and `output_matrix` to `projected_label_smoothed_cross_entropy`."""
        targets = features["targets"]
        decoder_inputs = tf.pad(targets[:, :-1], [[0, 0], [1, 0]], constant_values=PAD_ID)
        memory, memory_bias, encoder_weights = self._encode(features["inputs"], training)
        states, decoder_weights = self._decode_states(decoder_inputs, memory, memory_bias, training)
        if not return_attention_scores:
            return states
        return states, {
            ENCODER_SELF_ATTENTION: encoder_weights,
            DECODER_SELF_ATTENTION: [weights["self"] for weights in decoder_weights],
            ENCODER_DECODER_ATTENTION: [weights["cross"] for weights in decoder_weights],
        }

    @property
    def output_matrix(self):
        """The pre-softmax matrix [rows, d_model] (the shared embedding matrix, section 3.4); rows past
        vocab_size are padding (hparams.vocab_multiple)."""
        return self.output_projection.embeddings

    def logits(self, states, transposed_matrix=None):
        """float32 logits [..., vocab_size] of final decoder states: the pre-softmax projection, computed in
        the model's compute dtype, without the padding rows of the embedding matrix (never predicted).
        `transposed_matrix`: the projection's `transposed_matrix`, made once for many calls (decoding)."""
        logits = self.output_projection.project(states, transposed_matrix)
        if logits.shape[-1] != self.vocab_size:
            logits = logits[..., : self.vocab_size]
        return logits

    def call(self, features, training=None, return_attention_scores=False):
        if not return_attention_scores:
            return self.logits(self.final_states(features, training=training))
        states, weights = self.final_states(features, training=training, return_attention_scores=True)
        return self.logits(states), weights

    @property
    def max_target_length(self):
        """The most target positions the decoder can read: max_position with learned positions, else None."""
        return self.hparams.max_position if self.hparams.position_encoding == "learned" else None

    def scoring_function(self, inputs, beam_size, max_length=None, use_cache=True):
        """Encodes a batch for beam search (section 6.1); returns (symbols_to_logits_fn, initial_state,
        sentence_state).

        `symbols_to_logits_fn(ids, step, state, sentence_state)` takes the decoder inputs, ids [batch * beam_size,
        at least step + 1] starting with PAD_ID, of which the first step + 1 are the hypotheses so far (row
        s * beam_size + b is beam b of sentence s), and returns the logits of the next token [batch * beam_size,
        vocab_size] and the new state. The state, which the search reorders along the beams it keeps, is the
        self-attention cache alone: per layer {"k", "v"} [batch * beam_size, h, positions, d]. The sentence
        state holds what is the same for every beam of a sentence, once per sentence [batch, ...]: the encoder
        output's per-layer keys and values (the cross-attention reads them for all of a sentence's beams in one
        product) and its padding bias; a search that drops finished sentences drops their rows of both.

        Args:
            inputs: int32 [batch, source_length] source ids, 0-padded.
            beam_size: hypotheses per sentence.
            max_length: None: the cache grows by one position a step, and the logits are the uncached decoder's
                to the bit. An int32 scalar: the cache is preallocated to this many positions (the most the
                search will read) and written in place, the positions not written yet masked, so that every step
                has the same shapes (for XLA; the softmax over the masked positions rounds otherwise in the last
                bits).
            use_cache: False recomputes the decoder over the whole prefix at every step, with no state (slow;
                gives the same logits, for checking the cache).
        """
        memory, memory_bias = self.encode(inputs)
        if not use_cache:
            def uncached_logits(ids, step, state, sentences):
                memory, memory_bias = (tf.repeat(sentences[name], beam_size, axis=0) for name in ("memory", "bias"))
                return self.decode(ids[:, : step + 1], memory, memory_bias)[:, -1], state

            return uncached_logits, {}, {"memory": memory, "bias": memory_bias}
        sentence_state = {"memory_kv": [layer.cross_attention.memory_kv(memory) for layer in self.decoder_layers],
                          "bias": memory_bias}
        output_matrix = self.output_projection.transposed_matrix(memory.dtype)  # once, not at every step
        fixed_shapes = max_length is not None

        def next_position_logits(ids, step, caches, sentences):
            x = self.target_positions(self.target_embedding(ids[:, step : step + 1]), start=step)
            self_bias = unwritten_bias(step + 1, tf.shape(caches[0]["k"])[2]) if fixed_shapes else None
            new_caches = []
            for layer, layer_memory, cache in zip(self.decoder_layers, sentences["memory_kv"], caches):
                x, cache = layer(x, memory=layer_memory, self_bias=self_bias, memory_bias=sentences["bias"],
                                 cache=cache, cache_index=step if fixed_shapes else None)
                new_caches.append(cache)
            return self.logits(self._final_norm(x, "decoder_norm"), output_matrix)[:, 0], new_caches

        h = self.hparams
        empty = empty_cache(tf.shape(memory)[0] * beam_size, h.num_heads, h.d_k, h.d_v,
                            max_length if fixed_shapes else 0, memory.dtype)
        return next_position_logits, [empty] * len(self.decoder_layers), sentence_state

    def get_config(self):
        return {**super().get_config(), "vocab_size": self.vocab_size, "source_vocab_size": self.source_vocab_size}


def padded_vocab_size(vocab_size, multiple):
    """vocab_size rounded up to a multiple of `multiple`: the rows of the embedding matrix."""
    return -(-vocab_size // multiple) * multiple


def build_transformer(hparams, vocab_size, precision=None, source_vocab_size=None):
    """A Transformer for `hparams` with every weight created (by one call on a one-token batch); `vocab_size` is
    the target vocabulary's, `source_vocab_size` the source one's when the sides have their own.

    `precision` (a Keras dtype policy name) overrides hparams.precision, e.g. "float32" to serve a
    mixed-precision run in float32; the weights are float32 whatever the policy, so any checkpoint restores."""
    check_compute_kernels(precision or hparams.precision)
    model = Transformer(hparams, vocab_size, source_vocab_size, **({"dtype": precision} if precision else {}))
    ones = tf.ones([1, 1], tf.int32)
    model({"inputs": ones, "targets": ones})
    return model


def half_precision_weights(model):
    """For inference: a copy of a mixed-precision `model` with its weights stored in its compute dtype.

    A mixed_bfloat16 (or mixed_float16) model keeps float32 weights and casts every one of them to bfloat16
    at every use: at every step of a beam search. The copy casts them once. Its outputs are the same: every
    weight is used in the compute dtype either way, and the layer normalizations, which use theirs in
    float32, keep float32 ones. A float32 model is returned as it is."""
    compute_dtype = model.dtype_policy.compute_dtype
    if compute_dtype == "float32":
        return model
    copy = build_transformer(model.hparams, model.vocab_size, compute_dtype, model.source_vocab_size)
    for target, source in zip(copy.weights, model.weights, strict=True):
        target.assign(tf.cast(source, target.dtype))
    return copy
