"""Attention heat maps of a trained run for one sentence, in the manner of the paper's Figures 3-5.

The sentence is encoded with the run's vocabulary and ends in EOS, as the training sources do; it is decoded
by beam search (beam 1 is greedy); then the model runs once, teacher-forced, on (source, decoded output) and
returns every attention layer's weights (`return_attention_scores=True`). Three kinds of maps, for each layer
and head, each a row-stochastic matrix (every row sums to 1 over its columns):

- encoder self-attention: rows (queries) and columns (keys) are the source tokens;
- decoder self-attention: row i is the position that predicts output token i; column j is the decoder's input
  token j, i.e. the outputs shifted right behind `<pad>`, the start symbol (section 3.1). The masked future
  (j > i) is 0;
- encoder-decoder attention: rows as in the decoder self-attention, columns are the source tokens.

Layers and heads are numbered from 1, as the paper's "layer 5 of 6" (Figures 3-5).

    maps = compute_attention_maps(model, vocabulary, "The cat sat on the mat.", DecodeSettings(beam_size=1))
    paths = render_attention_maps(maps, "figures/", layers=[5])
"""

import dataclasses
import math
import os

import tensorflow as tf

from t2t_repro.decode.transformer_search import beam_decode
from t2t_repro.errors import UserError
from t2t_repro.model.transformer import DECODER_SELF_ATTENTION as DECODER_SELF
from t2t_repro.model.transformer import ENCODER_DECODER_ATTENTION as ENCODER_DECODER
from t2t_repro.model.transformer import ENCODER_SELF_ATTENTION as ENCODER_SELF
from t2t_repro.special_tokens import EOS_ID, PAD_ID
from t2t_repro.visualize import new_figure, save_figure

KINDS = (ENCODER_SELF, DECODER_SELF, ENCODER_DECODER)
_TITLES = {
    ENCODER_SELF: "encoder self-attention",
    DECODER_SELF: "decoder self-attention",
    ENCODER_DECODER: "encoder-decoder attention",
}
_AXIS_LABELS = {
    ENCODER_SELF: ("query: source token", "key: source token"),
    DECODER_SELF: ("query: predicting output token", "key: decoder input token"),
    ENCODER_DECODER: ("query: predicting output token", "key: source token"),
}
_GRID_COLUMNS = 4
_CELL_INCHES = 0.32


@dataclasses.dataclass
class AttentionMaps:
    """The attention weights of one teacher-forced pass over a sentence and its decoded output.

    weights: {kind: [per layer, np.ndarray [heads, queries, keys]]} for each of KINDS.
    """

    sentence: str
    translation: str
    source_tokens: list
    output_tokens: list
    decoder_input_tokens: list
    weights: dict

    @property
    def num_layers(self):
        return len(self.weights[ENCODER_SELF])

    @property
    def num_heads(self):
        return self.weights[ENCODER_SELF][0].shape[0]

    def axis_tokens(self, kind):
        """(row tokens, column tokens) of a map of `kind`."""
        rows = self.source_tokens if kind == ENCODER_SELF else self.output_tokens
        columns = self.decoder_input_tokens if kind == DECODER_SELF else self.source_tokens
        return rows, columns


def encode_sentence(sentence, vocabulary, max_length):
    """The sentence's ids ending in EOS; an empty sentence or one longer than `max_length` (if given) is a
    UserError."""
    text = sentence.strip()
    if not text:
        raise UserError("the sentence is empty: give the text to visualise with --sentence")
    ids = list(vocabulary.encode(text)) + [EOS_ID]
    if max_length and len(ids) > max_length:
        raise UserError(f"the sentence has {len(ids)} tokens with EOS; this run's max_length is {max_length}")
    return ids


def decode_output_ids(model, source_ids, settings):
    """The best beam-search output for `source_ids`, up to and including its EOS (when it has one)."""
    ids, _ = beam_decode(model, [source_ids], settings.override(nbest=1))
    output = []
    for token in ids.numpy()[0, 0].tolist():
        if token == PAD_ID:  # never generated: only the padding after a hypothesis' end
            break
        output.append(token)
        if token == EOS_ID:
            break
    return output


def attention_weights(model, source_ids, output_ids):
    """{kind: [per layer, [heads, queries, keys]]} from one teacher-forced pass of the model, without dropout.

    The decoder reads `output_ids` shifted right behind PAD, so its query i is the position that predicts
    `output_ids[i]`."""
    features = {"inputs": tf.constant([source_ids], tf.int32), "targets": tf.constant([output_ids], tf.int32)}
    _, weights = model(features, training=False, return_attention_scores=True)
    return {kind: [layer_weights.numpy()[0] for layer_weights in weights[kind]] for kind in KINDS}


