"""The CTranslate2 engine of the REST server: a CTranslate2 export served with the SavedModel's interface.

    backend = CTranslate2Backend("runs/wmt_ende/export_ctranslate2/2", threads=2)
    ServedModel(backend, limits)          # t2t_repro.serve.served_model

The two signatures of a SavedModel export (`t2t_repro.serve.export`), with the same names, inputs and outputs:

- `serving_default`: inputs, one text per example -> outputs (the decoded text) and scores (log-probability /
  GNMT length penalty). A text is encoded as `t2t-repro-decoder` and the SavedModel encode it (surrounding
  whitespace removed, SentencePiece ids, EOS; longer than max_input_length: truncated);
- `ids`: inputs, one list of source ids per example (PAD ids are dropped, as the SavedModel masks them) ->
  outputs (target ids, ending in EOS unless cut at the maximum length) and scores.

Both decode with the export's decode settings through `t2t_repro.serve.ctranslate2_model.CTranslate2Model`,
whose docstring says where its outputs can differ from the TensorFlow engine's. An export made with nbest N > 1
answers, as an n-best SavedModel does, lists of N outputs and N scores per example, best first.
"""

from t2t_repro.decode.decode_text import search_texts_nbest
from t2t_repro.serve.ctranslate2_model import CTranslate2Model
from t2t_repro.serve.export_files import IDS_SIGNATURE, INPUT_NAME, OUTPUT_NAME, SCORES_NAME, TEXT_SIGNATURE
from t2t_repro.serve.options import CTRANSLATE2
from t2t_repro.serve.rest_api import to_json_value
from t2t_repro.serve.served_model import ServedSignature
from t2t_repro.special_tokens import PAD_ID

_OUTPUT_NAMES = sorted([OUTPUT_NAME, SCORES_NAME])


def _tensor_info(dtype, dims):
    return {"dtype": dtype, "tensor_shape": {"dim": [{"size": str(size)} for size in dims]}}


def _signature_def(input_dtype, rank, nbest):
    """A SignatureDef in the protobuf JSON TensorFlow Serving's metadata gives, for an engine without graphs:
    the shapes an export with these settings has as a SavedModel (n-best: a hypothesis axis after the batch)."""
    hypotheses = [] if nbest == 1 else [nbest]
    inputs = [-1] * rank
    outputs = inputs[:1] + hypotheses + inputs[1:]
    return {
        "inputs": {INPUT_NAME: {"name": INPUT_NAME, **_tensor_info(input_dtype, inputs)}},
        "outputs": {
            OUTPUT_NAME: {"name": OUTPUT_NAME, **_tensor_info(input_dtype, outputs)},
            SCORES_NAME: {"name": SCORES_NAME, **_tensor_info("DT_FLOAT", [-1] + hypotheses)},
        },
        "method_name": "tensorflow/serving/predict",
    }


class CTranslate2Backend:
    """One CTranslate2 export version loaded for serving (`threads`: CPU threads per translation, 0: default)."""

    engine = CTRANSLATE2
    model_errors = (RuntimeError, ValueError)

    def __init__(self, version_dir, threads=0):
        self.model = CTranslate2Model(version_dir, threads)
        self.version_dir = version_dir
        self.metadata = self.model.metadata
        self.vocab_size = self.model.vocabularies.source.vocab_size  # what ids requests may hold
        self.max_source_tokens = self.model.positions  # the longest source its position table covers
        self.settings = self.model.decode_settings()
        self._search = self.model.search(self.settings)
        self.signatures = {
            TEXT_SIGNATURE: ServedSignature(TEXT_SIGNATURE, INPUT_NAME, True, _OUTPUT_NAMES, self._run_texts),
            IDS_SIGNATURE: ServedSignature(IDS_SIGNATURE, INPUT_NAME, False, _OUTPUT_NAMES, self._run_ids),
        }
        nbest = self.settings.nbest
        self.signature_defs = {TEXT_SIGNATURE: _signature_def("DT_STRING", 1, nbest),
                               IDS_SIGNATURE: _signature_def("DT_INT32", 2, nbest)}

    def source_lengths(self, texts):
        """Source tokens of each text as the model reads it, EOS included, before truncation."""
        return [len(self.model.vocabularies.source.encode(text.strip())) + 1 for text in texts]

    def error_message(self, error):
        return (str(error).strip().splitlines() or [type(error).__name__])[0]

    def _row(self, hypotheses):
        """The answer for one example from its (output, score) hypotheses, best first: the best one's output
        and score, or with nbest > 1 the lists of all of them."""
        outputs, scores = zip(*hypotheses)
        if self.settings.nbest == 1:
            outputs, scores = outputs[0], scores[0]
        return {OUTPUT_NAME: to_json_value(outputs), SCORES_NAME: to_json_value(scores)}

    def _run_texts(self, texts):
        results = search_texts_nbest(texts, self._search, self.model.vocabularies, self.settings,
                                     batch_size=len(texts), progress=False)
        return [self._row([(hypothesis.text, hypothesis.score) for hypothesis in hypotheses])
                for hypotheses in results]

    def _run_ids(self, rows):
        """A row of PAD only is an empty source: answered [] and 0.0 (per hypothesis), as an empty text is."""
        sources = [[token for token in ids if token != PAD_ID] for ids in rows]
        searched = iter(self._search([ids for ids in sources if ids]) if any(sources) else [])
        empty = [([], 0.0)] * self.settings.nbest
        return [self._row(next(searched) if ids else empty) for ids in sources]
