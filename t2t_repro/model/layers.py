"""Encoder and decoder layers (section 3.1), built from residual sub-layer connections."""

import keras

from t2t_repro.model.attention import MultiHeadAttention
from t2t_repro.model.feed_forward import FeedForward
from t2t_repro.model.layer_norm import LayerNormalization


class SublayerConnection(keras.layers.Layer):
    """Wraps a sub-layer with residual dropout, the residual add and layer normalization.

    "post" is the paper's `LayerNorm(x + Dropout(Sublayer(x)))` (sections 3.1 and 5.4); "pre" is the later
    `x + Dropout(Sublayer(LayerNorm(x)))`, offered as an option and off in every paper set.

    Args:
        dropout: P_drop, applied to the sub-layer output before the add.
        norm_placement: "post" or "pre".
        layer_norm_epsilon: epsilon of the layer normalization.

    Call arguments:
        x: the sub-layer input.
        sublayer: a callable from the (maybe normalized) input to the sub-layer output.
        training: enables dropout.
    """

    def __init__(self, dropout=0.1, norm_placement="post", layer_norm_epsilon=1e-6, **kwargs):
        super().__init__(**kwargs)
        if norm_placement not in ("post", "pre"):
            raise ValueError(f"unknown norm placement {norm_placement!r}")
        self.dropout = dropout
        self.norm_placement = norm_placement
        self.layer_norm_epsilon = layer_norm_epsilon
        self.norm = LayerNormalization(epsilon=layer_norm_epsilon, name="norm")
        self.residual_dropout = keras.layers.Dropout(dropout)

    def call(self, x, sublayer, training=None):
        if self.norm_placement == "pre":
            return x + self.residual_dropout(sublayer(self.norm(x)), training=training)
        return self.norm(x + self.residual_dropout(sublayer(x), training=training))

    def get_config(self):
        config = super().get_config()
        config.update(
            dropout=self.dropout, norm_placement=self.norm_placement, layer_norm_epsilon=self.layer_norm_epsilon
        )
        return config


class _TransformerLayer(keras.layers.Layer):
    """Shared constructor arguments and config of the encoder and decoder layers."""

    def __init__(
        self,
        d_model,
        d_ff,
        num_heads,
        d_k,
        d_v,
        dropout=0.1,
        attention_dropout=0.0,
        relu_dropout=0.0,
        norm_placement="post",
        layer_norm_epsilon=1e-6,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.d_model = d_model
        self.d_ff = d_ff
        self.num_heads = num_heads
        self.d_k = d_k
        self.d_v = d_v
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.relu_dropout = relu_dropout
        self.norm_placement = norm_placement
        self.layer_norm_epsilon = layer_norm_epsilon
        self.feed_forward = FeedForward(d_model, d_ff, relu_dropout, name="feed_forward")

    def _attention(self, self_attention, name):
        return MultiHeadAttention(
            self.num_heads, self.d_k, self.d_v, self.d_model, self.attention_dropout, self_attention, name=name
        )

    def _connection(self, name):
        return SublayerConnection(self.dropout, self.norm_placement, self.layer_norm_epsilon, name=name)

    def get_config(self):
        config = super().get_config()
        config.update(
            d_model=self.d_model,
            d_ff=self.d_ff,
            num_heads=self.num_heads,
            d_k=self.d_k,
            d_v=self.d_v,
            dropout=self.dropout,
            attention_dropout=self.attention_dropout,
            relu_dropout=self.relu_dropout,
            norm_placement=self.norm_placement,
            layer_norm_epsilon=self.layer_norm_epsilon,
        )
        return config


class EncoderLayer(_TransformerLayer):
    """One encoder layer: multi-head self-attention, then the feed-forward network (section 3.1).

    Args: see `_TransformerLayer` (d_model, d_ff, num_heads, d_k, d_v, dropout, attention_dropout,
        relu_dropout, norm_placement, layer_norm_epsilon).

    Call arguments:
        x: [batch, source_length, d_model].
        bias: padding bias of the source, [batch, 1, 1, source_length].
        training: enables dropout.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.self_attention = self._attention(True, "self_attention")
        self.attention_connection = self._connection("self_attention_connection")
        self.feed_forward_connection = self._connection("feed_forward_connection")

    def call(self, x, bias=None, training=None):
        x = self.attention_connection(
            x, sublayer=lambda h: self.self_attention(h, bias=bias, training=training), training=training
        )
        return self.feed_forward_connection(
            x, sublayer=lambda h: self.feed_forward(h, training=training), training=training
        )


class DecoderLayer(_TransformerLayer):
    """One decoder layer: masked self-attention, attention over the encoder output, feed-forward (section 3.1).

    Args: as `EncoderLayer`.

    Call arguments:
        x: [batch, target_length, d_model].
        memory: the encoder output, [batch, source_length, d_model].
        self_bias: causal bias over the targets (None when decoding one position with a cache).
        memory_bias: padding bias of the source.
        cache: {"self": {"k", "v"}, "cross": {"k", "v"}} for incremental decoding; with a cache the call
            returns (output, new_cache).
        training: enables dropout.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.self_attention = self._attention(True, "self_attention")
        self.cross_attention = self._attention(False, "cross_attention")
        self.self_attention_connection = self._connection("self_attention_connection")
        self.cross_attention_connection = self._connection("cross_attention_connection")
        self.feed_forward_connection = self._connection("feed_forward_connection")

    def call(self, x, memory=None, self_bias=None, memory_bias=None, cache=None, training=None):
        new_cache = {}

        def self_attend(h):
            if cache is None:
                return self.self_attention(h, bias=self_bias, training=training)
            out, new_cache["self"] = self.self_attention(h, bias=self_bias, cache=cache["self"], training=training)
            return out

        def cross_attend(h):
            if cache is None:
                return self.cross_attention(h, memory=memory, bias=memory_bias, training=training)
            new_cache["cross"] = cache["cross"]
            return self.cross_attention(h, bias=memory_bias, cache=cache["cross"], training=training)[0]

        x = self.self_attention_connection(x, sublayer=self_attend, training=training)
        x = self.cross_attention_connection(x, sublayer=cross_attend, training=training)
        x = self.feed_forward_connection(
            x, sublayer=lambda h: self.feed_forward(h, training=training), training=training
        )
        if cache is None:
            return x
        return x, new_cache
