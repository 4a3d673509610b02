"""Models that differ in the seed alone, trained by one command and evaluated as one ensemble.

    t2t-repro-trainer --problem=multi30k_ende --hparams=transformer_small --manual_dir=M --data_dir=D \
        --output_dir=O --ensemble_seeds=3

trains O/seed_1, O/seed_2 and O/seed_3 one after another (seeds --seed, --seed + 1, ...), each an ordinary run
(run.json, checkpoints, its averaged weights, its dev evaluations) on the same data, which every tool reads as
it reads any run; then the ensemble's end of run: the runs' models decode the test split together in one beam
search (each token scored with the log of the mean of their probabilities, `t2t_repro.decode.ensemble`) into
O/test_decoded.txt, the scores go to O/report.json and one SavedModel of them all to O/export. O/ensemble.json
names the runs. A run's own test decode and export are skipped: the ensemble's are the command's.

Every run's output_dir is checked before the first one trains. --max_train_minutes is the whole command's: each
run trains for an equal share of it. Running the command again resumes the runs in turn (a finished one only
ends again, which is quick); a larger --ensemble_seeds adds runs to the ensemble.
"""

import dataclasses
import os

from t2t_repro import catalog
from t2t_repro.data.datagen_options import DatagenOptions
from t2t_repro.errors import UserError
from t2t_repro.run import jobs
from t2t_repro.run.end_of_run import merged_report
from t2t_repro.run.ensemble import restore_ensemble
from t2t_repro.run.layout import RunLayout
from t2t_repro.run.training import new_run_info, resolve_hparams, run_usr_dir, train_run
from t2t_repro.safe_write import write_json

RUN_NAME = "seed_{}"


def ensemble_runs(config, options):
    """[(seed, the run's config, the run's training options)] of the command's runs."""
    runs = []
    for seed in range(options.seed, options.seed + config.ensemble_seeds):
        run_config = dataclasses.replace(config, output_dir=os.path.join(config.output_dir, RUN_NAME.format(seed)),
                                         ensemble_seeds=1, skip_test=True, skip_export=True)
        minutes = options.max_train_minutes
        share = None if minutes is None else minutes / config.ensemble_seeds
        run_options = dataclasses.replace(options, seed=seed, max_train_minutes=share)
        runs.append((seed, run_config, run_options))
    return runs


def check_ensemble_command(config, options, runs):
    """UserError when the command cannot train: several workers, an output_dir that holds a single run or is a
    file, or a run's output_dir that cannot take its run (`RunLayout.check_restart`). Writes nothing."""
    if options.strategy == "multi_worker":
        raise UserError("--ensemble_seeds trains its models one after another in one process, which cannot set up "
                        "a multi-worker strategy twice: train each seed with its own command (--seed=S) and decode "
                        "them together with t2t-repro-decoder --ensemble")
    layout = RunLayout(config.output_dir)
    layout.check_not_a_file()
    if layout.holds_run():
        raise UserError(f"{config.output_dir} holds a single run, not a seed ensemble; use a new --output_dir")
    for _, run_config, _ in runs:
        run_usr_dir(run_config)  # a restart's runs may name where their user directory was
    problem = catalog.get_problem(config.problem, config.problem_overrides)
    hparams = resolve_hparams(config)  # the same for every run: they differ in the seed alone
    for seed, run_config, _ in runs:
        RunLayout(run_config.output_dir).check_restart(hparams, new_run_info(run_config, problem, seed),
                                                       config.allow_precision_change, problem)


def train_seed_ensemble(config, options, datagen=DatagenOptions()):
    """Trains the runs of `config.ensemble_seeds` seeds, then ends the ensemble (`finish_ensemble`); returns its
    report."""
    runs = ensemble_runs(config, options)
    check_ensemble_command(config, options, runs)
    layout = RunLayout(config.output_dir)
    os.makedirs(config.output_dir, exist_ok=True)
    names = [os.path.basename(run_config.output_dir) for _, run_config, _ in runs]
    write_json(layout.ensemble_file, {"runs": names, "seeds": [seed for seed, _, _ in runs]})
    reports = []
    for number, (name, (_, run_config, run_options)) in enumerate(zip(names, runs), start=1):
        print(f"seed ensemble: training {name} ({number} of {len(runs)})", flush=True)
        reports.append(train_run(run_config, run_options, datagen))
    return finish_ensemble(config, runs, reports)


def finish_ensemble(config, runs, run_reports):
    """The ensemble's end of run: decodes and scores the test split and exports, as not skipped, with the models
    of `runs` (`ensemble_runs`; each from its default checkpoint: the averaged one) as one ensemble; writes and
    returns report.json. `run_reports`: the runs' own reports."""
    layout = RunLayout(config.output_dir)
    run_dirs = [run_config.output_dir for _, run_config, _ in runs]
    training = [{"output_dir": os.path.abspath(directory), "seed": seed,
                 **{key: report.get(key) for key in ("steps", "train_seconds", "stopped_by_time", "stopped_early")}}
                for (seed, _, _), directory, report in zip(runs, run_dirs, run_reports)]
    report = {"problem": config.problem, "hparams_set": config.hparams,
              "steps": [entry["steps"] for entry in training],
              "train_seconds": sum(entry["train_seconds"] or 0.0 for entry in training), "ensemble": training}
    if not (config.skip_test and config.skip_export):
        loaded = restore_ensemble(run_dirs[0], run_dirs[1:])
        if not config.skip_test:
            report.update(jobs.decode_ensemble_test_split(loaded, config.output_dir))
        if not config.skip_export:
            report["export"] = jobs.export_ensemble(loaded, export_dir=layout.export_dir)
    report = merged_report(layout, report)
    write_json(layout.report_file, report)
    return report
