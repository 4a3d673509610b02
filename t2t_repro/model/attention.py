"""Multi-head scaled dot-product attention with a key/value cache (section 3.2)."""

import keras
import tensorflow as tf

from t2t_repro.model.built_by_call import BuiltByCall
from t2t_repro.model.dropout import Dropout

# Added to the logits of masked positions. Large enough that exp() underflows to exactly 0 in float32, the
# paper's "set to -inf" without producing NaN for a row whose every key is masked.
MASK_VALUE = -1e9


def padding_bias(ids, pad_id=0):
    """Attention bias [batch, 1, 1, length] that masks the keys at padding positions (section 3.2.3)."""
    mask = tf.cast(tf.equal(ids, pad_id), tf.float32)
    return mask[:, tf.newaxis, tf.newaxis, :] * MASK_VALUE


def causal_bias(length):
    """Attention bias [1, 1, length, length] that hides future positions from each query (section 3.2.3)."""
    future = 1.0 - tf.linalg.band_part(tf.ones([length, length]), -1, 0)
    return future[tf.newaxis, tf.newaxis] * MASK_VALUE


def scaled_dot_product_attention(q, k, v, bias=None, weights_dropout=None):
    """softmax(Q K^T / sqrt(d_k)) V per head (section 3.2.1, equation 1).

    q: [batch, h, query_length, d_k]; k: [batch, h, key_length, d_k]; v: [batch, h, key_length, d_v];
    bias: additive, broadcastable to [batch, h, query_length, key_length];
    weights_dropout: optional callable applied to the attention weights before they weigh the values.
    Returns (output [batch, h, query_length, d_v], weights [batch, h, query_length, key_length]). The softmax
    is computed in float32 whatever the dtype of q, k and v (mixed precision), and its weights are float32.

    Heads come before positions, so both products are batched matmuls without transposes inside. Q K^T is an
    einsum, not a MatMul, which oneDNN would fuse with the mask's addition into a kernel rebuilt for every length.
    """
    logits = tf.einsum("bhqd,bhkd->bhqk", q * (q.shape[-1] ** -0.5), k)
    if logits.dtype != tf.float32:  # mixed precision: the softmax in float32
        logits = tf.cast(logits, tf.float32)
    if bias is not None:
        logits += _float32_bias(bias)
    weights = tf.nn.softmax(logits)
    dropped = weights_dropout(weights) if weights_dropout is not None else weights
    return tf.matmul(tf.cast(dropped, v.dtype), v), weights


def _float32_bias(bias):
    """The bias in float32. Keras casts a mixed-precision layer's float inputs to its compute dtype, where
    MASK_VALUE is -inf in float16: clamp it back, so that a row whose every key is masked has no NaN."""
    if bias.dtype == tf.float32:
        return bias
    return tf.maximum(tf.cast(bias, tf.float32), MASK_VALUE)


def _fold_rows(q, rows_per_memory):
    """Queries [g * n, h, length, d] of n memory rows, g consecutive rows to each (the beams of a sentence in
    beam search, section 6.1), as [n, h, g * length, d]: one attention per memory row reads its keys and
    values once for all g, instead of once per row from g copies. g = 1 changes nothing."""
    shape = tf.shape(q)
    grouped = tf.reshape(q, [-1, rows_per_memory, shape[1], shape[2], shape[3]])
    return tf.reshape(tf.transpose(grouped, [0, 2, 1, 3, 4]), [-1, shape[1], rows_per_memory * shape[2], shape[3]])


def _unfold_rows(x, rows_per_memory, length):
    """Inverse of `_fold_rows` for an attention result [n, h, g * length, d], heads last: [g * n, length, h, d]."""
    shape = tf.shape(x)
    grouped = tf.reshape(x, [shape[0], shape[1], rows_per_memory, length, shape[3]])
    return tf.reshape(tf.transpose(grouped, [0, 2, 3, 1, 4]), [-1, length, shape[1], shape[3]])


def empty_cache(rows, num_heads, d_k, d_v, length, dtype):
    """A self-attention cache for incremental decoding: {"k": [rows, h, length, d_k], "v": [rows, h, length,
    d_v]} zeros. Length 0: it grows by one position a call; length n: preallocated to the n positions the
    decoder will read at most, written in place (`write_positions`) with fixed shapes."""
    return {"k": tf.zeros([rows, num_heads, length, d_k], dtype), "v": tf.zeros([rows, num_heads, length, d_v], dtype)}


