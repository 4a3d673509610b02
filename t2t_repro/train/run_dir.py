"""The layout of a training run's output_dir, shared by the trainer, decoder, averager and exporter.

    output_dir/
      hparams.json          the resolved HParams of the run
      run.json              problem, hparams set, overrides, data_dir, command line
      checkpoints/ckpt-N    training checkpoints (model, optimizer, step, data position), keep last K
      averaged/ckpt-N       the average of the last K training checkpoints (model weights only)
      report.json, test outputs, export/ ... (end of run)
"""

import dataclasses
import json
import os

import tensorflow as tf

from t2t_repro import registry
from t2t_repro.errors import UserError
from t2t_repro.hparams_type import HParams

HPARAMS_FILE = "hparams.json"
RUN_FILE = "run.json"
CHECKPOINT_DIR = "checkpoints"
AVERAGED_DIR = "averaged"


@dataclasses.dataclass(frozen=True)
class RunInfo:
    """What a run was started with: enough to rebuild its problem, vocabulary and model."""

    problem: str
    hparams_set: str
    hparams_overrides: str
    data_dir: str
    command_line: tuple = ()


def write_json_atomic(path, value):
    """Writes `value` as JSON to `path` through a temporary file and a rename."""
    temporary = f"{path}.tmp-{os.getpid()}"
    with open(temporary, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(temporary, path)


def read_json(path, what):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise UserError(f"{path} not found: is {os.path.dirname(path) or '.'} a t2t-repro output_dir?") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise UserError(f"{path} is not valid JSON ({what}): {error}") from None


def prepare_output_dir(output_dir, hparams, run_info):
    """Creates output_dir and records the run; a restart whose hparams differ from the saved ones is refused."""
    os.makedirs(output_dir, exist_ok=True)
    hparams_path = os.path.join(output_dir, HPARAMS_FILE)
    if os.path.exists(hparams_path):
        saved = HParams.from_dict(read_json(hparams_path, "saved hparams"))
        # train_steps may grow between sessions: extending a finished run is a restart, not a new experiment.
        differing = [key for key in saved.differing_keys(hparams) if key != "train_steps"]
        if differing:
            details = ", ".join(f"{k}: saved {getattr(saved, k)!r}, now {getattr(hparams, k)!r}" for k in differing)
            raise UserError(f"{output_dir} holds a run with different hparams ({details}); use a new --output_dir")
        saved_run = load_run_info(output_dir)
        if saved_run.problem != run_info.problem:
            raise UserError(
                f"{output_dir} holds a run of problem {saved_run.problem!r}, not {run_info.problem!r}; "
                "use a new --output_dir"
            )
    write_json_atomic(hparams_path, hparams.to_dict())
    write_json_atomic(os.path.join(output_dir, RUN_FILE), dataclasses.asdict(run_info))


def load_run_info(output_dir):
    values = read_json(os.path.join(output_dir, RUN_FILE), "run description")
    values["command_line"] = tuple(values.get("command_line", ()))
    return RunInfo(**values)


def load_hparams(output_dir):
    return HParams.from_dict(read_json(os.path.join(output_dir, HPARAMS_FILE), "saved hparams"))


def checkpoint_step(path):
    """The step number in a checkpoint prefix such as .../ckpt-1200."""
    return int(path.rsplit("-", 1)[1])


def latest_checkpoint(output_dir):
    """The checkpoint to evaluate by default: the averaged one if it is as new as the last training checkpoint,
    else the last training checkpoint; None when there is none."""
    trained = tf.train.latest_checkpoint(os.path.join(output_dir, CHECKPOINT_DIR))
    averaged = tf.train.latest_checkpoint(os.path.join(output_dir, AVERAGED_DIR))
    if averaged and (not trained or checkpoint_step(averaged) >= checkpoint_step(trained)):
        return averaged
    return trained


@dataclasses.dataclass
class LoadedRun:
    """A trained run ready to decode: its problem, vocabulary, hparams and restored model."""

    info: RunInfo
    hparams: HParams
    problem: object
    vocabulary: object
    model: object
    checkpoint: str


def restore_run(output_dir, checkpoint=None):
    """Rebuilds the run's model and restores its weights from `checkpoint` (default: `latest_checkpoint`)."""
    from t2t_repro.model import build_transformer

    info = load_run_info(output_dir)
    hparams = load_hparams(output_dir)
    problem = registry.get_problem(info.problem)
    vocabulary = problem.vocabulary(info.data_dir)
    checkpoint = checkpoint or latest_checkpoint(output_dir)
    if not checkpoint:
        raise UserError(f"no checkpoint in {output_dir}; train first with t2t-repro-trainer")
    if not tf.io.gfile.exists(checkpoint + ".index"):
        raise UserError(f"checkpoint {checkpoint} not found")
    model = build_transformer(hparams, vocabulary.vocab_size)
    try:
        tf.train.Checkpoint(model=model).restore(checkpoint).expect_partial().assert_existing_objects_matched()
    except (AssertionError, tf.errors.OpError, ValueError) as error:
        raise UserError(f"checkpoint {checkpoint} does not fit the run's model: {error}") from None
    return LoadedRun(info, hparams, problem, vocabulary, model, checkpoint)