def compute_attention_maps(model, vocabularies, sentence, settings, postprocess=None):
    """Decodes `sentence` with `model` by beam search (DecodeSettings `settings`; sentences longer than its
    max_input_length are refused) and returns its AttentionMaps, the source axis labelled with the source
    vocabulary's pieces and the output axes with the target one's (`vocabularies`, the same when shared);
    `postprocess(decoded, source)` turns the decoded text into the shown translation (a problem's)."""
    source, target = vocabularies.source, vocabularies.target
    source_ids = encode_sentence(sentence, source, settings.max_input_length)
    output_ids = decode_output_ids(model, source_ids, settings)
    pieces = [target.id_to_piece(token) for token in output_ids]
    decoded = target.decode(output_ids)
    return AttentionMaps(
        sentence=sentence.strip(),
        translation=postprocess(decoded, sentence.strip()) if postprocess else decoded,
        source_tokens=[source.id_to_piece(token) for token in source_ids],
        output_tokens=pieces,
        decoder_input_tokens=[target.id_to_piece(PAD_ID)] + pieces[:-1],
        weights=attention_weights(model, source_ids, output_ids),
    )


def _draw(axes, weights, rows, columns, title, axis_labels=None, fontsize=8):
    """One heat map: weights [rows, columns] in [0, 1], the tokens on the axes; returns the image."""
    image = axes.imshow(weights, cmap="viridis", vmin=0.0, vmax=1.0, interpolation="nearest")
    axes.set_xticks(range(len(columns)), labels=columns, rotation=90, fontsize=fontsize)
    axes.set_yticks(range(len(rows)), labels=rows, fontsize=fontsize)
    axes.set_title(title, fontsize=fontsize + 2)
    if axis_labels:
        axes.set_ylabel(axis_labels[0], fontsize=fontsize)
        axes.set_xlabel(axis_labels[1], fontsize=fontsize)
    return image


def head_figure(maps, kind, layer, head):
    """The heat map of one head (numbered from 1) of one layer (numbered from 1)."""
    rows, columns = maps.axis_tokens(kind)
    figure = new_figure(2.2 + _CELL_INCHES * len(columns), 1.8 + _CELL_INCHES * len(rows))
    axes = figure.add_subplot()
    image = _draw(axes, maps.weights[kind][layer - 1][head - 1], rows, columns,
                  f"{_TITLES[kind]}, layer {layer} of {maps.num_layers}, head {head}", _AXIS_LABELS[kind])
    figure.colorbar(image, ax=axes, shrink=0.8)
    return figure


def heads_figure(maps, kind, layer):
    """Every head of one layer side by side, as the paper's figures compare heads."""
    rows, columns = maps.axis_tokens(kind)
    heads = maps.num_heads
    grid_columns = min(heads, _GRID_COLUMNS)
    grid_rows = math.ceil(heads / grid_columns)
    figure = new_figure(grid_columns * (1.2 + 0.22 * len(columns)), grid_rows * (1.2 + 0.22 * len(rows)) + 0.5)
    figure.suptitle(f"{_TITLES[kind]}, layer {layer} of {maps.num_layers}: {maps.sentence}", fontsize=10)
    all_axes = []
    for head in range(1, heads + 1):
        all_axes.append(figure.add_subplot(grid_rows, grid_columns, head))
        image = _draw(all_axes[-1], maps.weights[kind][layer - 1][head - 1], rows, columns, f"head {head}",
                      fontsize=6)
    figure.colorbar(image, ax=all_axes, shrink=0.6)
    return figure


def heat_map_path(out_dir, kind, layer, head=None):
    """out_dir/<kind>_layer<L>_head<H>.png for one head, out_dir/<kind>_layer<L>_heads.png for all of them."""
    suffix = f"head{head}" if head is not None else "heads"
    return os.path.join(out_dir, f"{kind}_layer{layer}_{suffix}.png")


def render_attention_maps(maps, out_dir, layers=None):
    """Writes, for each kind and each of `layers` (numbered from 1; default all), one PNG per head and one
    with all heads; returns the paths written."""
    layers = list(range(1, maps.num_layers + 1)) if layers is None else list(layers)
    bad = [layer for layer in layers if not 1 <= layer <= maps.num_layers]
    if bad:
        raise UserError(f"layer {bad[0]}: this model's layers are numbered 1 to {maps.num_layers}")
    paths = []
    for kind in KINDS:
        for layer in layers:
            for head in range(1, maps.num_heads + 1):
                paths.append(save_figure(head_figure(maps, kind, layer, head), heat_map_path(out_dir, kind, layer,
                                                                                              head)))
            paths.append(save_figure(heads_figure(maps, kind, layer), heat_map_path(out_dir, kind, layer)))
    return paths

