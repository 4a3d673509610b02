"""How a model is exported and which engine runs it: the exporter's, decoder's and server's own flags.

    ExportSettings(format="ctranslate2", quantization="int8")     # t2t-repro-exporter --format=ctranslate2 ...
    ExportSettings(serving_precision="mixed_bfloat16")            # t2t-repro-exporter --serving_precision=...
    EngineSettings(engine="ctranslate2", threads=2)                # t2t-repro-decoder / t2t-repro-serve --engine=...

This module imports no TensorFlow and no CTranslate2, so that command lines can build their flags from it.
"""

import dataclasses

from t2t_repro.errors import UserError
from t2t_repro.hparams_type import PRECISIONS
from t2t_repro.settings import check_fields, setting

SAVED_MODEL = "saved_model"
CTRANSLATE2 = "ctranslate2"
TENSORFLOW = "tensorflow"
# CTranslate2's weight types for CPUs: int8 weights (with float32 activations; int8_float32 is the same on a
# CPU), int16 weights, or float32 as trained.
QUANTIZATIONS = ("int8", "int8_float32", "int16", "float32")
DEFAULT_QUANTIZATION = "float32"


def _serving_precision(what):
    """The TensorFlow model's precision when it decodes: float32 by default whatever the run trained in (its
    checkpoints hold float32 weights), or a mixed-precision policy on request."""
    return setting(
        "float32", f"{what}: the Keras dtype policy the model decodes in (default float32, whatever precision "
        "the run trained in; mixed_bfloat16 or mixed_float16 compute in half precision with float32 weights, "
        "softmaxes and logits)", choices=PRECISIONS,
    )


def _check_not_ctranslate2(precision, flag):
    if precision != "float32":
        raise UserError(f"--serving_precision={precision} does not apply to {flag}={CTRANSLATE2}: CTranslate2 "
                        "computes in the type of its weights (t2t-repro-exporter --quantization)")


@dataclasses.dataclass(frozen=True)
class ExportSettings:
    """What t2t-repro-exporter writes."""

    format: str = setting(
        SAVED_MODEL, "saved_model: a TensorFlow SavedModel, text in and text out (TensorFlow Serving, "
        "t2t-repro-serve); ctranslate2: a CTranslate2 model directory (t2t-repro-serve and t2t-repro-decoder "
        "--engine=ctranslate2, CPU serving in int8)", choices=(SAVED_MODEL, CTRANSLATE2),
    )
    quantization: str | None = setting(
        None, f"ctranslate2 format only: the weights' type (default {DEFAULT_QUANTIZATION}, as trained)",
        choices=QUANTIZATIONS,
    )
    serving_precision: str = _serving_precision("saved_model format only")

    def __post_init__(self):
        check_fields(self, "export setting")
        if self.quantization is not None and self.format != CTRANSLATE2:
            raise UserError(f"--quantization={self.quantization} applies to --format={CTRANSLATE2} only")
        if self.format == CTRANSLATE2:
            _check_not_ctranslate2(self.serving_precision, "--format")

    @property
    def weight_type(self):
        """The CTranslate2 weight type to write."""
        return self.quantization or DEFAULT_QUANTIZATION


@dataclasses.dataclass(frozen=True)
class EngineSettings:
    """Which engine runs an exported or trained model in t2t-repro-decoder and t2t-repro-serve."""

    engine: str = setting(
        TENSORFLOW, "tensorflow: the run's checkpoint (decoder) or a SavedModel export (server); ctranslate2: a "
        "CTranslate2 export (t2t-repro-exporter --format=ctranslate2)", choices=(TENSORFLOW, CTRANSLATE2),
    )
    threads: int = setting(
        0, "ctranslate2 engine only: CPU threads per translation (0: CTranslate2's default)", minimum=0,
    )
    serving_precision: str = _serving_precision("tensorflow engine only")

    def __post_init__(self):
        check_fields(self, "engine setting")
        if self.threads and self.engine != CTRANSLATE2:
            raise UserError(f"--threads={self.threads} applies to --engine={CTRANSLATE2} only")
        if self.engine == CTRANSLATE2:
            _check_not_ctranslate2(self.serving_precision, "--engine")

