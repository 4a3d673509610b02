"""SavedModel export of a trained model: text in, text out, with the SentencePiece tokenizer inside the graph.

    path = export_saved_model(model, vocabularies, settings, "runs/wmt_ende/export", description)   # -> .../export/3

(`t2t_repro.run.jobs.export` does this for a run directory.)

The SavedModel has two signatures:

- `serving_default`: inputs tf.string [batch] (raw source sentences) -> outputs tf.string [batch] (the decoded
  target sentences) and scores float32 [batch] (log-probability / length penalty, section 6.1);
- `ids`: inputs int32 [batch, length] (source ids as the model reads them: each row ends in EOS = 1 and is
  padded with PAD = 0) -> outputs int32 [batch, length] (target ids ending in EOS, then PAD) and scores.

Exported with nbest N > 1, each example gets its N best hypotheses, best first, as `t2t-repro-decoder --nbest=N`
lists them: outputs tf.string [batch, N] and scores [batch, N] (`ids`: outputs int32 [batch, N, length]). A
1-best export keeps the shapes above.

Sentences are encoded the way the training data was (`t2t_repro.data.text_problem`): surrounding whitespace
removed, SentencePiece ids of the source vocabulary, EOS appended; outputs are detokenized with the target
vocabulary (the same one when shared, section 5.1). Bytes that are not UTF-8 become U+FFFD in the graph, which
has no way to refuse one string of a batch; the project's tools refuse such text before it reaches a model (the
decoder names the line, t2t-repro-serve answers 400). As in `t2t-repro-decoder`, a source longer than
`max_input_length` tokens (EOS included; default the run's hparams.max_length) is truncated and an empty
source gives "" with score 0.0. Decoding is the project's beam search
(`t2t_repro.decode.transformer_search.search`) with the settings fixed at export time (default: the problem's,
section 6.1 / 6.3), so the export answers as `t2t-repro-decoder` does.

The graph returns the raw decoded target string. For translation that is the translation. For parsing it is
the linearised tree: turning it into a PTB tree on the source words (`problem.postprocess`) happens outside
the graph, e.g. with `t2t_repro.data.ptb_tree.delinearise(output, source.split())`.

The graph needs only TensorFlow and the tensorflow-text ops (`import tensorflow_text` before loading): no
Python code of this project. Exports are versioned the way TensorFlow Serving expects (`export_dir/<N>/`,
integers, increasing; see `t2t_repro.serve.versions`).
"""

import hashlib
import os
import time

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from t2t_repro import safe_write
from t2t_repro.decode.transformer_search import search
from t2t_repro.serve.export_attention import attention_function, attention_signature_note
from t2t_repro.serve.export_files import (
    ATTENTION_SIGNATURE, IDS_SIGNATURE, INPUT_NAME, OUTPUT_NAME, SAVED_MODEL_METADATA, SAVED_MODEL_SIDE_VOCABULARIES,
    SAVED_MODEL_VOCABULARY, SCORES_NAME, TEXT_SIGNATURE, write_vocabularies,
)
from t2t_repro.serve.sentencepiece_log import sentencepiece_info_hidden
from t2t_repro.serve.versions import same_export_as_newest, unwritten_version_error, write_new_version
from t2t_repro.special_tokens import EOS_ID, PAD_ID

# Written beside the SavedModel in assets.extra/, which TensorFlow Serving ignores.
METADATA_FILE = SAVED_MODEL_METADATA
VOCABULARY_FILE = SAVED_MODEL_VOCABULARY
FORMAT_VERSION = 1

# The characters Python's str.isspace() accepts, so that the graph strips exactly what str.strip() strips.
_WHITESPACE = (
    r"\t\n\x0b\x0c\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}"
)
_SURROUNDING_WHITESPACE = f"^[{_WHITESPACE}]+|[{_WHITESPACE}]+$"


def clean_text(texts):
    """Every string of a tf.string tensor as the decoder reads a line: `str.strip()`ed (Unicode whitespace, as
    the training data), with bytes that are not UTF-8 replaced by U+FFFD (`bytes.decode(errors="replace")`)."""
    texts = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD)
    return tf.strings.regex_replace(texts, _SURROUNDING_WHITESPACE, "")


