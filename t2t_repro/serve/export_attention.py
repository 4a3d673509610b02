"""The `attention` signature of a SavedModel export: each translation with its encoder-decoder attention.

    inputs: string [batch] -> outputs, scores (as serving_default), source_pieces: string [batch, source],
                              target_pieces: string [batch, (nbest,) target],
                              attention: float [batch, (nbest,) layers, heads, target, source]

The weights are those `t2t-repro-visualize` draws (`t2t_repro.visualize.attention_maps.attention_weights`): after
the beam search, the model runs once, teacher-forced, on the source and each hypothesis up to its EOS, and
returns the weights of every encoder-decoder attention layer: row i is the position that predicts target piece
i, column j is source piece j (EOS included). Pieces past a source's or a hypothesis' end are "" and their
weights 0; t2t-repro-serve trims them (`t2t_repro.serve.attention_output`). serving_default does none of this:
the weights cost only the requests that ask for this signature.
"""

import tensorflow as tf

from t2t_repro.model.transformer import ENCODER_DECODER_ATTENTION
from t2t_repro.serve.export_files import ATTENTION_NAME, SOURCE_PIECES_NAME, TARGET_PIECES_NAME
from t2t_repro.special_tokens import EOS_ID, PAD_ID


def attention_signature_note(nbest):
    """The signature's line in the export metadata."""
    hypotheses = "" if nbest == 1 else f"{nbest}, "
    return (f"inputs: string [batch] -> outputs, scores (as serving_default), source_pieces: string [batch, source], "
            f"target_pieces: string [batch, {hypotheses}target], attention: float [batch, {hypotheses}layers, heads, "
            "target, source] (encoder-decoder, teacher-forced on each output)")


def _pieces(tokenizer, ids):
    """The piece strings of ids [..., length], "" where PAD."""
    return tf.where(tf.equal(ids, PAD_ID), tf.constant(""), tokenizer.id_to_string(ids))


def _up_to_eos(ids):
    """ids [rows, length] with every position after the first EOS set to PAD."""
    eos_before = tf.cumsum(tf.cast(tf.equal(ids, EOS_ID), tf.int32), axis=1, exclusive=True)
    return tf.where(eos_before > 0, tf.constant(PAD_ID, ids.dtype), ids)


def attention_function(model, source_tokenizer, target_tokenizer):
    """`extra_outputs(source_ids [batch, source], ids [batch, (nbest,) length])` -> the signature's extra outputs,
    for the export's `translate` (`t2t_repro.serve.export`)."""

    def extra_outputs(source_ids, ids):
        one_best = ids.shape.rank == 2
        hypotheses = ids[:, tf.newaxis] if one_best else ids  # [batch, nbest, length]
        shape = tf.shape(hypotheses)
        batch, nbest, length = shape[0], shape[1], shape[2]
        targets = _up_to_eos(tf.reshape(hypotheses, [-1, length]))
        sources = tf.repeat(source_ids, nbest, axis=0)
        _, weights = model({"inputs": sources, "targets": targets}, training=False, return_attention_scores=True)
        layers = tf.stack([tf.cast(w, tf.float32) for w in weights[ENCODER_DECODER_ATTENTION]], axis=1)
        source_length = tf.shape(source_ids)[1]
        layers = tf.reshape(layers, tf.concat([[batch, nbest], tf.shape(layers)[1:3], [length, source_length]], 0))
        target_pieces = tf.reshape(_pieces(target_tokenizer, targets), [batch, nbest, length])
        if one_best:
            layers, target_pieces = layers[:, 0], target_pieces[:, 0]
        return {SOURCE_PIECES_NAME: _pieces(source_tokenizer, source_ids), TARGET_PIECES_NAME: target_pieces,
                ATTENTION_NAME: layers}

    return extra_outputs
