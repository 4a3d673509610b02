"""RunConfig: what a training run is started with, besides how it trains (`train.options.TrainingOptions`).

Each field is declared once with its help; `t2t-repro-trainer` derives its flags from these two dataclasses.
This module imports no TensorFlow, so that command lines can build their flags from it quickly.
"""

import dataclasses
import os

from t2t_repro.errors import UserError
from t2t_repro.settings import check_fields, setting


PROBLEM_OVERRIDES_HELP = ('problem settings, e.g. "source_language=en,target_language=de,vocab_size=8000" for '
                          "translate_files (--problem_help lists a problem's settings)")


USR_DIR_HELP = ("directory (Python package) or .py file of your own problems and hparams sets, registered with "
                "t2t_repro.registry's decorators (T2T_REPRO_VERBOSE=1 shows the traceback of an error in it)")


def default_data_dir():
    """The per-user data cache used when --data_dir is not given."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "t2t-repro", "data")


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """A run: which problem and hparams, where its data and outputs go, and which end-of-run steps it takes."""

    problem: str | None = setting(None, "registered problem, e.g. wmt_ende or toy_ende")
    hparams: str | None = setting(None, "registered hparams set, e.g. transformer_base")
    hparams_overrides: str = setting("", 'typed overrides, e.g. "dropout=0.3,num_layers=4"')
    problem_overrides: str = setting("", PROBLEM_OVERRIDES_HELP)
    t2t_usr_dir: str | None = setting(None, f"{USR_DIR_HELP}; recorded in run.json: later tools need no flag")
    train_steps: int | None = setting(None, "optimizer updates (default: the hparams set's)")
    output_dir: str | None = setting(None, "where checkpoints, summaries, reports and exports go")
    data_dir: str | None = setting(None, f"data directory (default: {default_data_dir()})")
    tmp_dir: str | None = setting(None, "scratch directory for datagen downloads and raw text")
    manual_dir: str | None = setting(None, "user-supplied raw data (parallel text or Penn Treebank files)")
    warm_start_from: str | None = setting(
        None, "start from another run's weights: RUN, or RUN:averaged, :latest, :best or :ckpt-N (as the decoder's "
        "--checkpoint; RUN alone: its default checkpoint); the architecture and vocabulary must be RUN's. Recorded "
        "in run.json: a restart resumes this run"
    )
    reset: str | None = setting(
        None, "with --warm_start_from: what starts afresh instead of going on from the checkpoint, some of "
        "optimizer,schedule,step (default: all three, i.e. fine-tuning; empty: nothing, RUN's training goes on)"
    )
    ensemble_seeds: int = setting(
        1, "train this many models that differ in the seed alone (--seed, --seed + 1, ...), each a run of its own "
        "in OUTPUT_DIR/seed_S, then decode and score the test split and export with them as one ensemble (the "
        "mean of their probabilities); --max_train_minutes is the whole command's, an equal share for each model"
    )
    eval_decode_sentences: int = setting(100, "dev sentences beam-decoded for BLEU/F1 (0: none)", minimum=0)
    skip_average: bool = setting(False, "do not average the last checkpoints at the end")
    skip_test: bool = setting(False, "do not decode and score the test split at the end")
    skip_export: bool = setting(False, "do not export a SavedModel at the end")
    allow_precision_change: bool = setting(
        False, "resume a run whose hparams differ from its saved ones in precision or tf32 only (checkpoints "
        "hold float32 weights in every precision)"
    )
    command_line: tuple = ()

    def __post_init__(self):
        missing = [name for name in ("problem", "hparams", "output_dir") if not getattr(self, name)]
        if missing:
            raise UserError(f"missing {', '.join('--' + name for name in missing)}")
        check_fields(self, "run setting")

    @property
    def resolved_data_dir(self):
        return self.data_dir or default_data_dir()