def write_positions(cache, values, index):
    """`cache` [batch, h, length, d] with `values` [batch, h, 1, d] written at position `index`: one scatter of
    a [batch, h] grid of d-vectors, the same shapes at every step, in place where XLA compiles it."""
    shape = tf.shape(cache)
    rows, heads = tf.meshgrid(tf.range(shape[0]), tf.range(shape[1]), indexing="ij")
    indices = tf.stack([rows, heads, tf.fill(tf.shape(rows), index)], axis=-1)
    return tf.tensor_scatter_nd_update(cache, indices, values[:, :, 0])


def unwritten_bias(index, length):
    """Attention bias [length] that masks the positions of a preallocated cache from `index` on (not written
    yet): their weights underflow to exactly 0."""
    return tf.where(tf.range(length) < index, 0.0, MASK_VALUE)


def call_outputs(output, cache=None, attention_scores=None):
    """A layer's call result: `output` alone, or a tuple of it and, in this order, the new cache and the
    attention scores, each where not None."""
    extras = tuple(x for x in (cache, attention_scores) if x is not None)
    return (output, *extras) if extras else output


class MultiHeadAttention(BuiltByCall, keras.layers.Layer):
    """Multi-head attention, `Concat(head_1..head_h) W^O` with `head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)`.

    Section 3.2.2, with separate per-head query/key width `d_k` and value width `d_v` (Table 3 rows A, B).
    The projections W^Q, W^K, W^V and W^O are matrices, without biases, as in equation 4 (and tensor2tensor);
    `use_bias=True` adds a bias to each (the Keras Dense default this project used before).
    The per-head projections are fused into one matrix multiply: Q, K and V together for self-attention,
    K and V together over the memory for encoder-decoder attention.

    Args:
        num_heads: h.
        d_k: query and key width per head.
        d_v: value width per head.
        d_model: output width.
        attention_dropout: dropout rate on the attention weights (0 in the paper).
        self_attention: True when queries, keys and values come from the same sequence.
        use_bias: add biases to the projections (not in equation 4).

    Call arguments:
        query: [batch, query_length, d_model].
        memory: encoder-decoder attention only: the encoder output [batch, key_length, d_model], or its keys
            and values `memory_kv(memory)`, computed once per sentence for incremental decoding; then the query
            may hold g rows per sentence (its beams, consecutive), and the bias is per sentence.
        bias: additive attention bias broadcastable to [batch, h, query_length, key_length].
        cache: self-attention only, for incremental decoding (`empty_cache`): {"k", "v"} [batch, h, t, d] of the
            earlier positions, to which the new positions' keys and values are appended; or, with
            `cache_index`, preallocated to the most positions [batch, h, max_length, d], of which the first
            `cache_index` hold the earlier positions: the new one (decoding feeds one position at a time) is
            written after them, and `bias` must mask the positions not written yet (`unwritten_bias`). The
            second has the same shapes at every step (XLA compiles it, writing in place); the first has the
            numbers of the decoder without a cache, and without XLA it is the faster (no in-place writes: a
            preallocated cache is copied whole at every write).
        cache_index: int32 scalar, the positions of a preallocated cache already written.
        training: enables dropout.
        return_attention_scores: also return the attention weights [batch, h, query_length, key_length]
            (before dropout), e.g. for the paper's Figures 3-5.

    Returns the output [batch, query_length, d_model]; with a cache, (output, new cache); with
    `return_attention_scores`, the weights come last: (output, weights) or (output, new cache, weights).

    Example:
        >>> layer = MultiHeadAttention(num_heads=8, d_k=64, d_v=64, d_model=512)
        >>> layer(tf.zeros([2, 5, 512])).shape
        TensorShape([2, 5, 512])
    """

    def __init__(
        self, num_heads, d_k, d_v, d_model, attention_dropout=0.0, self_attention=True, use_bias=False, **kwargs
    ):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.d_k = d_k
        self.d_v = d_v
        self.d_model = d_model
        self.attention_dropout = attention_dropout
        self.self_attention = self_attention
        self.use_bias = use_bias
        keys_values = num_heads * (d_k + d_v)
        dense = dict(use_bias=use_bias, dtype=self.dtype_policy)
        if self_attention:
            self.qkv_dense = keras.layers.Dense(num_heads * d_k + keys_values, name="qkv", **dense)
        else:
            self.q_dense = keras.layers.Dense(num_heads * d_k, name="q", **dense)
            self.kv_dense = keras.layers.Dense(keys_values, name="kv", **dense)
        self.output_dense = keras.layers.Dense(d_model, name="output", **dense)
        self.weights_dropout = Dropout(attention_dropout, dtype="float32")  # on float32 weights

    def _split_heads(self, x, depth):
        """[batch, length, h * depth] -> [batch, h, length, depth]."""
        shape = tf.shape(x)
        return tf.transpose(tf.reshape(x, [shape[0], shape[1], self.num_heads, depth]), [0, 2, 1, 3])

    def _split_parts(self, x, depths):
        """[batch, length, h * sum(depths)] -> one [batch, h, length, depth] tensor per depth.

        With equal depths, one transpose puts every part heads-major and unstacking hands the parts out without
        copying, so the data moves once instead of twice (a split, then one transpose per part)."""
        if len(set(depths)) > 1:
            parts = tf.split(x, [self.num_heads * depth for depth in depths], axis=-1)
            return [self._split_heads(part, depth) for part, depth in zip(parts, depths)]
        shape = tf.shape(x)
        x = tf.reshape(x, [shape[0], shape[1], len(depths), self.num_heads, depths[0]])
        return tf.unstack(tf.transpose(x, [2, 0, 3, 1, 4]), axis=0)

    def _keys_values(self, x):
        k, v = self._split_parts(self.kv_dense(x), [self.d_k, self.d_v])
        return {"k": k, "v": v}

    def memory_kv(self, memory):
        """The encoder-decoder keys and values of `memory`, computed once for incremental decoding. Called with
        them, the layer takes g consecutive query rows to each memory row (the beams of a sentence)."""
        return self._keys_values(memory)

    def call(self, query, memory=None, bias=None, cache=None, cache_index=None, training=None,
             return_attention_scores=False):
        if self.self_attention:
            q, k, v = self._split_parts(self.qkv_dense(query), [self.d_k, self.d_k, self.d_v])
            kv = {"k": k, "v": v}
            if cache is not None and cache_index is None:
                kv = {name: tf.concat([cache[name], kv[name]], axis=2) for name in ("k", "v")}
            elif cache is not None:
                kv = {name: write_positions(cache[name], kv[name], cache_index) for name in ("k", "v")}
        else:
            q = self._split_heads(self.q_dense(query), self.d_k)
            kv = memory if isinstance(memory, dict) else self._keys_values(memory)
        rows_per_memory = None
        if isinstance(memory, dict):  # keys and values computed once per sentence, shared by its beams' queries
            rows_per_memory = tf.shape(q)[0] // tf.shape(kv["k"])[0]
            q = _fold_rows(q, rows_per_memory)
        heads, weights = scaled_dot_product_attention(
            q,
            kv["k"],
            kv["v"],
            bias,
            weights_dropout=lambda w: self.weights_dropout(w, training=training),
        )
        if rows_per_memory is None:
            heads = tf.transpose(heads, [0, 2, 1, 3])
        else:
            query_length = tf.shape(query)[1]
            heads = _unfold_rows(heads, rows_per_memory, query_length)
            if return_attention_scores:
                weights = tf.transpose(_unfold_rows(weights, rows_per_memory, query_length), [0, 2, 1, 3])
        shape = tf.shape(heads)  # [batch, query_length, h, d_v]
        output = self.output_dense(tf.reshape(heads, [shape[0], shape[1], self.num_heads * self.d_v]))
        return call_outputs(output, kv if cache is not None else None, weights if return_attention_scores else None)

    def get_config(self):
        config = super().get_config()
        config.update(
            num_heads=self.num_heads,
            d_k=self.d_k,
            d_v=self.d_v,
            d_model=self.d_model,
            attention_dropout=self.attention_dropout,
            self_attention=self.self_attention,
            use_bias=self.use_bias,
        )
        return config
