"""TrainingOptions: how a run trains (devices, batching, checkpoints, logging), declared once with their help.

This module imports no TensorFlow, so that command lines can build their flags from it quickly.
"""

import dataclasses

from t2t_repro.settings import check_fields, check_interval, setting

STRATEGIES = ("auto", "mirrored", "multi_worker", "tpu", "one_device")

# Tokens per side one device handles in a micro-batch unless told otherwise. The paper's 8 P100s each held
# about 25,000 / 8 = 3,125 (section 5.2); 4,096 fits the big model in float32 on any current accelerator, so
# one GPU accumulates 7 micro-batches to train with the paper's 25,000-token batch, 8 GPUs need none.
DEFAULT_DEVICE_BATCH_TOKENS = 4096


@dataclasses.dataclass(frozen=True)
class TrainingOptions:
    """How a run trains (devices, batching, checkpoints, logging): the trainer's flags."""

    strategy: str = setting("auto", "auto, mirrored, multi_worker (TF_CONFIG), tpu or one_device", choices=STRATEGIES)
    tpu: str | None = setting(None, "TPU address for --strategy=tpu")
    batch_tokens: int | None = setting(None, "global batch per side in tokens (default: the hparams')")
    device_batch_tokens: int | None = setting(
        None, f"tokens per side one device handles per micro-batch (default {DEFAULT_DEVICE_BATCH_TOKENS}; "
        "sets auto accumulation)"
    )
    gradient_accumulation: str = setting("auto", "micro-batches per update: auto or a count")
    # Section 6.1: checkpoints written at 10-minute intervals.
    checkpoint_minutes: float = setting(10.0, "write a checkpoint this often (section 6.1)", minimum=1e-9)
    checkpoint_steps: int | None = setting(
        None, "also write a checkpoint every this many steps (default: train_steps / (4 x averaging count))"
    )
    keep_checkpoints: int | None = setting(None, "checkpoints kept (default: the averaging count)")
    seed: int = setting(
        1, "seed of initialization, dropout and data order; recorded in run.json: a restart resumes the random "
        "state its checkpoints hold and refuses another seed", minimum=0
    )
    max_train_minutes: float | None = setting(
        None, "end training at the first update that ends after this many minutes of the run's training time, "
        "checkpoint (and dev-evaluate) that step, then average, test and export as usual; with train_steps, "
        "whichever comes first. Training time is the training loop's wall time (dev evaluations and checkpoint "
        "writes included; data generation, model building and the end of the run not), summed over restarts "
        "as the checkpoints record it (recorded in run.json); a restart may change it (default: no limit)"
    )
    log_steps: int = setting(100, "print and summarise training every this many steps")
    eval_steps: int = setting(2000, "evaluate on the dev split every this many steps")
    early_stopping: int = setting(
        0, "end training after this many dev evaluations in a row without a better dev score (BLEU or F1, or "
        "the dev loss with --eval_decode_sentences=0); 0: train all train_steps. The count is the run's (kept "
        "in its checkpoints), the patience this command's: a restart after an early stop trains no further "
        "with the same patience, and on with a larger one or 0", minimum=0
    )
    best_metric: str = setting(
        "auto", "the dev figure that chooses the best checkpoint and early stopping: bleu or chrf (translation), "
        "f1 (parsing), loss; auto: BLEU or F1, or the dev loss with --eval_decode_sentences=0",
        choices=("auto", "bleu", "chrf", "f1", "loss"),
    )
    xla: bool = setting(False, "compile each micro-batch's forward and backward pass with XLA (faster on some "
                        "accelerators; tools/benchmark.py --suite train --jit_compile both measures it on yours)")

    def __post_init__(self):
        check_fields(self, "training option")
        if self.max_train_minutes is not None:
            check_interval(self, "training option", ["max_train_minutes"], 0, low_open=True)
