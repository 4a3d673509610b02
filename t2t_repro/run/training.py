"""A training run from start (or restart) to report: data, records, training with dev evaluation, end of run.

    report = train_run(RunConfig(problem="toy_ende", hparams="transformer_tiny", output_dir="runs/toy"),
                       TrainingOptions())

The chief first checks that output_dir can take the run (a restart with other hparams or another problem is
refused before any data is generated). Data is generated when data_dir lacks it (or holds data made by other
code), by the chief alone: the other workers of a multi-worker run wait for it (`t2t_repro.run.data`). A
max_length that no train pair fits is refused. The chief records the run in output_dir, trains
with dev evaluation every options.eval_steps steps, keeping the best checkpoint in output_dir/best (and ending
training early when options.early_stopping says so), and ends the run (`finish_run`); other workers of a
multi-worker run only train.
"""

import dataclasses
import os

from t2t_repro import catalog
from t2t_repro.data.datagen_options import DatagenOptions
from t2t_repro.hparams_type import apply_overrides
from t2t_repro.run.data import prepare_data
from t2t_repro.run.dev_evaluation import DevEvaluator, check_best_metric
from t2t_repro.run.end_of_run import finish_run
from t2t_repro.run.layout import RunInfo, RunLayout, check_vocabulary, training_record, vocabulary_sha256
from t2t_repro.run.user_code import import_given, import_run_code
from t2t_repro.run.warm_start import check_warm_vocabulary, plan_warm_start
from t2t_repro.train.best_checkpoint import BestCheckpoint
from t2t_repro.train.trainer import Trainer


def run_usr_dir(config):
    """Imports the run's user directory: --t2t_usr_dir, else (a restart) the one its run.json records; returns
    what run.json records of it (absolute path, names registered).

    A restart keeps the record unless the run's problem or hparams set is the user's and --t2t_usr_dir names
    where that code is now (it must define them): a directory the run does not use never becomes the one it
    was made with."""
    layout = RunLayout(config.output_dir)
    if not os.path.isfile(layout.info_file):
        return import_given(config.t2t_usr_dir)
    info = layout.load_info()
    import_run_code(info, config.t2t_usr_dir)
    uses_user_code = {info.problem, info.hparams_set} & {name for names in info.usr_names.values() for name in names}
    if config.t2t_usr_dir and uses_user_code:
        return os.path.abspath(os.path.expanduser(config.t2t_usr_dir)), info.usr_names
    return info.t2t_usr_dir, info.usr_names


def resolve_hparams(config):
    """The run's hparams set with its overrides and --train_steps applied."""
    hparams = apply_overrides(catalog.get_hparams(config.hparams), config.hparams_overrides)
    if config.train_steps is not None:
        hparams = dataclasses.replace(hparams, train_steps=config.train_steps)
    return hparams


def new_run_info(config, problem, seed, environment=None, usr_dir="", usr_names=None):
    """The RunInfo a run of `config` records before it trains (`environment`: the trainer's)."""
    return RunInfo(config.problem, config.hparams, config.hparams_overrides, os.path.abspath(config.resolved_data_dir),
                   tuple(config.command_line), environment or {}, problem_overrides=config.problem_overrides,
                   problem_settings=problem.settings_dict(), t2t_usr_dir=usr_dir, usr_names=usr_names or {},
                   seed=seed)


def train_run(config, options, datagen=DatagenOptions()):
    """Trains the run `config` describes; returns the report (None on workers other than the chief).
    `datagen` says how missing data is generated (`t2t_repro.data.datagen_options.DatagenOptions`)."""
    usr_dir, usr_names = run_usr_dir(config)
    hparams = resolve_hparams(config)
    problem = catalog.get_problem(config.problem, config.problem_overrides)
    check_best_metric(options.best_metric, problem, config.eval_decode_sentences)
    data_dir = config.resolved_data_dir
    trainer = Trainer(hparams, problem, options)  # first: it sets up the tf.distribute strategy
    layout = RunLayout(config.output_dir)
    info = new_run_info(config, problem, options.seed, trainer.environment(), usr_dir, usr_names)
    recorded = None  # a restart's RunInfo: its checkpoints were trained on the vocabulary it records
    # Before data generation, which may take hours.
    if trainer.chief:
        layout.check_restart(hparams, info, config.allow_precision_change, problem)
    if os.path.exists(layout.info_file):
        recorded = layout.load_info()
        info = dataclasses.replace(info, training=recorded.training)  # until this session's training ends
    warm_start, warm_record = plan_warm_start(config, hparams, info, recorded, trainer.environment())
    info = dataclasses.replace(info, warm_start=warm_record)
    problem.check_existing_data(data_dir, config.manual_dir)
    prepare_data(problem, data_dir, config.tmp_dir, config.manual_dir, datagen, chief=trainer.chief,
                 vocabulary_sha256=recorded.vocabulary_sha256 if recorded else None)
    problem.check_max_length(data_dir, hparams.max_length)
    evaluator = best = None
    if trainer.chief:
        vocabularies = problem.vocabularies(data_dir)
        if recorded:
            check_vocabulary(recorded, vocabularies, data_dir)
        check_warm_vocabulary(warm_record, vocabularies, data_dir)
        info = dataclasses.replace(info, vocabulary_sha256=vocabulary_sha256(vocabularies))
        layout.record(hparams, info, config.allow_precision_change, problem)
        evaluator = DevEvaluator(
            problem, vocabularies, data_dir, hparams.label_smoothing, trainer.micro_batch_tokens,
            config.eval_decode_sentences, layout.dev_summary_dir, options.best_metric,
        )
        best = BestCheckpoint(layout.best_dir, options.early_stopping, layout.dev_summary_dir)
    training = trainer.train(
        data_dir, layout.checkpoint_dir, layout.train_summary_dir, evaluate=evaluator,
        description=f"{config.problem} with {config.hparams}", best=best, warm_start=warm_start,
    )
    if not trainer.chief:
        return None
    layout.write_info(dataclasses.replace(info, training=training_record(training)))
    return finish_run(config.output_dir, training, average=not config.skip_average, test=not config.skip_test,
                      export=not config.skip_export)
