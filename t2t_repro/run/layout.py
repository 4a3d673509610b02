"""The layout of a run's output_dir, and the records of what the run was started with.

    output_dir/
      hparams.json          the resolved HParams of the run
      run.json              problem and its settings, hparams set, overrides, data_dir, the user directory
                            (--t2t_usr_dir) and the names it registered, command line, environment (device,
                            devices, precision, XLA), seed, training time so far and its budget
      checkpoints/ckpt-N    training checkpoints (model, optimizer, step, data position), keep last K
      averaged/ckpt-N       the average of the last K training checkpoints (model weights only)
      best/ckpt-N           the weights of the best dev evaluation so far (model weights only), with score.json
      train/, dev/          TensorBoard summaries of training and of dev evaluation
      test_decoded.txt      the decoded test split
      report.json           the run's scores and statistics
      export/N/             SavedModel versions

A seed ensemble's output_dir (t2t-repro-trainer --ensemble_seeds, `t2t_repro.run.seed_ensemble`) holds its
runs, each laid out as above, and the ensemble's own ensemble.json, test_decoded.txt, report.json and export/.
"""

import dataclasses
import os

from t2t_repro.errors import UserError
from t2t_repro.hparams_type import HParams
from t2t_repro.json_file import read_json
from t2t_repro.safe_write import write_json
from t2t_repro.settings import dict_differences
from t2t_repro.train.checkpoints import checkpoint_step, latest_checkpoint


# The hparams a run may change between sessions when asked (--allow_precision_change).
NUMERICS_KEYS = ("precision", "tf32")


@dataclasses.dataclass(frozen=True)
class RunInfo:
    """What a run was started with: enough to rebuild its problem, vocabulary and model."""

    problem: str
    hparams_set: str
    hparams_overrides: str
    data_dir: str
    command_line: tuple = ()
    # What the latest session trains on and how: device model and kind, devices, precision, TF32, XLA.
    environment: dict = dataclasses.field(default_factory=dict)
    # Which vocabularies the run trains with, `Vocabularies.sha256`: a shared one's model's sha256, or one over
    # both sides' ("": not recorded, runs made before it was).
    vocabulary_sha256: str = ""
    # The problem's settings: as given (--problem_overrides) and resolved (every setting's value).
    problem_overrides: str = ""
    problem_settings: dict = dataclasses.field(default_factory=dict)
    # The user directory of problems and hparams sets (absolute path; "": none) and the names it registered.
    t2t_usr_dir: str = ""
    usr_names: dict = dataclasses.field(default_factory=dict)
    # Where the run's weights started ({}: random): the run and checkpoint, its step, what was reset, whether
    # the input went on, the vocabulary's sha256 (`t2t_repro.run.warm_start`).
    warm_start: dict = dataclasses.field(default_factory=dict)
    # The seed of initialization, dropout and data order (None: not recorded, runs made before it was).
    seed: int | None = None
    # How far training went when a session last ended it (`training_record`): steps, training time summed over
    # the sessions, the time budget it ran under and whether that ended it ({}: no session has ended yet).
    training: dict = dataclasses.field(default_factory=dict)


def training_record(training):
    """run.json's `training` of a session's training statistics (`Trainer.train`'s)."""
    keys = ("steps", "train_seconds", "max_train_minutes", "stopped_by_time", "stopped_early")
    return {key: training.get(key) for key in keys}


def vocabulary_sha256(vocabularies):
    """`Vocabularies.sha256`: which vocabularies, whatever files they were read from ("" for vocabularies of
    another kind, which are then not checked)."""
    try:
        return vocabularies.sha256
    except AttributeError:
        return ""


