"""The model behind the REST server: an engine's signatures, request checks, batching and post-processing.

    served = ServedModel(SavedModelBackend("runs/wmt_ende/export/3"), ServingLimits(max_batch_size=32))
    served.predict({"instances": ["A sentence."]})   # {"predictions": [{"outputs": ..., "scores": ...}]}
    served.close()

The engine is a backend: `t2t_repro.serve.saved_model_backend.SavedModelBackend` (TensorFlow) or
`t2t_repro.serve.ctranslate2_backend.CTranslate2Backend` (CTranslate2). It has the version directory and its
metadata, the served signatures (`ServedSignature`: a string vector input, one text per example, or an
integer matrix input, one list of token ids per example), their SignatureDefs as TensorFlow Serving's metadata
shows them, and the source length in tokens of texts. Each signature has its own batching queue
(`t2t_repro.serve.batcher`), so concurrent requests run together. Requests are checked before they are
queued: examples per request, text length in characters and in source tokens, token ids inside the
vocabulary. An empty text among others is answered "" (score 0.0); a request of empty texts only is refused.

With a problem's `postprocess(decoded, source)` (the run layer hands in the export's problem's), the text
signature's "outputs" are what the problem makes of the decoded text (parsing: the PTB tree with the source
words in place) and "raw_outputs" the decoded text itself (parsing: the linearised tree). An n-best export
answers a list of hypotheses per example, best first: "outputs", "raw_outputs" and "scores" are then lists,
each hypothesis post-processed on its own.
"""

import concurrent.futures
import dataclasses
import logging
import os

from t2t_repro.errors import UserError
from t2t_repro.serve import rest_api
from t2t_repro.serve.batcher import BatchingQueue
from t2t_repro.serve.export_files import OUTPUT_NAME
from t2t_repro.serve.rest_api import RequestError
from t2t_repro.special_tokens import EOS_ID

logger = logging.getLogger(__name__)
_FALLBACK_MAX_INPUT_TOKENS = 256  # when the export does not say (a SavedModel not made by this project)
RAW_OUTPUT_NAME = "raw_outputs"


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
    """One served signature: its name, single input, outputs, and `run(examples)`, which answers a batch with
    one {output name: JSON value} row per example (examples: texts, or lists of token ids)."""

    name: str
    input_name: str
    takes_text: bool
    output_names: list
    run: object


def _with_raw_output(signature_def):
    """A SignatureDef (protobuf JSON) with the raw decoded text among its outputs, shaped as "outputs"."""
    outputs = dict(signature_def.get("outputs", {}))
    if OUTPUT_NAME in outputs:
        outputs[RAW_OUTPUT_NAME] = dict(outputs[OUTPUT_NAME], name=RAW_OUTPUT_NAME)
    return dict(signature_def, outputs=outputs)


class ServedModel:
    """Answers predict requests for a loaded backend through batching queues.

    Args:
        backend: a loaded engine (see the module docstring).
        limits: the `ServingLimits`.
        postprocess: a problem's `postprocess(decoded_text, source_text)` for the text signature, or None.
        warm_up: run every signature once now, so that the first request is not slow and a broken model fails.
    """

    def __init__(self, backend, limits=ServingLimits(), postprocess=None, warm_up=True):
        limits.check()
        self.limits = limits
        self.backend = backend
        self.postprocess = postprocess
        self.version_dir = backend.version_dir
        self.version = int(os.path.basename(os.path.normpath(self.version_dir)))
        self.export_metadata = backend.metadata
        self.languages = {}  # {"source": ..., "target": ...} of the export's problem, for the page (set by the caller)
        self.signatures = dict(backend.signatures)
        self.signature_defs = dict(backend.signature_defs)
        if postprocess is not None:
            for name, signature in self.signatures.items():
                if signature.takes_text and OUTPUT_NAME in signature.output_names:
                    self.signatures[name] = dataclasses.replace(
                        signature, output_names=sorted(signature.output_names + [RAW_OUTPUT_NAME]))
                    self.signature_defs[name] = _with_raw_output(self.signature_defs.get(name, {}))
        self.vocab_size = backend.vocab_size
        decode = self.export_metadata.get("decode", {})
        self.max_input_tokens = limits.max_input_tokens or decode.get("max_input_length", _FALLBACK_MAX_INPUT_TOKENS)
        if backend.max_source_tokens is not None and self.max_input_tokens > backend.max_source_tokens:
            raise UserError(f"--max_input_tokens={self.max_input_tokens}: this model reads sources of at most "
                            f"{backend.max_source_tokens} tokens")
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
            except self.backend.model_errors as error:
                raise UserError(f"signature {signature.name!r} of {self.version_dir} fails: "
                                f"{self.backend.error_message(error)}") from None

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
        """The texts of a request. An empty one (or only whitespace) among others is answered "" (score 0.0), as
        the decoder answers an empty line; a request of empty texts only is refused."""
        texts = []
        for index, value in enumerate(values):
            where = f"example {index}"
            text = rest_api.as_text(value, where)
            if len(text) > self.limits.max_input_chars:
                raise RequestError(400, f"{where} has {len(text)} characters: at most {self.limits.max_input_chars}")
            texts.append(text)
        if not any(text.strip() for text in texts):
            what = "example 0 is" if len(texts) == 1 else f"all {len(texts)} examples are"
            raise RequestError(400, f"{what} empty: send the text to translate")
        lengths = self.backend.source_lengths(texts)
        if lengths is not None:
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
        rows = signature.run(examples)
        if self.postprocess is not None and RAW_OUTPUT_NAME in signature.output_names:
            for row, text in zip(rows, examples):
                raw, source = row[OUTPUT_NAME], text.strip()
                row[RAW_OUTPUT_NAME] = raw
                if not source:  # an empty source's output is "" whatever the problem
                    continue
                row[OUTPUT_NAME] = ([self._postprocessed(hypothesis, source) for hypothesis in raw]
                                    if isinstance(raw, list) else self._postprocessed(raw, source))
        return rows

    def _postprocessed(self, decoded, source):
        try:
            return self.postprocess(decoded, source)
        except Exception as error:  # noqa: BLE001 - one malformed output must not fail its batch
            logger.warning("postprocessing failed (%s), answered the raw output: %r", error, decoded[:40])
            return decoded
