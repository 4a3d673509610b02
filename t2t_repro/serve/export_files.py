"""The names an export version uses: its signatures, inputs and outputs, the files it keeps beside the model;
and reading its metadata.

A SavedModel version keeps them in `assets.extra/`, which TensorFlow Serving ignores; a CTranslate2 version
(a CTranslate2 model directory: model.bin, config.json, shared_vocabulary.json) keeps them at its top.
"""

import json
import os

from t2t_repro import safe_write

# The signatures of an export (a SavedModel's, and those the server gives a CTranslate2 export), their input
# and outputs.
TEXT_SIGNATURE = "serving_default"
IDS_SIGNATURE = "ids"
INPUT_NAME = "inputs"
OUTPUT_NAME = "outputs"
SCORES_NAME = "scores"
# The signature that also answers each translation's encoder-decoder attention (t2t_repro.serve.export_attention).
ATTENTION_SIGNATURE = "attention"
SOURCE_PIECES_NAME = "source_pieces"
TARGET_PIECES_NAME = "target_pieces"
ATTENTION_NAME = "attention"

SAVED_MODEL_METADATA = os.path.join("assets.extra", "t2t_repro_export.json")
SAVED_MODEL_VOCABULARY = os.path.join("assets.extra", "vocab.model")
# Separate vocabularies (`shared_vocabulary=false`): each side's model, in place of the shared one.
SAVED_MODEL_SIDE_VOCABULARIES = {side: os.path.join("assets.extra", f"vocab.{side}.model")
                                 for side in ("source", "target")}
CTRANSLATE2_METADATA = "t2t_repro_export.json"
CTRANSLATE2_VOCABULARY = "vocab.model"
CTRANSLATE2_SIDE_VOCABULARIES = {side: f"vocab.{side}.model" for side in ("source", "target")}  # separate ones


def read_export_metadata(version_dir):
    """The metadata JSON written beside an exported model (SavedModel or CTranslate2); {} if there is none."""
    for name in (SAVED_MODEL_METADATA, CTRANSLATE2_METADATA):
        try:
            with open(os.path.join(version_dir, name), encoding="utf-8") as f:
                metadata = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(metadata, dict):
            return metadata
    return {}


def write_vocabularies(version_dir, vocabularies, shared_file, side_files):
    """Writes an export's SentencePiece models into `version_dir`: the shared one as `shared_file`, or each side's
    as `side_files[side]` ("source", "target")."""
    files = ({shared_file: vocabularies.target} if vocabularies.shared else
             {name: getattr(vocabularies, side) for side, name in side_files.items()})
    for name, vocabulary in files.items():
        safe_write.write_file(os.path.join(version_dir, name), vocabulary.serialized_model)
