"""The TensorFlow engine of the REST server: an exported SavedModel version and its signatures.

    backend = SavedModelBackend("runs/wmt_ende/export/3")
    ServedModel(backend, limits)          # t2t_repro.serve.served_model

Every signature with one input is served: a string vector (one text per example) or an integer matrix (one
list of token ids per example, padded with PAD = 0 here). Integer matrix outputs come back per example (and
per hypothesis, from an n-best export) with their trailing PAD removed, so an answer does not depend on what
else was in its batch. The export's
`source_lengths` function gives the source tokens of texts, for the server's request checks.
"""

import logging
import os

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401 - registers the SentencePiece ops the exported graph uses
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from tensorflow.core.protobuf import saved_model_pb2

from t2t_repro.errors import UserError, first_line
from t2t_repro.model.cpu_kernels import check_compute_kernels
from t2t_repro.serve import rest_api
from t2t_repro.serve.attention_output import trim_attention_example
from t2t_repro.serve.export_files import ATTENTION_NAME, ATTENTION_SIGNATURE, read_export_metadata
from t2t_repro.serve.options import CTRANSLATE2, TENSORFLOW
from t2t_repro.serve.sentencepiece_log import sentencepiece_info_hidden
from t2t_repro.serve.served_model import ServedSignature
from t2t_repro.special_tokens import PAD_ID

logger = logging.getLogger(__name__)


def _signature_defs_json(version_dir):
    """The SignatureDefs of the serving MetaGraph as protobuf JSON, as TensorFlow Serving's metadata gives them."""
    saved_model = saved_model_pb2.SavedModel()
    with open(os.path.join(version_dir, "saved_model.pb"), "rb") as f:
        saved_model.ParseFromString(f.read())
    for meta_graph in saved_model.meta_graphs:
        if "serve" in meta_graph.meta_info_def.tags:
            return {name: json_format.MessageToDict(definition, preserving_proto_field_name=True)
                    for name, definition in meta_graph.signature_def.items()}
    return {}


def _without_trailing_pad(value):
    """An example's output with the PAD after each id sequence's end removed (its length depends only on the
    batch's longest output): token ids [length], or [nbest, length] as a list per hypothesis."""
    if not (isinstance(value, np.ndarray) and value.ndim >= 1 and np.issubdtype(value.dtype, np.integer)):
        return value
    if value.ndim == 1:
        return np.trim_zeros(value, "b")
    return [_without_trailing_pad(row) for row in value]


def _run_function(function, input_name, takes_text, input_dtype, output_names, per_example=None):
    """examples -> one {output name: JSON value} row per example, through a SavedModel signature function;
    `per_example` rewrites each example's {output name: numpy value} first."""

    def run(examples):
        if takes_text:
            inputs = tf.constant(examples, tf.string)
        else:
            matrix = np.full([len(examples), max(len(ids) for ids in examples)], PAD_ID, np.int64)
            for row, ids in enumerate(examples):
                matrix[row, : len(ids)] = ids
            inputs = tf.constant(matrix, input_dtype)
        outputs = {name: value.numpy() for name, value in function(**{input_name: inputs}).items()}
        rows = []
        for index in range(len(examples)):
            example = {name: _without_trailing_pad(outputs[name][index]) for name in output_names}
            if per_example is not None:
                example = per_example(example)
            rows.append({name: rest_api.to_json_value(value) for name, value in example.items()})
        return rows

    return run


def _servable(name, function):
    _, inputs = function.structured_input_signature
    if len(inputs) != 1:
        return None
    (input_name, spec), = inputs.items()
    text = spec.dtype == tf.string and spec.shape.rank == 1
    ids = spec.dtype.is_integer and spec.shape.rank == 2
    if not (text or ids):
        return None
    output_names = sorted(function.structured_outputs)
    per_example = trim_attention_example if name == ATTENTION_SIGNATURE and ATTENTION_NAME in output_names else None
    return ServedSignature(name, input_name, text, output_names,
                           _run_function(function, input_name, text, spec.dtype, output_names, per_example))


class SavedModelBackend:
    """One SavedModel version loaded for serving."""

    engine = TENSORFLOW
    model_errors = (tf.errors.OpError,)

    def __init__(self, version_dir):
        self.version_dir = version_dir
        self.metadata = read_export_metadata(version_dir)
        if self.metadata.get("format") == CTRANSLATE2:
            raise UserError(f"{version_dir} is a CTranslate2 export: serve it with --engine={CTRANSLATE2}")
        check_compute_kernels(self.metadata.get("serving_precision"))  # its graph computes in it
        try:
            with sentencepiece_info_hidden():
                self.loaded = tf.saved_model.load(version_dir)
            self.signature_defs = _signature_defs_json(version_dir)
        except (OSError, ValueError, DecodeError, tf.errors.OpError) as error:
            raise UserError(f"cannot load the SavedModel in {version_dir}: {first_line(error)}") from None
        self.signatures = {}
        for name, function in self.loaded.signatures.items():
            signature = _servable(name, function)
            if signature is None:
                logger.warning("signature %r has an input layout the server does not handle; not served", name)
            else:
                self.signatures[name] = signature
        if not self.signatures:
            raise UserError(f"{version_dir} has no signature with one string or integer input to serve")
        # What ids requests may hold: the source vocabulary's (the same as the target's when shared).
        self.vocab_size = self.metadata.get("source_vocab_size") or self.metadata.get("vocab_size")
        self.max_source_tokens = None  # the graph reads sources of any length
        self._source_lengths = getattr(self.loaded, "source_lengths", None)

    def source_lengths(self, texts):
        """Source tokens of each text as the model reads it, EOS included; None when the export cannot say."""
        if self._source_lengths is None:
            return None
        return self._source_lengths(tf.constant(texts, tf.string)).numpy().tolist()

    def error_message(self, error):
        return error.message
