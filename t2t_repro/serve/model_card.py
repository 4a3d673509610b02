"""What the page at `/` shows about each served model (`GET /page/models`), from its export's metadata.

    card = model_card("wmt_ende", served_model)
    # {"name": "wmt_ende", "version": 3, "engine": "tensorflow", "problem": "multi30k_ende",
    #  "languages": {"source": "en", "target": "de"}, "hparams_set": "transformer_small", "step": 3500, ...}
"""

from t2t_repro.serve.export_files import ATTENTION_SIGNATURE
from t2t_repro.serve.options import CTRANSLATE2

_DECODE_FIELDS = ("beam_size", "alpha", "extra_length", "nbest", "max_input_length")
_NO_ATTENTION = {
    CTRANSLATE2: "The CTranslate2 engine gives no attention weights per layer and head: serve the SavedModel "
                 "export of the model (--engine=tensorflow) to see them.",
    None: "This export has no attention signature (an ensemble, or exported before there was one): export the "
          "run again with t2t-repro-exporter to see the attention.",
}


def attention_note(served):
    """None when `served` answers the attention signature, else why it cannot."""
    if ATTENTION_SIGNATURE in served.signatures:
        return None
    return _NO_ATTENTION.get(served.backend.engine, _NO_ATTENTION[None])


def model_card(name, served):
    """The card of the ServedModel `served`, served as `name` (JSON-ready)."""
    metadata = served.export_metadata
    decode = metadata.get("decode", {})
    return {
        "name": name,
        "version": served.version,
        "engine": served.backend.engine,
        "problem": metadata.get("problem"),
        "languages": dict(served.languages),
        "hparams_set": metadata.get("hparams_set"),
        "hparams_overrides": metadata.get("hparams_overrides") or "",
        "step": metadata.get("step"),
        "weights": metadata.get("quantization") or metadata.get("serving_precision") or "float32",
        "decode": {field: decode[field] for field in _DECODE_FIELDS if field in decode},
        "nbest": decode.get("nbest", 1),
        "max_input_chars": served.limits.max_input_chars,
        "max_input_tokens": served.max_input_tokens,
        "attention": attention_note(served) is None,
        "attention_note": attention_note(served),
    }
