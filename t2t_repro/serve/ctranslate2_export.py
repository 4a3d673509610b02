"""Export of a trained model as a CTranslate2 model directory, for fast CPU decoding and serving (int8).

    path = export_ctranslate2(model, vocabularies, settings, "runs/wmt_ende/export_ctranslate2", description,
                              quantization="int8")   # -> .../export_ctranslate2/<N>

(`t2t_repro.run.ctranslate2_jobs.export` does this for a run directory.) A version directory holds

    model.bin, config.json, shared_vocabulary.json   the CTranslate2 model (`ctranslate2.Translator(path)`)
    vocab.model                                      the SentencePiece model whose pieces are its tokens
    t2t_repro_export.json                            problem, checkpoint, step, decode settings, quantization

The network is built with ctranslate2's specification API (`t2t_repro.serve.ctranslate2_spec`) and its
weights stored in `quantization`: float32 as trained, int16, or int8 (int8_float32 is the same on a CPU).
Versions are numbered and published atomically as SavedModel exports are (`t2t_repro.serve.versions`).

The sinusoid position table covers what the export's decode settings can read: sources of up to
max_input_length tokens and outputs of up to max_input_length + extra_length; decoding with larger settings
is refused (`t2t_repro.serve.ctranslate2_model`). Learned positions are their own table of max_position rows,
where outputs stop as in `t2t_repro.decode.transformer_search`.
"""

import os
import time

from t2t_repro import safe_write
from t2t_repro.errors import UserError
from t2t_repro.serve.ctranslate2_spec import transformer_spec, unsupported_settings
from t2t_repro.serve.export_files import (
    CTRANSLATE2_METADATA, CTRANSLATE2_SIDE_VOCABULARIES, CTRANSLATE2_VOCABULARY, write_vocabularies,
)
from t2t_repro.serve.options import CTRANSLATE2, QUANTIZATIONS
from t2t_repro.serve.versions import unwritten_version_error, write_new_version

FORMAT_VERSION = 1


def check_exportable(hparams):
    """Raises UserError naming every setting of the model that CTranslate2 cannot express."""
    unsupported = unsupported_settings(hparams)
    if unsupported:
        raise UserError(f"this model cannot be exported to CTranslate2: {'; '.join(unsupported)}")


def export_ctranslate2(model, vocabularies, settings, export_dir, description, quantization):
    """Exports a model as a new CTranslate2 version under `export_dir`; returns the version directory's path.

    Args:
        model: the trained Transformer; vocabularies: its `Vocabularies` (written beside it: vocab.model, or
            vocab.source.model and vocab.target.model when the sides have their own).
        settings: the DecodeSettings recorded as the export's defaults; max_input_length must be set.
        export_dir: where versions go; version N is export_dir/N.
        description: what the export comes from (problem, hparams, checkpoint, step, post-processing), written
            into the metadata.
        quantization: one of `t2t_repro.serve.options.QUANTIZATIONS`.
    """
    if settings.max_input_length is None:
        raise ValueError("the export needs settings.max_input_length")
    if quantization not in QUANTIZATIONS:
        raise ValueError(f"quantization {quantization!r}: expected one of {', '.join(QUANTIZATIONS)}")
    check_exportable(model.hparams)
    learned = model.hparams.position_encoding == "learned"
    positions = model.hparams.max_position if learned else settings.max_input_length + settings.extra_length
    spec = transformer_spec(model, vocabularies, positions)
    spec.validate()
    spec.optimize(quantization=quantization)
    metadata = {
        "format_version": FORMAT_VERSION,
        "format": CTRANSLATE2,
        **description,
        "vocab_size": vocabularies.target.vocab_size,
        **({} if vocabularies.shared else {"shared_vocabulary": False,
                                           "source_vocab_size": vocabularies.source.vocab_size}),
        "quantization": quantization,
        "decode": settings.export_record(),  # the decoder's and server's defaults, nbest included
        # Rows of the position tables: the longest source, and output, the model can read.
        "positions": positions,
        "outputs_stop_at_positions": learned,
        "exported_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }

    def write(path):
        try:
            spec.save(path)
            write_vocabularies(path, vocabularies, CTRANSLATE2_VOCABULARY, CTRANSLATE2_SIDE_VOCABULARIES)
            safe_write.write_json(os.path.join(path, CTRANSLATE2_METADATA), metadata)
        except OSError as error:  # e.g. a full disk: no version is published
            raise unwritten_version_error("a CTranslate2 model", export_dir, error) from None

    return write_new_version(export_dir, write)
