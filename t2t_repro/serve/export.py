"""SavedModel export of a trained run: text in, text out, with the SentencePiece tokenizer inside the graph.

    path = export_saved_model("runs/wmt_ende")        # -> "runs/wmt_ende/export/3"

The SavedModel has two signatures:

- `serving_default`: inputs tf.string [batch] (raw source sentences) -> outputs tf.string [batch] (the decoded
  target sentences) and scores float32 [batch] (log-probability / length penalty, section 6.1);
- `ids`: inputs int32 [batch, length] (source ids as the model reads them: each row ends in EOS = 1 and is
  padded with PAD = 0) -> outputs int32 [batch, length] (target ids ending in EOS, then PAD) and scores.

Sentences are encoded the way the training data was (`t2t_repro.data.text_problem`): invalid UTF-8 replaced by
U+FFFD (as the decoder reads files), surrounding whitespace removed, SentencePiece ids, EOS appended. As in
`t2t-repro-decoder`, a source longer than `max_input_length` tokens (EOS included; default the run's
hparams.max_length) is truncated and an empty source gives "" with score 0.0. Decoding is the project's beam
search (`t2t_repro.decode.beam_search.search`) with the settings fixed at export time (default: the
problem's, section 6.1 / 6.3), so the export answers as `t2t-repro-decoder` does.

The graph returns the raw decoded target string. For translation that is the translation. For parsing it is
the linearised tree: turning it into a PTB tree on the source words (`problem.postprocess`) happens outside
the graph, e.g. with `t2t_repro.data.ptb_tree.delinearise(output, source.split())`.

The graph needs only TensorFlow and the tensorflow-text ops (`import tensorflow_text` before loading): no
Python code of this project. Exports are versioned the way TensorFlow Serving expects (`export_dir/<N>/`,
integers, increasing; see `t2t_repro.serve.versions`).
"""

import json
import os
import time

import tensorflow as tf

from t2t_repro.errors import UserError
from t2t_repro.serve.versions import write_new_version
from t2t_repro.special_tokens import EOS_ID, PAD_ID

EXPORT_SUBDIR = "export"
TEXT_SIGNATURE = "serving_default"
IDS_SIGNATURE = "ids"
INPUT_NAME = "inputs"
OUTPUT_NAME = "outputs"
SCORES_NAME = "scores"
# Written beside the SavedModel in assets.extra/, which TensorFlow Serving ignores.
METADATA_FILE = os.path.join("assets.extra", "t2t_repro_export.json")
VOCABULARY_FILE = os.path.join("assets.extra", "vocab.model")
FORMAT_VERSION = 1

# The characters Python's str.isspace() accepts, so that the graph strips exactly what str.strip() strips.
_WHITESPACE = (
    r"\t\n\x0b\x0c\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}"
)
_SURROUNDING_WHITESPACE = f"^[{_WHITESPACE}]+|[{_WHITESPACE}]+$"


def clean_text(texts):
    """Every string of a tf.string tensor as the decoder reads a line: invalid UTF-8 replaced by U+FFFD (as
    `bytes.decode(errors="replace")`), then `str.strip()`ed (Unicode whitespace, as the training data)."""
    texts = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD)
    return tf.strings.regex_replace(texts, _SURROUNDING_WHITESPACE, "")


def decoded_text(tokenizer, ids):
    """Detokenizes beam-search output ids [batch, length]: stops at the first EOS, drops PAD."""
    before_eos = tf.equal(tf.cumsum(tf.cast(tf.equal(ids, EOS_ID), tf.int32), axis=1), 0)
    keep = tf.logical_and(before_eos, tf.not_equal(ids, PAD_ID))
    return tokenizer.detokenize(tf.ragged.boolean_mask(ids, keep))


def build_serving_module(model, serialized_vocabulary, beam_size, alpha, extra_length, max_input_length):
    """A tf.Module holding the model's weights, the tokenizer and the serving functions.

    The Keras model is used by the traced functions but is not itself an attribute of the module: only its
    variables are, so the SavedModel holds plain variables and graphs (Keras models add their own default
    signatures when saved as children).

    Returns (module, signatures) for `tf.saved_model.save(module, path, signatures=signatures)`.
    """
    import tensorflow_text as tf_text

    from t2t_repro.decode.beam_search import search

    module = tf.Module(name="t2t_repro_serving")
    module.model_variables = [getattr(variable, "value", variable) for variable in model.variables]
    module.tokenizer = tokenizer = tf_text.SentencepieceTokenizer(model=serialized_vocabulary, out_type=tf.int32)

    def beam(ids):
        ids, scores = search(model, ids, beam_size, alpha, extra_length, nbest=1)
        return ids[:, 0], scores[:, 0]

    def source_ids(texts):
        """Ragged ids of cleaned texts, truncated to max_input_length - 1 tokens, EOS appended."""
        tokens = tokenizer.tokenize(texts)[:, : max_input_length - 1]
        eos = tf.fill([tokens.nrows(), 1], tf.constant(EOS_ID, tf.int32))
        return tf.concat([tokens, eos], axis=1)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name=INPUT_NAME)])
    def serve_text(inputs):
        texts = clean_text(inputs)
        non_empty = tf.reshape(tf.where(tf.strings.length(texts) > 0), [-1, 1])
        to_decode = tf.gather_nd(texts, non_empty)
        ids, scores = beam(source_ids(to_decode).to_tensor(PAD_ID))
        batch = tf.shape(inputs, out_type=tf.int64)[:1]
        outputs = tf.scatter_nd(non_empty, decoded_text(tokenizer, ids), batch)  # "" where empty
        scores = tf.scatter_nd(non_empty, scores, batch)  # 0.0 where empty
        return {OUTPUT_NAME: outputs, SCORES_NAME: scores}

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32, name=INPUT_NAME)])
    def serve_ids(inputs):
        ids, scores = beam(inputs)
        return {OUTPUT_NAME: ids, SCORES_NAME: scores}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def source_lengths(texts):
        """Source tokens of each text as the model reads it, EOS included, before truncation (request checks)."""
        return tokenizer.tokenize(clean_text(texts)).row_lengths() + 1

    module.serve_text = serve_text
    module.serve_ids = serve_ids
    module.source_lengths = source_lengths
    return module, {TEXT_SIGNATURE: serve_text, IDS_SIGNATURE: serve_ids}


