"""A trained Transformer as a CTranslate2 model specification, built with ctranslate2's own specification API.

    spec = transformer_spec(model, vocabulary, positions=306)
    spec.validate(); spec.optimize(quantization="int8"); spec.save(directory)

(`t2t_repro.serve.ctranslate2_export` does this for an export version.) The network is the paper's, layer by
layer: post-norm sub-layers, LayerNorm(x + Sublayer(x)) (section 3.1; pre-norm models map to CTranslate2's
pre-norm layout with its final normalizations), embeddings times sqrt(d_model) (section 3.4), one matrix for
both embeddings and the pre-softmax projection when the model shares them, ReLU feed-forward networks
(section 3.3), and the attention projections with biases only when the model has them (attention_bias;
equation 4 has none). The position encodings are given to CTranslate2 as a table: this project's sinusoids
interleave sines and cosines (section 3.5), where CTranslate2's built-in ones put them in two halves and
start at position 1, so the built-in ones are not used; learned positions (Table 3 row E) are their table.

The tokens are SentencePiece's pieces; a source ends with the EOS piece "</s>", as in training (given by the
caller: CTranslate2 appends nothing, so token-id inputs are read exactly as given). The decoder starts from
PAD (the targets are shifted right with it), which becomes CTranslate2's decoder_start_token. Embedding rows
past the vocabulary (hparams.vocab_multiple) are never read nor predicted and are left out.

This module imports ctranslate2 and is imported only by the code paths that export or run such a model; the
settings CTranslate2 cannot express are listed by `unsupported_settings`, which needs no ctranslate2.
"""

import numpy as np
from ctranslate2.specs import transformer_spec as ct2_transformer

from t2t_repro.model.embedding import sinusoid_position_encoding
from t2t_repro.special_tokens import EOS_ID, PAD_ID, UNK_ID


def unsupported_settings(hparams):
    """The model settings a CTranslate2 Transformer cannot express, each as "name=value: why" ([] if none)."""
    problems = []
    if hparams.d_k != hparams.d_v:
        problems.append(f"d_k={hparams.d_k} with d_v={hparams.d_v}: CTranslate2's attention heads have one width "
                        "for queries, keys and values")
    return problems


def _array(variable):
    """A Keras variable as a float32 numpy array (the master weights, float32 under mixed precision too)."""
    return np.asarray(variable.numpy(), dtype=np.float32)


def _linear(spec, dense):
    """Fills a LinearSpec from a Keras Dense layer: CTranslate2 multiplies by weight^T, Keras by its kernel."""
    spec.weight = np.ascontiguousarray(_array(dense.kernel).T)
    if dense.use_bias:
        spec.bias = _array(dense.bias)


def _layer_norm(spec, norm):
    spec.gamma = _array(norm.gamma)
    spec.beta = _array(norm.beta)


def _self_attention(spec, attention, connection):
    """Q, K and V are fused in both (their outputs in the order Q, K, V, each heads-major), as is the
    normalization of the residual connection around them."""
    _linear(spec.linear[0], attention.qkv_dense)
    _linear(spec.linear[1], attention.output_dense)
    _layer_norm(spec.layer_norm, connection.norm)


def _cross_attention(spec, attention, connection):
    """The query projection, the fused key/value projection of the encoder output (K then V), the output."""
    _linear(spec.linear[0], attention.q_dense)
    _linear(spec.linear[1], attention.kv_dense)
    _linear(spec.linear[2], attention.output_dense)
    _layer_norm(spec.layer_norm, connection.norm)


def _feed_forward(spec, layer):
    _linear(spec.linear_0, layer.feed_forward.inner)
    _linear(spec.linear_1, layer.feed_forward.outer)
    _layer_norm(spec.layer_norm, layer.feed_forward_connection.norm)


def position_table(model, layer, positions):
    """The position encodings [positions, d_model] that `layer` (the model's source_positions or
    target_positions) adds to the embeddings of positions 0, 1, ...: the sinusoids (section 3.5), or its
    learned table (all its max_position rows)."""
    if model.hparams.position_encoding == "learned":
        return _array(layer.position_embeddings)
    return np.asarray(sinusoid_position_encoding(positions, model.hparams.d_model).numpy(), dtype=np.float32)


def vocabulary_tokens(vocabulary):
    """The SentencePiece pieces of every id, in id order: the CTranslate2 vocabulary."""
    return [vocabulary.id_to_piece(token) for token in range(vocabulary.vocab_size)]


def transformer_spec(model, vocabularies, positions):
    """A `ctranslate2.specs.TransformerSpec` holding the weights of `model` (a t2t_repro Transformer).

    Args:
        model: the trained Transformer; its hparams must pass `unsupported_settings`.
        vocabularies: its `Vocabularies` (their pieces become CTranslate2's source and target vocabularies).
        positions: rows of the sinusoid table: the longest source or output, in tokens, it will read.
    """
    h = model.hparams
    pre_norm = h.norm_placement == "pre"
    head_dim = None if h.num_heads * h.d_k == h.d_model else h.d_k
    layers = dict(num_layers=h.num_layers, num_heads=h.num_heads, pre_norm=pre_norm, head_dim=head_dim)
    encoder = ct2_transformer.TransformerEncoderSpec(**layers)
    decoder = ct2_transformer.TransformerDecoderSpec(**layers)
    rows = vocabularies.target.vocab_size

    encoder.embeddings[0].weight = _array(model.source_embedding.embeddings)[:vocabularies.source.vocab_size]
    encoder.position_encodings.encodings = position_table(model, model.source_positions, positions)
    for spec, layer in zip(encoder.layer, model.encoder_layers):
        _self_attention(spec.self_attention, layer.self_attention, layer.attention_connection)
        _feed_forward(spec.ffn, layer)

    target_embedding = _array(model.target_embedding.embeddings)[:rows]
    decoder.embeddings.weight = target_embedding
    decoder.position_encodings.encodings = position_table(model, model.target_positions, positions)
    decoder.projection.weight = (target_embedding if model.output_projection is model.target_embedding
                                 else _array(model.output_projection.embeddings)[:rows])
    for spec, layer in zip(decoder.layer, model.decoder_layers):
        _self_attention(spec.self_attention, layer.self_attention, layer.self_attention_connection)
        _cross_attention(spec.attention, layer.cross_attention, layer.cross_attention_connection)
        _feed_forward(spec.ffn, layer)
    if pre_norm:
        _layer_norm(encoder.layer_norm, model.encoder_norm)
        _layer_norm(decoder.layer_norm, model.decoder_norm)

    spec = ct2_transformer.TransformerSpec(encoder, decoder)
    tokens = vocabulary_tokens(vocabularies.target)
    spec.register_source_vocabulary(vocabulary_tokens(vocabularies.source))
    spec.register_target_vocabulary(tokens)
    config = spec.config
    config.layer_norm_epsilon = float(h.layer_norm_epsilon)
    config.unk_token = tokens[UNK_ID]
    config.eos_token = tokens[EOS_ID]
    config.bos_token = config.decoder_start_token = tokens[PAD_ID]  # the decoder's start symbol is PAD
    config.add_source_bos = False
    config.add_source_eos = False  # sources end with EOS as given, as the training data's do
    return spec