def decoded_text(tokenizer, ids):
    """Detokenizes beam-search output ids [..., length] (e.g. [batch, length] or [batch, nbest, length]) into
    strings [...]: each hypothesis stops at its first EOS, PAD dropped."""
    rows = tf.reshape(ids, [-1, tf.shape(ids)[-1]])
    before_eos = tf.equal(tf.cumsum(tf.cast(tf.equal(rows, EOS_ID), tf.int32), axis=1), 0)
    keep = tf.logical_and(before_eos, tf.not_equal(rows, PAD_ID))
    return tf.reshape(tokenizer.detokenize(tf.ragged.boolean_mask(rows, keep)), tf.shape(ids)[:-1])


def _tokenizer(serialized_vocabulary):
    """A graph tokenizer of the SentencePiece model, named after its sha256: the tokenizers of one name in a
    SavedModel are one resource once it is loaded (the target side then decodes with the source vocabulary),
    so separate vocabularies need two names."""
    digest = hashlib.sha256(serialized_vocabulary).hexdigest()[:16]
    return tf_text.SentencepieceTokenizer(model=serialized_vocabulary, out_type=tf.int32,
                                          name=f"sentencepiece_{digest}")


def build_serving_module(model, serialized_vocabulary, settings, serialized_target_vocabulary=None,
                         constraint=None):
    """A tf.Module holding the model's weights, the tokenizers and the serving functions: `serialized_vocabulary`
    encodes the sources, and decodes the outputs unless the target side has its own
    (`serialized_target_vocabulary`).

    The Keras model is used by the traced functions but is not itself an attribute of the module: only its
    variables are, so the SavedModel holds plain variables and graphs (Keras models add their own default
    signatures when saved as children).

    `settings` (a DecodeSettings with max_input_length set) are fixed in the graph, and so is the problem's output
    `constraint` (parsing: only well-formed trees, `t2t_repro.decode.tree_constraint`); with nbest 1 the outputs
    have no hypothesis axis.
    Returns (module, signatures) for `tf.saved_model.save(module, path, signatures=signatures)`.
    """
    max_input_length = settings.max_input_length
    module = tf.Module(name="t2t_repro_serving")
    module.model_variables = [getattr(variable, "value", variable) for variable in model.variables]
    module.tokenizer = tokenizer = _tokenizer(serialized_vocabulary)
    target_tokenizer = tokenizer
    if serialized_target_vocabulary is not None:
        module.target_tokenizer = target_tokenizer = _tokenizer(serialized_target_vocabulary)

    def beam(ids):
        ids, scores = search(model, ids, settings, constraint=constraint)
        return (ids, scores) if settings.nbest > 1 else (ids[:, 0], scores[:, 0])

    def source_ids(texts):
        """Ragged ids of cleaned texts, truncated to max_input_length - 1 tokens, EOS appended."""
        tokens = tokenizer.tokenize(texts)[:, : max_input_length - 1]
        eos = tf.fill([tokens.nrows(), 1], tf.constant(EOS_ID, tf.int32))
        return tf.concat([tokens, eos], axis=1)

    def translate(inputs, extra_outputs=None):
        """{outputs, scores} of the texts `inputs`, and `extra_outputs(source ids, ids)`'s outputs; an empty
        text is not decoded: "", 0.0 (and zeros or "" in the extra outputs)."""
        texts = clean_text(inputs)
        non_empty = tf.reshape(tf.where(tf.strings.length(texts) > 0), [-1, 1])
        to_decode = source_ids(tf.gather_nd(texts, non_empty)).to_tensor(PAD_ID)
        ids, scores = beam(to_decode)
        answers = {OUTPUT_NAME: decoded_text(target_tokenizer, ids), SCORES_NAME: scores}
        if extra_outputs is not None:
            answers.update(extra_outputs(to_decode, ids))
        batch = tf.shape(inputs, out_type=tf.int64)[:1]
        return {name: tf.scatter_nd(non_empty, value, tf.concat([batch, tf.shape(value, out_type=tf.int64)[1:]], 0))
                for name, value in answers.items()}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name=INPUT_NAME)], autograph=False)
    def serve_text(inputs):
        return translate(inputs)

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32, name=INPUT_NAME)], autograph=False)
    def serve_ids(inputs):
        ids, scores = beam(inputs)
        return {OUTPUT_NAME: ids, SCORES_NAME: scores}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    def source_lengths(texts):
        """Source tokens of each text as the model reads it, EOS included, before truncation (request checks)."""
        return tokenizer.tokenize(clean_text(texts)).row_lengths() + 1

    module.serve_text = serve_text
    module.serve_ids = serve_ids
    module.source_lengths = source_lengths
    signatures = {TEXT_SIGNATURE: serve_text, IDS_SIGNATURE: serve_ids}
    if not hasattr(model, "models"):  # an ensemble has no one set of attention weights to show
        extra_outputs = attention_function(model, tokenizer, target_tokenizer)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name=INPUT_NAME)], autograph=False)
        def serve_attention(inputs):
            return translate(inputs, extra_outputs)

        module.serve_attention = signatures[ATTENTION_SIGNATURE] = serve_attention
    return module, signatures


