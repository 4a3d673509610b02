"""--warm_start_from and --reset: a new run that starts from another run's checkpoint (fine-tuning, domain
adaptation, a new schedule), checked against that run before anything is written, and recorded in run.json.

    warm, record = plan_warm_start(config, hparams, info, recorded, environment)  # before data generation
    check_warm_vocabulary(record, vocabulary, data_dir)       # after it, before the run is recorded

The parent run must exist and have the checkpoint; the architecture (`SHAPE_KEYS`) must be the parent's, while
hparams that change no weight's shape (dropout, learning rate, label smoothing, batch, steps) may differ; the
vocabulary must be the parent's (its sha256), which data encoded with the parent's vocabulary (the problem
setting vocab_from) has. What is taken and what is reset is `t2t_repro.train.warm_start.WarmStart`'s.

The choice is recorded in run.json (`warm_start`), with the sha256 of the parent's checkpoint: a restart of the
run resumes its own checkpoints and keeps the recorded counts, and one that has none yet refuses a parent
checkpoint that changed since; a restart may repeat the flags (the same run under another path too), not change
them.
"""

import dataclasses
import os

from t2t_repro.errors import UserError
from t2t_repro.run.checkpoint_choice import find_checkpoint, prefix_step
from t2t_repro.run.layout import RunLayout, vocabulary_sha256
from t2t_repro.run.restore import run_vocabulary
from t2t_repro.safe_write import same_file
from t2t_repro.train.checkpoints import checkpoint_prefixes
from t2t_repro.train.warm_start import RESETS, WarmStart, check_unchanged, check_warm_start, checkpoint_sha256

FLAG = "--warm_start_from"
# The hparams that give the weights their shapes (or their number): a checkpoint fits only a model of the same.
SHAPE_KEYS = ("num_layers", "d_model", "d_ff", "num_heads", "d_k", "d_v", "attention_bias", "shared_embedding",
              "position_encoding", "max_position", "norm_placement", "vocab_multiple")
# The hparams that, with the problem's data and the devices, make the batches: the parent's input position
# means the same pairs only when they are the same.
INPUT_KEYS = ("batch_tokens", "max_length", "bucket_growth")


def split_spec(value):
    """RUN[:checkpoint] -> (RUN, checkpoint or None). A path whose last part holds a colon is a RUN."""
    run, colon, checkpoint = value.rpartition(":")
    if colon and run and checkpoint and "/" not in checkpoint and os.sep not in checkpoint:
        return run, checkpoint
    return value, None


def parse_reset(value):
    """--reset's value -> frozenset of RESETS (None: all of them); UserError for an unknown name."""
    if value is None:
        return frozenset(RESETS)
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in RESETS]
    if unknown:
        raise UserError(f"--reset={value}: unknown {', '.join(unknown)}; give some of {','.join(RESETS)} "
                        "(empty: nothing)")
    return frozenset(names)


