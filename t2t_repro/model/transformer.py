"""The Transformer encoder-decoder (section 3, Figure 1) as a Keras 3 model."""

import keras
import tensorflow as tf

from t2t_repro.model.attention import causal_bias, padding_bias
from t2t_repro.model.embedding import PositionEncoding, TokenEmbedding
from t2t_repro.model.layer_norm import LayerNormalization
from t2t_repro.model.layers import DecoderLayer, EncoderLayer
from t2t_repro.special_tokens import PAD_ID

_HPARAMS_ARGS = (
    "num_layers",
    "d_model",
    "d_ff",
    "num_heads",
    "d_k",
    "d_v",
    "dropout",
    "attention_dropout",
    "relu_dropout",
    "shared_embedding",
    "position_encoding",
    "max_position",
    "norm_placement",
    "layer_norm_epsilon",
)


class Transformer(keras.Model):
    """Encoder-decoder Transformer with a shared vocabulary.

    The decoder reads the targets shifted right by one position, with PAD_ID (0) as the start symbol, so the
    prediction for position i depends only on the targets before i (section 3.1).

    Args:
        vocab_size: size of the shared source/target vocabulary.
        num_layers, d_model, d_ff, num_heads, d_k, d_v: the architecture (section 3, Table 3 columns).
        dropout: P_drop on each sub-layer output and on the embedding + position sums (section 5.4).
        attention_dropout, relu_dropout: optional extra dropouts, 0 in the paper's sets.
        shared_embedding: one matrix for source and target embeddings and the pre-softmax projection
            (section 3.4); False gives three separate matrices.
        position_encoding: "sinusoid" (section 3.5) or "learned" (Table 3 row E).
        max_position: number of learned positions.
        norm_placement: "post" (the paper) or "pre".
        layer_norm_epsilon: epsilon of every layer normalization.

    Call arguments:
        features: {"inputs": [batch, source_length], "targets": [batch, target_length]} int ids, 0-padded.
        training: enables dropout.
    Returns logits [batch, target_length, vocab_size] (teacher forcing). Training takes `final_states` and
    `output_matrix` instead, so that the loss can include the projection (`projected_label_smoothed_cross_entropy`).

    Incremental decoding: `memory, memory_bias = encode(inputs)`, `cache = init_cache(memory, memory_bias)`,
    then `logits, cache = decode_step(ids, step, cache)` once per position, starting with ids = PAD_ID at
    step 0.
    """

    def __init__(
        self,
        vocab_size,
        num_layers=6,
        d_model=512,
        d_ff=2048,
        num_heads=8,
        d_k=64,
        d_v=64,
        dropout=0.1,
        attention_dropout=0.0,
        relu_dropout=0.0,
        shared_embedding=True,
        position_encoding="sinusoid",
        max_position=1024,
        norm_placement="post",
        layer_norm_epsilon=1e-6,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.num_layers = num_layers
        self.d_model = d_model
        self.d_ff = d_ff
        self.num_heads = num_heads
        self.d_k = d_k
        self.d_v = d_v
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.relu_dropout = relu_dropout
        self.shared_embedding = shared_embedding
        self.position_encoding = position_encoding
        self.max_position = max_position
        self.norm_placement = norm_placement
        self.layer_norm_epsilon = layer_norm_epsilon

        source_name = "shared_embedding" if shared_embedding else "source_embedding"
        self.source_embedding = TokenEmbedding(vocab_size, d_model, name=source_name)
        if shared_embedding:
            self.target_embedding = self.output_projection = self.source_embedding
        else:
            self.target_embedding = TokenEmbedding(vocab_size, d_model, name="target_embedding")
            self.output_projection = TokenEmbedding(vocab_size, d_model, name="output_projection")
        self.source_positions = PositionEncoding(d_model, position_encoding, max_position, name="source_positions")
        self.target_positions = PositionEncoding(d_model, position_encoding, max_position, name="target_positions")
        self.source_dropout = keras.layers.Dropout(dropout)
        self.target_dropout = keras.layers.Dropout(dropout)
        layer_args = dict(
            d_model=d_model,
            d_ff=d_ff,
            num_heads=num_heads,
            d_k=d_k,
            d_v=d_v,
            dropout=dropout,
            attention_dropout=attention_dropout,
            relu_dropout=relu_dropout,
            norm_placement=norm_placement,
            layer_norm_epsilon=layer_norm_epsilon,
        )
        # Tuples, not lists: tf.train.Checkpoint does not see into the lists Keras 3 tracks, but does into tuples.
        self.encoder_layers = tuple(EncoderLayer(**layer_args, name=f"encoder_{i}") for i in range(num_layers))
        self.decoder_layers = tuple(DecoderLayer(**layer_args, name=f"decoder_{i}") for i in range(num_layers))
        # Pre-norm stacks end with a normalization; post-norm layers already end normalized.
        if norm_placement == "pre":
            self.encoder_norm = LayerNormalization(epsilon=layer_norm_epsilon, name="encoder_norm")
            self.decoder_norm = LayerNormalization(epsilon=layer_norm_epsilon, name="decoder_norm")

    @classmethod
    def from_hparams(cls, hparams, vocab_size, **kwargs):
        """Builds the model described by an HParams for a vocabulary of `vocab_size` ids."""
        return cls(vocab_size, **{name: getattr(hparams, name) for name in _HPARAMS_ARGS}, **kwargs)

    def _final_norm(self, x, norm_name):
        return getattr(self, norm_name)(x) if self.norm_placement == "pre" else x

    def encode(self, inputs, training=None):
        """Encodes source ids [batch, source_length]; returns (memory, memory_bias)."""
        memory_bias = padding_bias(inputs, PAD_ID)
        x = self.source_positions(self.source_embedding(inputs))
        x = self.source_dropout(x, training=training)
        for layer in self.encoder_layers:
            x = layer(x, bias=memory_bias, training=training)
        return self._final_norm(x, "encoder_norm"), memory_bias

    def decoder_states(self, decoder_inputs, memory, memory_bias, training=None):
        """Teacher-forced decoder: its final states [batch, length, d_model] for already shifted decoder inputs."""
        x = self.target_positions(self.target_embedding(decoder_inputs))
        x = self.target_dropout(x, training=training)
        self_bias = causal_bias(tf.shape(decoder_inputs)[1])
        for layer in self.decoder_layers:
            x = layer(x, memory=memory, self_bias=self_bias, memory_bias=memory_bias, training=training)
        return self._final_norm(x, "decoder_norm")

    def decode(self, decoder_inputs, memory, memory_bias, training=None):
        """Teacher-forced decoder: logits [batch, length, vocab] for already shifted decoder inputs."""
        return self.output_projection.project(self.decoder_states(decoder_inputs, memory, memory_bias, training))

    def final_states(self, features, training=None):
        """The decoder's final states [batch, target_length, d_model] for a batch, before the pre-softmax
        projection: `call` is `output_projection.project(final_states(...))`. The training step feeds them
        and `output_matrix` to `projected_label_smoothed_cross_entropy`."""
        targets = features["targets"]
        decoder_inputs = tf.pad(targets[:, :-1], [[0, 0], [1, 0]], constant_values=PAD_ID)
        memory, memory_bias = self.encode(features["inputs"], training=training)
        return self.decoder_states(decoder_inputs, memory, memory_bias, training=training)

    @property
    def output_matrix(self):
        """The pre-softmax matrix [vocab_size, d_model] (the shared embedding matrix, section 3.4)."""
        return self.output_projection.embeddings

    def call(self, features, training=None):
        return self.output_projection.project(self.final_states(features, training=training))

    def init_cache(self, memory, memory_bias):
        """The decoding state for `decode_step`: empty self-attention caches and per-layer memory keys/values."""
        batch = tf.shape(memory)[0]
        layers = []
        for layer in self.decoder_layers:
            layers.append(
                {
                    "self": {
                        "k": tf.zeros([batch, self.num_heads, 0, self.d_k], memory.dtype),
                        "v": tf.zeros([batch, self.num_heads, 0, self.d_v], memory.dtype),
                    },
                    "cross": layer.cross_attention.memory_kv(memory),
                }
            )
        return {"memory_bias": memory_bias, "layers": layers}

    def decode_step(self, ids, step, cache):
        """Decodes one position: ids [batch] at position `step`; returns (logits [batch, vocab], new cache)."""
        x = self.target_embedding(ids[:, tf.newaxis])
        x = self.target_positions(x, start=step)
        new_layers = []
        for layer, layer_cache in zip(self.decoder_layers, cache["layers"]):
            x, new_layer_cache = layer(x, memory_bias=cache["memory_bias"], cache=layer_cache)
            new_layers.append(new_layer_cache)
        logits = self.output_projection.project(self._final_norm(x, "decoder_norm"))
        return logits[:, 0], {"memory_bias": cache["memory_bias"], "layers": new_layers}

    def get_config(self):
        config = super().get_config()
        config.update(vocab_size=self.vocab_size, **{name: getattr(self, name) for name in _HPARAMS_ARGS})
        return config


def build_transformer(hparams, vocab_size):
    """A Transformer for `hparams` with every weight created (by one call on a one-token batch)."""
    model = Transformer.from_hparams(hparams, vocab_size)
    ones = tf.ones([1, 1], tf.int32)
    model({"inputs": ones, "targets": ones})
    return model
