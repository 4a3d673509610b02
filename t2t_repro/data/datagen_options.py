"""DatagenOptions: how data is generated, declared once with their help (t2t-repro-datagen's and the trainer's
flags). This module imports no TensorFlow, so that command lines can build their flags from it quickly."""

import dataclasses

from t2t_repro.settings import check_fields, setting


@dataclasses.dataclass(frozen=True)
class DatagenOptions:
    """How a problem's data is generated, and how long the other workers of a multi-worker run wait for it."""

    workers: int | None = setting(
        None, "datagen worker processes that encode and write the records (default: one per CPU core); the data "
        "is the same for any number"
    )
    data_wait_minutes: float = setting(
        720.0, "multi-worker training: how long workers other than the chief wait for the chief to publish the "
        "data before giving up", minimum=0.0,
    )

    def __post_init__(self):
        check_fields(self, "datagen option")