def plan_warm_start(config, hparams, info, recorded, environment):
    """The run's `WarmStart` and its run.json record, or (None, {}) when it starts from random weights.

    `info` is the RunInfo being started, `recorded` the run's RunInfo when it restarts (else None),
    `environment` the trainer's. A restart takes its recorded choice; flags that ask for another one are
    refused, and so is a warm start asked of a run that began from random weights. Checks the parent run, its
    checkpoint and architecture, and writes nothing."""
    if config.warm_start_from is not None and not config.warm_start_from.strip():
        raise UserError(f"{FLAG} is empty: give the run to start from (RUN or RUN:checkpoint), or drop the flag to "
                        "start from random weights")
    run_dir, which = split_spec(config.warm_start_from or "")
    if run_dir and os.path.exists(run_dir) and os.path.exists(config.output_dir) \
            and os.path.samefile(run_dir, config.output_dir):
        raise UserError(f"{FLAG}={config.warm_start_from} is this run's own --output_dir: a run resumes itself; "
                        "drop the flag, or give the new run another --output_dir")
    if recorded is not None and (recorded.warm_start or config.warm_start_from):
        return _restart(config, recorded)
    if not config.warm_start_from:
        if config.reset is not None:
            raise UserError("--reset says what a warm start resets: give --warm_start_from=RUN too")
        return None, {}
    reset = parse_reset(config.reset)
    parent = RunLayout(run_dir)
    parent.check_is_run(f"{FLAG}={config.warm_start_from}: {run_dir}")
    parent_info, parent_hparams = parent.load_info(), parent.load_hparams()
    _check_architecture(run_dir, parent_hparams, hparams)
    prefix = os.path.abspath(find_checkpoint(parent, which, FLAG))
    step = prefix_step(prefix)
    if step is None:
        raise UserError(f"{FLAG}: the step of {prefix} is not in its name (ckpt-N)")
    if "step" not in reset and hparams.train_steps <= step:
        raise UserError(f"{FLAG}: train_steps={hparams.train_steps} is not beyond step {step} of {prefix}, which "
                        "the run counts on from (step is not reset): raise --train_steps, or --reset=...,step to "
                        "train train_steps more")
    same_input = (
        (parent_info.problem, parent_info.problem_settings, parent_info.data_dir)
        == (info.problem, info.problem_settings, info.data_dir)
        and all(getattr(parent_hparams, key) == getattr(hparams, key) for key in INPUT_KEYS)
        and all(parent_info.environment.get(key) == environment.get(key) for key in ("devices", "micro_batch_tokens"))
    )
    check_warm_start(WarmStart(prefix, step, reset, same_input))
    warm = WarmStart(prefix, step, reset, same_input, checkpoint_sha256(prefix))
    record = {"run": os.path.abspath(run_dir), "checkpoint": prefix, "step": step, "reset": sorted(reset),
              "same_input": same_input, "vocabulary_sha256": _parent_vocabulary(run_dir, parent_info),
              "checkpoint_sha256": warm.sha256}
    return warm, record


def _restart(config, recorded):
    """The recorded warm start of a restarted run; UserError when the flags ask for another one."""
    record = recorded.warm_start
    if not record:
        raise UserError(f"{config.output_dir} holds a run that started from random weights; {FLAG} starts a new "
                        "run: give it another --output_dir")
    asked = config.warm_start_from and not same_file(split_spec(config.warm_start_from)[0], record["run"])
    if asked or (config.reset is not None and sorted(parse_reset(config.reset)) != record["reset"]):
        raise UserError(f"{config.output_dir} is a run warm-started from {record['checkpoint']} with --reset="
                        f"{','.join(record['reset'])}; a restart resumes it as it began: drop {FLAG} and --reset, "
                        "or give a new --output_dir")
    warm = WarmStart(record["checkpoint"], record["step"], frozenset(record["reset"]), record["same_input"],
                     record.get("checkpoint_sha256"))  # runs recorded before it was: not checked
    if warm.sha256 and not checkpoint_prefixes(RunLayout(config.output_dir).checkpoint_dir):
        # No checkpoint of its own yet: it starts from the parent again, checked now, before anything is written.
        check_unchanged(warm)
        warm = dataclasses.replace(warm, sha256=None)
    return warm, record


def _check_architecture(run_dir, parent_hparams, hparams):
    differing = [key for key in SHAPE_KEYS if getattr(parent_hparams, key) != getattr(hparams, key)]
    if differing:
        details = ", ".join(f"{key} {getattr(hparams, key)!r}, not {getattr(parent_hparams, key)!r}"
                            for key in differing)
        raise UserError(f"{FLAG}: the run's architecture differs from {run_dir}'s ({details}); a checkpoint fits "
                        "only a model of its own shapes (hparams that change none, e.g. dropout, learning rate, "
                        "label smoothing, batch or steps, may differ)")


def _parent_vocabulary(run_dir, parent_info):
    """The sha256 of the parent run's vocabulary: recorded, or (runs made before it was) read from its data."""
    return parent_info.vocabulary_sha256 or vocabulary_sha256(run_vocabulary(run_dir)[2])


def check_warm_vocabulary(record, vocabulary, data_dir):
    """UserError when the run's `vocabulary` (read from `data_dir`) is not the parent run's: its ids would mean
    other pieces to the parent's weights."""
    if not record:
        return
    found = vocabulary_sha256(vocabulary)
    if found != record["vocabulary_sha256"]:
        raise UserError(f"{FLAG}: {record['run']} trained with another vocabulary (sha256 "
                        f"{record['vocabulary_sha256'][:12]}...) than this run's data in {data_dir} ({found[:12]}...); "
                        f"its weights would read other pieces: encode the new data with its vocabulary (the problem "
                        f"setting vocab_from={record['run']})")