def resolve_settings(problem, hparams, beam_size=None, alpha=None, extra_length=None, max_input_length=None):
    """The decode settings of an export: the given ones, else those t2t-repro-decoder uses by default (the
    problem's beam search settings, and the run's hparams.max_length as the longest source); checked."""
    defaults = problem.decode_defaults
    settings = {
        "beam_size": defaults.beam_size if beam_size is None else int(beam_size),
        "alpha": float(defaults.alpha if alpha is None else alpha),
        "extra_length": defaults.extra_length if extra_length is None else int(extra_length),
        "max_input_length": hparams.max_length if max_input_length is None else int(max_input_length),
    }
    if settings["beam_size"] < 1:
        raise UserError(f"beam_size={settings['beam_size']}: must be at least 1")
    if settings["alpha"] < 0:
        raise UserError(f"alpha={settings['alpha']}: the length penalty exponent must not be negative")
    if settings["extra_length"] < 0:
        raise UserError(f"extra_length={settings['extra_length']}: must not be negative")
    if settings["max_input_length"] < 2:
        raise UserError(f"max_input_length={settings['max_input_length']}: must be at least 2 (a token and EOS)")
    return settings


def _postprocess_note(problem):
    if problem.evaluation == "parse_f1":
        return ("outputs are linearised trees; put them onto the source words outside the graph with "
                "t2t_repro.data.ptb_tree.delinearise(output, source.split()).to_ptb()")
    return "none: outputs are final"


def export_saved_model(output_dir, export_dir=None, beam_size=None, alpha=None, extra_length=None,
                       checkpoint=None, max_input_length=None):
    """Exports a trained run as a new SavedModel version; returns the version directory's path.

    Args:
        output_dir: the run's output_dir (hparams.json, run.json, checkpoints).
        export_dir: where versions go (default output_dir/export); version N is export_dir/N.
        beam_size, alpha, extra_length: beam search settings baked into the graph (default: the problem's).
        checkpoint: checkpoint prefix (default: the averaged checkpoint if current, else the latest).
        max_input_length: longest source in tokens, EOS included; longer ones are truncated, as the decoder
            does (default: the run's hparams.max_length, the decoder's default).
    """
    from t2t_repro.train.run_dir import checkpoint_step, restore_run

    run = restore_run(output_dir, checkpoint)
    settings = resolve_settings(run.problem, run.hparams, beam_size, alpha, extra_length, max_input_length)
    module, signatures = build_serving_module(
        run.model, run.vocabulary.serialized_model, settings["beam_size"], settings["alpha"],
        settings["extra_length"], settings["max_input_length"],
    )
    metadata = {
        "format_version": FORMAT_VERSION,
        "problem": run.info.problem,
        "hparams_set": run.info.hparams_set,
        "hparams_overrides": run.info.hparams_overrides,
        "checkpoint": os.path.abspath(run.checkpoint),
        "step": checkpoint_step(run.checkpoint),
        "vocab_size": run.vocabulary.vocab_size,
        "decode": settings,
        "postprocess": _postprocess_note(run.problem),
        "signatures": {
            TEXT_SIGNATURE: "inputs: string [batch] -> outputs: string [batch], scores: float [batch]",
            IDS_SIGNATURE: "inputs: int32 [batch, length] (ending in EOS=1, PAD=0) -> outputs: int32 "
                           "[batch, length], scores: float [batch]",
        },
        "exported_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }

    def write(path):
        tf.saved_model.save(module, path, signatures=signatures)
        os.makedirs(os.path.join(path, "assets.extra"), exist_ok=True)
        with open(os.path.join(path, VOCABULARY_FILE), "wb") as f:
            f.write(run.vocabulary.serialized_model)
        with open(os.path.join(path, METADATA_FILE), "w", encoding="utf-8") as f:
            json.dump(metadata, f, indent=2, sort_keys=True)
            f.write("\n")

    export_dir = export_dir or os.path.join(output_dir, EXPORT_SUBDIR)
    return write_new_version(export_dir, write)


def read_export_metadata(version_dir):
    """The metadata JSON written beside an exported SavedModel; {} if there is none."""
    try:
        with open(os.path.join(version_dir, METADATA_FILE), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}
