"""The model behind the REST server: the newest SavedModel version, its signatures, request checks, batching.

    served = ServedModel("runs/wmt_ende/export", ServingLimits(max_batch_size=32))
    served.predict({"instances": ["A sentence."]})   # {"predictions": [{"outputs": ..., "scores": ...}]}
    served.close()

Every signature with one input is served: a string vector (one text per example) or an integer matrix (one
list of token ids per example, padded with PAD = 0 by the server). Each signature has its own batching queue
(`t2t_repro.serve.batcher`), so concurrent requests run together. Requests are checked before they are
queued: examples per request, text length in characters and in source tokens (the export's
`source_lengths` function), token ids inside the vocabulary. Integer matrix outputs come back per example
with their trailing PAD removed, so an answer does not depend on what else was in its batch.
"""

import concurrent.futures
import contextlib
import dataclasses
import logging
import os
import re
import sys
import tempfile

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401 - registers the SentencePiece ops the exported graph uses
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from tensorflow.core.protobuf import saved_model_pb2

from t2t_repro.errors import UserError
from t2t_repro.serve import rest_api
from t2t_repro.serve.batcher import BatchingQueue
from t2t_repro.serve.export import read_export_metadata
from t2t_repro.serve.rest_api import RequestError
from t2t_repro.serve.versions import latest_version_dir
from t2t_repro.special_tokens import EOS_ID, PAD_ID

logger = logging.getLogger(__name__)
_FALLBACK_MAX_INPUT_TOKENS = 256  # when the export does not say (a SavedModel not made by this project)
# SentencePiece's informational lines, e.g. "normalizer.cc(51) LOG(INFO) precompiled_charsmap is empty. use
# identity normalization.", which the tensorflow-text kernels print whenever an export's tokenizer is created.
_SENTENCEPIECE_INFO = re.compile(rb"^[\w.]+\.cc\(\d+\) LOG\(INFO\) [^\n]*\n?", re.MULTILINE)


