"""Encoder and decoder layers (section 3.1), built from residual sub-layer connections."""

import keras

from t2t_repro.model.attention import MultiHeadAttention, call_outputs
from t2t_repro.model.built_by_call import BuiltByCall
from t2t_repro.model.config import HParamsConfig
from t2t_repro.model.dropout import Dropout
from t2t_repro.model.feed_forward import FeedForward
from t2t_repro.model.layer_norm import LayerNormalization


class SublayerConnection(BuiltByCall, keras.layers.Layer):
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
        self.norm = LayerNormalization(epsilon=layer_norm_epsilon, name="norm", dtype=self.dtype_policy)
        self.residual_dropout = Dropout(dropout, dtype=self.dtype_policy)

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


class _TransformerLayer(HParamsConfig, BuiltByCall, keras.layers.Layer):
    """What the encoder and decoder layers share: the feed-forward sub-layer, built from one HParams. Sub-layers
    take this layer's dtype policy (mixed precision).

    Args:
        hparams: a `t2t_repro.hparams_type.HParams`; the layer reads d_model, d_ff, num_heads, d_k, d_v,
            dropout, attention_dropout, attention_bias, relu_dropout, norm_placement and layer_norm_epsilon.
    """

    def __init__(self, hparams, **kwargs):
        super().__init__(**kwargs)
        self.hparams = hparams
        self.feed_forward = FeedForward(
            hparams.d_model, hparams.d_ff, hparams.relu_dropout, name="feed_forward", dtype=self.dtype_policy
        )

    def _attention(self, self_attention, name):
        h = self.hparams
        return MultiHeadAttention(
            h.num_heads, h.d_k, h.d_v, h.d_model, h.attention_dropout, self_attention, h.attention_bias, name=name,
            dtype=self.dtype_policy,
        )

    def _connection(self, name):
        h = self.hparams
        return SublayerConnection(h.dropout, h.norm_placement, h.layer_norm_epsilon, name=name,
                                  dtype=self.dtype_policy)

    @staticmethod
    def _attend(connection, attention, x, side, name, training, **attention_args):
        """`x` through `connection` around `attention`: the weights go to side[name] and the new self-attention
        cache, when `attention_args` holds one, to side["cache"]."""

        def sublayer(h):
            outputs = attention(h, training=training, return_attention_scores=True, **attention_args)
            if attention_args.get("cache") is not None:
                side["cache"] = outputs[1]
            side[name] = outputs[-1]
            return outputs[0]

        return connection(x, sublayer=sublayer, training=training)

    def _feed_forward(self, x, training):
        return self.feed_forward_connection(
            x, sublayer=lambda h: self.feed_forward(h, training=training), training=training
        )


class EncoderLayer(_TransformerLayer):
    """One encoder layer: multi-head self-attention, then the feed-forward network (section 3.1).

    Args:
        hparams: the model's HParams (see `_TransformerLayer`).

    Call arguments:
        x: [batch, source_length, d_model].
        bias: padding bias of the source, [batch, 1, 1, source_length].
        training: enables dropout.
        return_attention_scores: also return the self-attention weights [batch, h, source_length,
            source_length]: (output, weights).
    """

    def __init__(self, hparams, **kwargs):
        super().__init__(hparams, **kwargs)
        self.self_attention = self._attention(True, "self_attention")
        self.attention_connection = self._connection("self_attention_connection")
        self.feed_forward_connection = self._connection("feed_forward_connection")

    def call(self, x, bias=None, training=None, return_attention_scores=False):
        side = {}
        x = self._attend(self.attention_connection, self.self_attention, x, side, "self", training, bias=bias)
        x = self._feed_forward(x, training)
        return call_outputs(x, attention_scores=side["self"] if return_attention_scores else None)


class DecoderLayer(_TransformerLayer):
    """One decoder layer: masked self-attention, attention over the encoder output, feed-forward (section 3.1).

    Args:
        hparams: the model's HParams (see `_TransformerLayer`).

    Call arguments:
        x: [batch, target_length, d_model].
        memory: the encoder output [batch, source_length, d_model], or this layer's
            `cross_attention.memory_kv(memory)` when decoding one position at a time (once per sentence, for
            x's consecutive rows of the sentence's beams; memory_bias then also per sentence).
        self_bias: causal bias over the targets (None when decoding one position with a cache).
        memory_bias: padding bias of the source.
        cache: the self-attention {"k", "v"} of the earlier positions, for incremental decoding, growing or
            preallocated (see `MultiHeadAttention`).
        cache_index: with a preallocated cache, the positions already written (self_bias: `unwritten_bias`).
        training: enables dropout.
        return_attention_scores: also return {"self": weights, "cross": weights}.

    Returns the output; with a cache, (output, new cache); with `return_attention_scores`, the weights last.
    """

    def __init__(self, hparams, **kwargs):
        super().__init__(hparams, **kwargs)
        self.self_attention = self._attention(True, "self_attention")
        self.cross_attention = self._attention(False, "cross_attention")
        self.self_attention_connection = self._connection("self_attention_connection")
        self.cross_attention_connection = self._connection("cross_attention_connection")
        self.feed_forward_connection = self._connection("feed_forward_connection")

    def call(
        self, x, memory=None, self_bias=None, memory_bias=None, cache=None, cache_index=None, training=None,
        return_attention_scores=False,
    ):
        side = {}
        x = self._attend(
            self.self_attention_connection, self.self_attention, x, side, "self", training, bias=self_bias, cache=cache,
            cache_index=cache_index,
        )
        x = self._attend(
            self.cross_attention_connection, self.cross_attention, x, side, "cross", training, memory=memory,
            bias=memory_bias,
        )
        x = self._feed_forward(x, training)
        scores = {"self": side["self"], "cross": side["cross"]} if return_attention_scores else None
        return call_outputs(x, side.get("cache"), scores)
