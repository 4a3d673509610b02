"""The layout of a run's output_dir, and the records of what the run was started with.

    output_dir/
      hparams.json          the resolved HParams of the run
      run.json              problem, hparams set, overrides, data_dir, command line
      checkpoints/ckpt-N    training checkpoints (model, optimizer, step, data position), keep last K
      averaged/ckpt-N       the average of the last K training checkpoints (model weights only)
      train/, dev/          TensorBoard summaries of training and of dev evaluation
      test_decoded.txt      the decoded test split
      report.json           the run's scores and statistics
      export/N/             SavedModel versions
"""

import dataclasses
import json
import os

import tensorflow as tf

from t2t_repro.errors import UserError
from t2t_repro.hparams_type import HParams
from t2t_repro.safe_write import write_json
from t2t_repro.train.checkpoints import checkpoint_step


@dataclasses.dataclass(frozen=True)
class RunInfo:
    """What a run was started with: enough to rebuild its problem, vocabulary and model."""

    problem: str
    hparams_set: str
    hparams_overrides: str
    data_dir: str
    command_line: tuple = ()


class RunLayout:
    """The paths of one run directory."""

    def __init__(self, output_dir):
        self.output_dir = os.fspath(output_dir)

    def path(self, *names):
        return os.path.join(self.output_dir, *names)

    @property
    def hparams_file(self):
        return self.path("hparams.json")

    @property
    def info_file(self):
        return self.path("run.json")

    @property
    def checkpoint_dir(self):
        return self.path("checkpoints")

    @property
    def averaged_dir(self):
        return self.path("averaged")

    @property
    def train_summary_dir(self):
        return self.path("train")

    @property
    def dev_summary_dir(self):
        return self.path("dev")

    @property
    def test_output_file(self):
        return self.path("test_decoded.txt")

    @property
    def report_file(self):
        return self.path("report.json")

    @property
    def export_dir(self):
        return self.path("export")

    def load_info(self):
        values = read_json(self.info_file, "run description")
        values["command_line"] = tuple(values.get("command_line", ()))
        return RunInfo(**values)

    def load_hparams(self):
        return HParams.from_dict(read_json(self.hparams_file, "saved hparams"))

    def record(self, hparams, info):
        """Creates output_dir and records the run; a restart whose hparams or problem differ is refused."""
        os.makedirs(self.output_dir, exist_ok=True)
        if os.path.exists(self.hparams_file):
            saved = self.load_hparams()
            # train_steps may grow between sessions: extending a finished run is a restart, not a new experiment.
            differing = [key for key in saved.differing_keys(hparams) if key != "train_steps"]
            if differing:
                details = ", ".join(f"{k}: saved {getattr(saved, k)!r}, now {getattr(hparams, k)!r}" for k in differing)
                raise UserError(f"{self.output_dir} holds a run with different hparams ({details}); use a new --output_dir")
            saved_problem = self.load_info().problem
            if saved_problem != info.problem:
                raise UserError(f"{self.output_dir} holds a run of problem {saved_problem!r}, not {info.problem!r}; "
                                "use a new --output_dir")
        write_json(self.hparams_file, hparams.to_dict())
        write_json(self.info_file, dataclasses.asdict(info))

    def latest_checkpoint(self):
        """The checkpoint to evaluate by default: the averaged one if it is as new as the last training
        checkpoint, else the last training checkpoint; None when there is none."""
        trained = tf.train.latest_checkpoint(self.checkpoint_dir)
        averaged = tf.train.latest_checkpoint(self.averaged_dir)
        if averaged and (not trained or checkpoint_step(averaged) >= checkpoint_step(trained)):
            return averaged
        return trained


def read_json(path, what):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise UserError(f"{path} not found: is {os.path.dirname(path) or '.'} a t2t-repro output_dir?") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise UserError(f"{path} is not valid JSON ({what}): {error}") from None