def check_vocabulary(info, vocabularies, data_dir):
    """Raises UserError when `vocabularies` (read from `data_dir`) are not the ones the run recorded: their ids
    would mean other pieces, and every output would be wrong without a word."""
    if not info.vocabulary_sha256:
        return
    found = vocabulary_sha256(vocabularies)
    if info.vocabulary_sha256 != found:
        what = ("vocabulary in {} is not the one" if vocabularies.shared
                else "source and target vocabularies in {} are not the ones").format(data_dir)
        raise UserError(f"the {info.problem} {what} this run trained with "
                        f"(sha256 {found[:12]}..., the run recorded {info.vocabulary_sha256[:12]}...); give the "
                        "run its own data (--data_dir) or a new --output_dir")


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
    def best_dir(self):
        return self.path("best")

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

    @property
    def ensemble_file(self):
        """Where a seed ensemble's output_dir names its runs (`t2t_repro.run.seed_ensemble`)."""
        return self.path("ensemble.json")

    def holds_run(self):
        """True when output_dir holds (the start of) a single run."""
        return os.path.exists(self.hparams_file) or os.path.exists(self.info_file)

    def check_not_a_file(self):
        """UserError where output_dir names a file: no run can be written there."""
        if os.path.exists(self.output_dir) and not os.path.isdir(self.output_dir):
            raise UserError(f"--output_dir={self.output_dir} is a file, not a directory; name a directory")

    def check_is_run(self, named, hint=""):
        """UserError "`named` is not a t2t-repro run (no run.json there)`hint`" where output_dir holds no run:
        `named` is how the flag or setting that names the directory is quoted."""
        if not os.path.isfile(self.info_file):
            raise UserError(f"{named} is not a t2t-repro run (no run.json there){hint}")

    def load_info(self):
        if not os.path.exists(self.info_file) and os.path.isfile(self.ensemble_file):
            members = read_json(self.ensemble_file, "a seed ensemble's runs").get("runs") or ["seed_1"]
            paths = [self.path(member) for member in members]
            raise UserError(f"{self.output_dir} holds a seed ensemble, not one run: give one of its runs "
                            f"({', '.join(paths)}), or decode or export them together with --output_dir={paths[0]} "
                            f"--ensemble={','.join(paths[1:])}")
        values = read_json(self.info_file, "run description")
        fields = [f.name for f in dataclasses.fields(RunInfo)]
        required = [f.name for f in dataclasses.fields(RunInfo)
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        missing = [name for name in required if name not in values]
        unknown = sorted(set(values) - set(fields))
        if missing or unknown:
            problems = ([f"lacks {', '.join(missing)}"] if missing else []) + (
                [f"has unknown keys {', '.join(unknown)}"] if unknown else [])
            raise UserError(f"{self.info_file} is not a t2t-repro run description: it {' and '.join(problems)}")
        command_line = values.get("command_line", [])
        wrong = [name for name in required if not isinstance(values[name], str)]
        if not isinstance(command_line, list) or not all(isinstance(arg, str) for arg in command_line):
            wrong.append("command_line")
        wrong += [name for name in ("environment", "problem_settings", "usr_names", "warm_start", "training")
                  if not isinstance(values.get(name, {}), dict)]
        seed = values.get("seed")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            wrong.append("seed")
        wrong += [name for name in ("vocabulary_sha256", "problem_overrides", "t2t_usr_dir")
                  if not isinstance(values.get(name, ""), str)]
        if wrong:
            raise UserError(f"{self.info_file} is not a t2t-repro run description: {', '.join(wrong)} must be "
                            "text (command_line: a list of text; environment, problem_settings, usr_names, warm_start, "
                            "training: objects; seed: an integer)")
        return RunInfo(**dict(values, command_line=tuple(command_line)))

    def load_hparams(self):
        values = read_json(self.hparams_file, "saved hparams")
        if isinstance(values, dict):
            # Runs recorded before attention_bias existed had biases in every attention projection.
            values.setdefault("attention_bias", True)
            # And those recorded before bucket_growth existed bucketed with tensor2tensor's 1.1.
            values.setdefault("bucket_growth", 1.1)
        try:
            return HParams.from_dict(values)
        except UserError as error:
            raise UserError(f"{self.hparams_file}: {error}") from None

    def check_restart(self, hparams, info, allow_precision_change=False, problem=None):
        """Raises UserError when output_dir cannot take this run: it is not a directory, or it holds a run of
        other hparams (other than train_steps, and precision and tf32 when `allow_precision_change`) or of
        another problem. Writes nothing, so the trainer checks before generating data. `problem` (the run's, if
        given) reads the recorded problem settings (`Problem.settings_differences`)."""
        self.check_not_a_file()
        if os.path.exists(self.ensemble_file):
            raise UserError(f"{self.output_dir} holds a seed ensemble (ensemble.json): resume it with its "
                            "--ensemble_seeds, or use a new --output_dir")
        if not self.holds_run():
            return
        saved_info = self.load_info()
        if saved_info.problem != info.problem:
            raise UserError(f"{self.output_dir} holds a run of problem {saved_info.problem!r}, not {info.problem!r}; "
                            "use a new --output_dir")
        differences = problem.settings_differences if problem else dict_differences
        details = differences(saved_info.problem_settings, info.problem_settings)
        if details:
            remedy = (f"give the same --problem_overrides ({saved_info.problem_overrides!r})"
                      if saved_info.problem_overrides != info.problem_overrides else
                      "the problem's defaults changed since the run began: give its saved values in "
                      "--problem_overrides")
            raise UserError(f"{self.output_dir} holds a run with different problem settings ({details}); {remedy} or "
                            "use a new --output_dir")
        if saved_info.seed is not None and info.seed is not None and saved_info.seed != info.seed:
            raise UserError(f"{self.output_dir} holds a run with seed {saved_info.seed}, not {info.seed}: a restart "
                            f"resumes the random state its checkpoints hold; give --seed={saved_info.seed} or use a "
                            "new --output_dir")
        saved = self.load_hparams()
        # train_steps may grow between sessions: extending a finished run is a restart, not a new experiment.
        # Checkpoints hold float32 weights in every precision, so a run may change precision if the user asks.
        exempt = {"train_steps"} | (set(NUMERICS_KEYS) if allow_precision_change else set())
        differing = [key for key in saved.differing_keys(hparams) if key not in exempt]
        if differing:
            details = ", ".join(f"{k}: saved {getattr(saved, k)!r}, now {getattr(hparams, k)!r}" for k in differing)
            hint = ""
            if set(differing) <= set(NUMERICS_KEYS):
                hint = ", or --allow_precision_change to resume it in the new precision"
            raise UserError(f"{self.output_dir} holds a run with different hparams ({details}); use a new "
                            f"--output_dir{hint}")

    def record(self, hparams, info, allow_precision_change=False, problem=None):
        """Creates output_dir and records the run; a restart whose hparams or problem differ is refused."""
        self.check_restart(hparams, info, allow_precision_change, problem)
        try:
            os.makedirs(self.output_dir, exist_ok=True)
        except OSError as error:
            raise UserError(f"cannot create --output_dir={self.output_dir}: {error.strerror}") from None
        write_json(self.hparams_file, hparams.to_dict())
        self.write_info(info)

    def write_info(self, info):
        """Writes run.json (atomically)."""
        write_json(self.info_file, dataclasses.asdict(info))

    def latest_checkpoint(self):
        """The checkpoint to evaluate by default: the averaged one if it is as new as the last training
        checkpoint, else the last training checkpoint; None when there is none."""
        trained = latest_checkpoint(self.checkpoint_dir)
        averaged = latest_checkpoint(self.averaged_dir)
        if averaged and (not trained or checkpoint_step(averaged) >= checkpoint_step(trained)):
            return averaged
        return trained