def _vocabulary_fields(vocabularies):
    """The export metadata's vocabulary fields: vocab_size and vocab_sha256 (`Vocabularies.sha256`) as always;
    with separate vocabularies also the source side's size and each side's sha256."""
    fields = {"vocab_size": vocabularies.target.vocab_size, "vocab_sha256": vocabularies.sha256}
    if not vocabularies.shared:
        fields.update(shared_vocabulary=False, source_vocab_size=vocabularies.source.vocab_size,
                      vocab_sha256s=vocabularies.side_sha256s())
    return fields


def weights_sha256(model):
    """sha256 of a model's weights (an ensemble's: all its models'), in order: what an export holds."""
    digest = hashlib.sha256()
    for member in getattr(model, "models", (model,)):
        for weight in member.weights:
            digest.update(np.ascontiguousarray(weight.numpy()).tobytes())
    return digest.hexdigest()


def export_saved_model(model, vocabularies, settings, export_dir, description, constraint=None):
    """Exports a model as a new SavedModel version under `export_dir`; returns the version directory's path.
    When the newest version already holds the same weights with the same settings, nothing is written and its
    path is returned.

    Args:
        model: the trained Transformer, or an `Ensemble` of them (`t2t_repro.decode.ensemble`); vocabularies:
            its `Vocabularies` (their SentencePiece models go in the graph).
        settings: the DecodeSettings fixed in the graph; max_input_length must be set (the decoder's default
            is the run's hparams.max_length).
        export_dir: where versions go; version N is export_dir/N.
        description: what the export comes from (problem, hparams, checkpoint, step, post-processing), written
            into the metadata beside the SavedModel.
        constraint: the problem's output constraint (`Problem.output_constraint`), applied in the graph
            unless settings.constrained_output is False; the metadata then says "output_constraint": "tree".
    """
    if settings.max_input_length is None:
        raise ValueError("the export needs settings.max_input_length")
    per_example = "[batch]" if settings.nbest == 1 else f"[batch, {settings.nbest}]"
    hypotheses = "[batch, length]" if settings.nbest == 1 else f"[batch, {settings.nbest}, length]"
    metadata = {
        "format_version": FORMAT_VERSION,
        "format": "saved_model",
        **description,
        **_vocabulary_fields(vocabularies),
        "weights_sha256": weights_sha256(model),
        "decode": settings.export_record(),
        **({"output_constraint": "tree"} if constraint is not None and settings.constrained_output else {}),
        "signatures": {
            TEXT_SIGNATURE: f"inputs: string [batch] -> outputs: string {per_example}, scores: float {per_example}",
            IDS_SIGNATURE: f"inputs: int32 [batch, length] (ending in EOS=1, PAD=0) -> outputs: int32 "
                           f"{hypotheses}, scores: float {per_example}",
            **({} if hasattr(model, "models") else {ATTENTION_SIGNATURE: attention_signature_note(settings.nbest)}),
        },
        "exported_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    unchanged = same_export_as_newest(export_dir, metadata)
    if unchanged:
        print(f"{unchanged} already holds this model (the same weights and settings): no new version written",
              flush=True)
        return unchanged
    with sentencepiece_info_hidden():
        module, signatures = build_serving_module(
            model, vocabularies.source.serialized_model, settings,
            None if vocabularies.shared else vocabularies.target.serialized_model, constraint)

    def write(path):
        try:
            tf.saved_model.save(module, path, signatures=signatures)
            os.makedirs(os.path.join(path, "assets.extra"), exist_ok=True)
            write_vocabularies(path, vocabularies, VOCABULARY_FILE, SAVED_MODEL_SIDE_VOCABULARIES)
            safe_write.write_json(os.path.join(path, METADATA_FILE), metadata)
        except (tf.errors.OpError, OSError) as error:  # e.g. a full disk: no version is published
            raise unwritten_version_error("a SavedModel", export_dir, error) from None

    with sentencepiece_info_hidden():  # the tokenizer in the graph prints them when it is created
        return write_new_version(export_dir, write)