@contextlib.contextmanager
def _sentencepiece_info_hidden():
    """Runs the block with file descriptor 2 sent to a temporary file, then writes back to it all that was
    written there except SentencePiece's informational lines. The copy of SentencePiece inside tensorflow-text
    has no log-level setting (`sentencepiece.set_min_log_level` sets only the Python package's own copy), so
    its lines are filtered out here; warnings and errors still reach stderr."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with tempfile.TemporaryFile() as captured:
            os.dup2(captured.fileno(), 2)
            try:
                yield
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
                captured.seek(0)
                rest = _SENTENCEPIECE_INFO.sub(b"", captured.read())
                while rest:
                    rest = rest[os.write(2, rest):]
    finally:
        os.close(saved)


@dataclasses.dataclass(frozen=True)
class ServingLimits:
    """What one request may ask for, and how requests are batched."""

    max_batch_size: int = 32  # examples per model call, and per request
    batch_timeout_ms: float = 5.0  # how long a batch waits for more requests to join it
    max_body_bytes: int = 1 << 20  # request body size
    max_input_chars: int = 4096  # characters per text example
    max_input_tokens: int = 0  # source tokens per example, EOS included; 0: the export's max_input_length
    request_timeout_s: float = 600.0  # a request waiting longer for its batch is answered 503

    def check(self):
        for name in ("max_batch_size", "max_body_bytes", "max_input_chars"):
            if getattr(self, name) < 1:
                raise UserError(f"--{name}={getattr(self, name)}: must be at least 1")
        if self.batch_timeout_ms < 0 or self.max_input_tokens < 0 or self.request_timeout_s <= 0:
            raise UserError("--batch_timeout_ms and --max_input_tokens must not be negative")


@dataclasses.dataclass
class ServedSignature:
    """One signature of the SavedModel: its function, single input and outputs."""

    name: str
    function: object
    input_name: str
    input_spec: tf.TensorSpec
    output_names: list

    @property
    def takes_text(self):
        return self.input_spec.dtype == tf.string


def _servable(name, function):
    _, inputs = function.structured_input_signature
    if len(inputs) != 1:
        return None
    (input_name, spec), = inputs.items()
    text = spec.dtype == tf.string and spec.shape.rank == 1
    ids = spec.dtype.is_integer and spec.shape.rank == 2
    if not (text or ids):
        return None
    return ServedSignature(name, function, input_name, spec, sorted(function.structured_outputs))


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


class ServedModel:
    """Loads the newest version under `model_dir` and answers predict requests through batching queues."""

    def __init__(self, model_dir, limits=ServingLimits(), warm_up=True):
        limits.check()
        self.limits = limits
        self.version_dir = latest_version_dir(model_dir)
        self.version = int(os.path.basename(self.version_dir))
        try:
            with _sentencepiece_info_hidden():
                self.loaded = tf.saved_model.load(self.version_dir)
            self.signature_defs = _signature_defs_json(self.version_dir)
        except (OSError, ValueError, DecodeError, tf.errors.OpError) as error:
            first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
            raise UserError(f"cannot load the SavedModel in {self.version_dir}: {first_line}") from None
        self.export_metadata = read_export_metadata(self.version_dir)
        self.signatures = {}
        for name, function in self.loaded.signatures.items():
            signature = _servable(name, function)
            if signature is None:
                logger.warning("signature %r has an input layout the server does not handle; not served", name)
            else:
                self.signatures[name] = signature
        if not self.signatures:
            raise UserError(f"{self.version_dir} has no signature with one string or integer input to serve")
        self.vocab_size = self.export_metadata.get("vocab_size")
        decode = self.export_metadata.get("decode", {})
        self.max_input_tokens = limits.max_input_tokens or decode.get("max_input_length", _FALLBACK_MAX_INPUT_TOKENS)
        self._source_lengths = getattr(self.loaded, "source_lengths", None)
        self._queues = {
            name: BatchingQueue(lambda items, s=signature: self._run_batch(s, items), limits.max_batch_size,
                                limits.batch_timeout_ms / 1000.0, name=f"batcher-{name}")
            for name, signature in self.signatures.items()
        }
        if warm_up:
            try:
                self._warm_up()
            except BaseException:
                self.close()
                raise

    def _warm_up(self):
        """Runs every signature once, so that the first request is not slow and a broken model fails now."""
        for signature in self.signatures.values():
            example = "warm-up" if signature.takes_text else [EOS_ID]
            try:
                self._run_batch(signature, [example])
            except tf.errors.OpError as error:
                raise UserError(f"signature {signature.name!r} of {self.version_dir} fails: {error.message}") from None

    def close(self):
        for queue in self._queues.values():
            queue.close()

    def batching_stats(self):
        return {name: queue.stats() for name, queue in self._queues.items()}

    # Requests.

    def predict(self, request):
        """Answers one parsed predict request (a dict); raises RequestError for a bad one."""
        name = request.get("signature_name", rest_api.DEFAULT_SIGNATURE)
        signature = self.signatures.get(name) if isinstance(name, str) else None
        if isinstance(name, str) and signature is None:
            known = ", ".join(sorted(self.signatures))
            raise RequestError(400, f"signature {name!r} not found; this model serves: {known}")
        _, values, layout = rest_api.split_predict_request(request, signature.input_name if signature else "inputs")
        if not values:
            raise RequestError(400, "the request holds no examples")
        if len(values) > self.limits.max_batch_size:
            raise RequestError(400, f"{len(values)} examples in one request: at most {self.limits.max_batch_size}")
        examples = self._checked_texts(values) if signature.takes_text else self._checked_ids(values)
        try:
            future = self._queues[name].submit(examples)
        except RuntimeError:
            raise RequestError(503, "the server is shutting down") from None
        try:
            rows = future.result(timeout=self.limits.request_timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise RequestError(503, f"no answer within {self.limits.request_timeout_s:g} s: the server is overloaded")
        except Exception as error:  # noqa: BLE001 - the model failed on this batch: 500, the server goes on
            logger.exception("signature %r failed on a batch", name)
            detail = (str(error).strip().splitlines() or [type(error).__name__])[0]
            raise RequestError(500, f"the model failed on the batch holding this request: {detail}") from None
        return rest_api.format_predictions(rows, signature.output_names, layout)

    def _checked_texts(self, values):
        texts = []
        for index, value in enumerate(values):
            where = f"example {index}"
            text = rest_api.as_text(value, where)
            if not text.strip():
                raise RequestError(400, f"{where} is empty: send the text to translate")
            if len(text) > self.limits.max_input_chars:
                raise RequestError(400, f"{where} has {len(text)} characters: at most {self.limits.max_input_chars}")
            texts.append(text)
        if self._source_lengths is not None:
            lengths = self._source_lengths(tf.constant(texts, tf.string)).numpy()
            for index, length in enumerate(lengths):
                if length > self.max_input_tokens:
                    raise RequestError(400, f"example {index} is {length} tokens long (EOS included): at most "
                                            f"{self.max_input_tokens}")
        return texts

    def _checked_ids(self, values):
        rows = []
        for index, value in enumerate(values):
            ids = rest_api.as_ids(value, f"example {index}", self.vocab_size)
            if len(ids) > self.max_input_tokens:
                raise RequestError(400, f"example {index} has {len(ids)} token ids: at most {self.max_input_tokens}")
            rows.append(ids)
        return rows

    # Model calls (in the batching queues' worker threads).

    def _run_batch(self, signature, examples):
        if signature.takes_text:
            inputs = tf.constant(examples, tf.string)
        else:
            matrix = np.full([len(examples), max(len(ids) for ids in examples)], PAD_ID, np.int64)
            for row, ids in enumerate(examples):
                matrix[row, : len(ids)] = ids
            inputs = tf.constant(matrix, signature.input_spec.dtype)
        outputs = {name: value.numpy() for name, value in signature.function(**{signature.input_name: inputs}).items()}
        rows = []
        for index in range(len(examples)):
            row = {}
            for name in signature.output_names:
                value = outputs[name][index]
                if isinstance(value, np.ndarray) and value.ndim == 1 and np.issubdtype(value.dtype, np.integer):
                    value = np.trim_zeros(value, "b")  # PAD after the end: depends only on the batch's length
                row[name] = rest_api.to_json_value(value)
            rows.append(row)
        return rows
