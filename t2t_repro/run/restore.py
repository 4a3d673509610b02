"""A trained run rebuilt from its output_dir: problem, vocabularies, hparams and the model with restored weights."""

import dataclasses

from t2t_repro import catalog
from t2t_repro.decode.beam_memory import check_beam_fits
from t2t_repro.hparams_type import HParams
from t2t_repro.model import build_transformer, half_precision_weights
from t2t_repro.run.checkpoint_choice import prefix_step, restore_checkpoint
from t2t_repro.run.layout import RunInfo, RunLayout, check_vocabulary
from t2t_repro.run.user_code import import_run_code
from t2t_repro.train.precision import configure_tf32


@dataclasses.dataclass
class LoadedRun:
    """A trained run ready to decode: its problem, vocabularies (source and target), hparams and restored model."""

    layout: RunLayout
    info: RunInfo
    hparams: HParams
    problem: object
    vocabularies: object
    model: object
    checkpoint: str

    @property
    def step(self):
        """The training step of the restored checkpoint (None when its name does not say)."""
        return prefix_step(self.checkpoint)

    def decode_settings(self, **flags):
        """The problem's decoding defaults with the run's max_length as the longest source, then `flags`
        (None values: not given) on top."""
        return run_decode_settings(self.problem, self.hparams, self.vocabularies, **flags)


def run_decode_settings(problem, hparams, vocabularies, **flags):
    """`LoadedRun.decode_settings` of a run's problem, hparams and vocabularies: flags that do not fit are refused
    (UserError), a beam too wide for the machine's memory too."""
    settings = problem.decode_settings.override(max_input_length=hparams.max_length).override(**flags)
    check_beam_fits(settings, hparams, vocabularies.target.vocab_size)
    return settings


def check_decode_flags(output_dir, usr_dir=None, **flags):
    """Refuses (UserError) decode setting flags that do not fit the run's problem (e.g. an nbest over its beam
    size) from its records alone, before any model is restored."""
    layout = RunLayout(output_dir)
    info = layout.load_info()
    import_run_code(info, usr_dir)
    problem = run_problem(info)
    run_decode_settings(problem, layout.load_hparams(), problem.vocabularies(info.data_dir), **flags)


def run_problem(info):
    """The problem of the run `info` (a RunInfo) describes, with the settings it recorded."""
    return catalog.recorded_problem(info.problem, info.problem_overrides, info.problem_settings)


def run_vocabulary(output_dir, usr_dir=None):
    """The run's RunInfo, its problem (with its recorded settings) and the `Vocabularies` it trained with, checked
    against its record; its user directory imported (`usr_dir` where the code is now, else the recorded one)."""
    info = RunLayout(output_dir).load_info()
    import_run_code(info, usr_dir)
    problem = run_problem(info)
    vocabularies = problem.vocabularies(info.data_dir)
    check_vocabulary(info, vocabularies, info.data_dir)
    return info, problem, vocabularies


def restore_run(output_dir, checkpoint=None, precision="float32", usr_dir=None):
    """Rebuilds the run's model and restores its weights from `checkpoint`: averaged, latest, best, a checkpoint
    path, or None for the default (`t2t_repro.run.checkpoint_choice`).

    The run's problem is rebuilt with its recorded settings; a problem or hparams set of a user directory is
    found through the directory run.json records, or `usr_dir` (a --t2t_usr_dir flag) when given.

    The model computes in `precision` (a Keras dtype policy: float32, mixed_bfloat16 or mixed_float16),
    whatever precision the run trained in: its checkpoints hold float32 weights. It is for inference: in a
    mixed precision its weights are cast once to the compute dtype (`half_precision_weights`)."""
    layout = RunLayout(output_dir)
    info, problem, vocabularies = run_vocabulary(output_dir, usr_dir)
    hparams = layout.load_hparams()
    configure_tf32(hparams.tf32)
    model = build_transformer(hparams, precision=precision, **vocabularies.model_sizes())
    checkpoint = restore_checkpoint(layout, model, checkpoint)
    model = half_precision_weights(model)
    return LoadedRun(layout, info, hparams, problem, vocabularies, model, checkpoint)
