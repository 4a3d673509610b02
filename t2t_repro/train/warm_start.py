"""A run that starts from another run's checkpoint: which of its state is taken, and the counts that follow.

    warm = WarmStart(prefix=".../base/averaged/ckpt-3000", step=3000, reset=RESETS)   # fine-tuning
    trainer.train(..., warm_start=warm)

The weights are always taken. `reset` names what starts afresh instead of going on from the checkpoint:

    optimizer   Adam's moments (and a float16 run's loss scale) start at zero, with bias correction counted
                from the warm start; kept: the checkpoint's moments and count go on
    schedule    the learning rate warms up again from the formula's first step (section 5.3); kept: it goes
                on from the checkpoint's step
    step        the run counts its steps from 0 (train_steps more updates), with its own input order and
                dropout stream from --seed; kept: it counts on from the checkpoint's step (train_steps is the
                last step) and, when it reads the same train data in the same batches, from the same input
                position and dropout stream

Resetting all three is fine-tuning (tensor2tensor's --warm_start_from, OpenNMT-py's -train_from with
-reset_optim all, fairseq's --finetune-from-model): the run equals a fresh run whose initial weights are the
checkpoint's. Resetting none continues the parent run exactly as resuming it would.

The optimizer's update count is the run's step; the schedule and Adam's bias correction read it through
offsets (`schedule_offset`, `adam_offset`) that make each count from where its reset says.
"""

import dataclasses
import glob
import hashlib
import os

import tensorflow as tf

from t2t_repro.errors import UserError
from t2t_repro.train.checkpoints import RESTORE_ERRORS, checkpoint_reader, restore_error

RESETS = ("optimizer", "schedule", "step")


@dataclasses.dataclass(frozen=True)
class WarmStart:
    """Where a run starts from and what it resets.

    Args:
        prefix: the checkpoint prefix whose weights the run starts from.
        step: the step the checkpoint was written at (its training's update count).
        reset: the names of RESETS that start afresh.
        same_input: whether the run reads the parent's train data in the parent's batches, so that a kept step
            count goes on from the parent's input position.
        sha256: the checkpoint's content when the run began from it (`checkpoint_sha256`); None: not checked.
    """

    prefix: str
    step: int
    reset: frozenset = frozenset(RESETS)
    same_input: bool = False
    sha256: str | None = None

    def __post_init__(self):
        unknown = sorted(set(self.reset) - set(RESETS))
        if unknown:
            raise ValueError(f"unknown resets {unknown}; expected some of {RESETS}")

    @property
    def first_step(self):
        """The run's update count before its first update."""
        return 0 if "step" in self.reset else self.step

    @property
    def schedule_offset(self):
        """What the learning-rate schedule adds to the update count."""
        return (0 if "schedule" in self.reset else self.step) - self.first_step

    @property
    def adam_offset(self):
        """What Adam's bias correction adds to the update count."""
        return (0 if "optimizer" in self.reset else self.step) - self.first_step

    @property
    def continues_input(self):
        """Whether the input position and the dropout stream go on from the checkpoint's."""
        return "step" not in self.reset and self.same_input

    def describe(self):
        kept = [name for name in RESETS if name not in self.reset]
        return (f"warm start from {self.prefix} (step {self.step}): reset "
                f"{', '.join(sorted(self.reset)) or 'nothing'}; kept: weights{''.join(', ' + k for k in kept)}")


def _top_level_names(prefix):
    """The names of what a checkpoint holds: model, optimizer, data, rng, ...; a damaged one is a UserError."""
    return {name.split("/", 1)[0] for name in checkpoint_reader(prefix).get_variable_to_shape_map()}


def _taken(warm, state, checkpoint_names):
    """The parts of the trainer's checkpointable `state` that `warm` restores from its checkpoint (whose
    top-level names are `checkpoint_names`): a loss scale only where the checkpoint has one (it restarts)."""
    taken = {"model": state["model"]}
    if "optimizer" not in warm.reset:
        taken["optimizer"] = state["optimizer"]
        if "loss_scale" in state and "loss_scale" in checkpoint_names:
            taken["loss_scale"] = state["loss_scale"]
    if warm.continues_input:
        taken["data"], taken["rng"] = state["data"], state["rng"]
    return taken


def checkpoint_files(prefix):
    """The files of the checkpoint `prefix`: its index and data shards, in name order."""
    pattern = glob.escape(os.fspath(prefix))
    return sorted(glob.glob(pattern + ".index") + glob.glob(pattern + ".data-*-of-*"))


def checkpoint_sha256(prefix):
    """The sha256 of the checkpoint's files (names and bytes): a run records its parent's, so that a parent
    checkpoint rewritten later is noticed instead of taken."""
    digest = hashlib.sha256()
    for path in checkpoint_files(prefix):
        digest.update(os.path.basename(path).encode("utf-8") + b"\0")
        with open(path, "rb") as source:
            for block in iter(lambda: source.read(1 << 24), b""):
                digest.update(block)
    return digest.hexdigest()


def _read_every_tensor(prefix):
    """Reads each value of the checkpoint, so that damaged data (its checksums) is a UserError now, before a
    run is written, rather than when the run restores it."""
    reader = checkpoint_reader(prefix)
    try:
        for name, dtype in reader.get_variable_to_dtype_map().items():
            if dtype != tf.variant:  # the input pipeline's state: no array to read back
                reader.get_tensor(name)
    except RESTORE_ERRORS as error:
        raise restore_error(prefix, error, "cannot be read") from None


def check_unchanged(warm):
    """UserError when `warm`'s checkpoint is not the one the run recorded (`warm.sha256`; None: not checked)."""
    if warm.sha256 and checkpoint_sha256(warm.prefix) != warm.sha256:
        now = "is gone" if not checkpoint_files(warm.prefix) else "has changed"
        raise UserError(f"--warm_start_from: {warm.prefix} {now} since this run began from it (sha256 "
                        f"{warm.sha256[:12]}... recorded); the run would start from other weights: put that "
                        "checkpoint back, or start a new run with another --output_dir")


def check_warm_start(warm):
    """UserError when `warm`'s checkpoint is damaged, or lacks state that it takes (Adam's, where the optimizer is
    kept; the input position and dropout's state, where they go on)."""
    _read_every_tensor(warm.prefix)
    names = _top_level_names(warm.prefix)
    needed = {"model": "weights", "optimizer": "Adam's state", "data": "an input position",
              "rng": "dropout's random state"}
    state = {name: None for name in needed}
    missing = [needed[name] for name in _taken(warm, state, names) if name not in names]
    if missing:
        raise UserError(f"--warm_start_from: {warm.prefix} holds no {' and no '.join(missing)} (averaged and best "
                        "checkpoints hold the weights only); take a training checkpoint (RUN:latest or RUN:ckpt-N), "
                        "or reset the optimizer (--reset)")


def restore_warm_start(warm, state, optimizer):
    """Restores into the trainer's checkpointable `state` (model, optimizer, data, rng, ...; see `Trainer`) what
    `warm` takes from its checkpoint (`check_warm_start` has checked that it holds it), then sets the update
    count to `warm.first_step`. A checkpoint changed since the run recorded it (`warm.sha256`) is a UserError."""
    check_unchanged(warm)
    taken = _taken(warm, state, _top_level_names(warm.prefix))
    try:
        tf.train.Checkpoint(**taken).restore(warm.prefix).expect_partial().assert_existing_objects_matched()
    except RESTORE_ERRORS as error:
        raise restore_error(warm.prefix, error, "does not fit the run's model") from None
    optimizer.iterations.assign(warm.first_step)
