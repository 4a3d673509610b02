"""The end of a training run: average the last checkpoints, decode and score the test split, export, report.

Section 6.1: base models are evaluated as the average of the last 5 checkpoints and big models of the last 20,
decoded with beam search (beam 4, alpha 0.6, max length input + 50 for translation; section 6.3 for parsing).
That model gives the report's test scores and the export. The run's best checkpoint on dev (best/, kept
during training) is reported beside it, with its own test scores, so that the two selections can be compared.
"""

import os

import numpy as np

from t2t_repro.errors import UserError
from t2t_repro.json_file import read_json
from t2t_repro.run import jobs
from t2t_repro.run.layout import RunLayout
from t2t_repro.run.restore import restore_run, run_problem
from t2t_repro.safe_write import write_json
from t2t_repro.train.best_checkpoint import SCORE_FILE
from t2t_repro.train.checkpoints import latest_checkpoint

BEST_TEST_OUTPUT = "test_decoded_best.txt"


def finish_run(output_dir, training, average=True, test=True, export=True):
    """Runs the end-of-run steps that are not skipped and writes report.json; returns the report.

    The steps: average the last checkpoints, decode and score the test split, export the (averaged) model
    as a SavedModel version under output_dir/export, and report the best checkpoint (`best_report`)."""
    layout = RunLayout(output_dir)
    info = layout.load_info()
    report = {"problem": info.problem, "hparams_set": info.hparams_set, **training}
    if info.warm_start:  # where the weights started: the parent checkpoint, its step, what was reset
        report["warm_start"] = {key: info.warm_start[key] for key in ("checkpoint", "step", "reset")}
    if average:
        report["averaged_checkpoint"] = jobs.average(output_dir)
    run = restore_run(output_dir, "averaged" if average else None) if test or export else None  # one model for both
    problem = run.problem if run else run_problem(info)
    report["vocabulary"] = problem.vocabulary_report(info.data_dir)
    if test:
        report.update(jobs.decode_test_split(run))
    if export:
        report["export"] = jobs.export_run(run)
    best = best_report(layout, run if test else None)
    if best:
        report["best"] = best
    report = merged_report(layout, report)
    write_json(layout.report_file, report)
    return report


def merged_report(layout, report):
    """`report` with what an earlier end of the same run recorded and this one did not compute (a re-run with
    --skip_test keeps the test scores, say): a re-run never removes what a finished run recorded. When the
    earlier report is of another step (the run has trained further since), it describes other weights: it is
    kept whole as report_step_<N>.json instead of being mixed into the new one."""
    if not os.path.isfile(layout.report_file):
        return report
    try:
        earlier = read_json(layout.report_file, "the run's report")
    except UserError as error:  # damaged: kept aside, not lost
        print(f"{error}; kept as {layout.report_file}.damaged", flush=True)
        os.replace(layout.report_file, layout.report_file + ".damaged")
        return report
    if earlier.get("steps") == report.get("steps"):
        return _merged(earlier, report)
    aside = layout.path(f"report_step_{earlier.get('steps', 'unknown')}.json")
    if not os.path.exists(aside):
        write_json(aside, earlier)
    return report


def _merged(earlier, later):
    """The dict `earlier` updated by `later`, nested dicts merged the same way; a None in `later` (not measured
    this time, e.g. the speed of a re-run that trained no step) does not replace a value."""
    merged = dict(earlier)
    for key, value in later.items():
        if value is None and earlier.get(key) is not None:
            continue
        both_dicts = isinstance(value, dict) and isinstance(earlier.get(key), dict)
        merged[key] = _merged(earlier[key], value) if both_dicts else value
    return merged


def same_weights(model, other):
    """True when two models hold exactly the same weights."""
    return all(np.array_equal(a.numpy(), b.numpy()) for a, b in zip(model.weights, other.weights, strict=True))


def best_report(layout, evaluated=None):
    """The best checkpoint of the run in `layout` for report.json: its step, its dev score and, when
    `evaluated` (the restored run the test scores come from) is given, its test scores. The best is decoded
    (into test_decoded_best.txt) only when it was chosen before the run's last step: when it holds the same
    weights as `evaluated`, "same_as" names `evaluated`'s checkpoint, whose test scores are the report's;
    when it is the last step's checkpoint (a run whose last dev evaluation was its best, as in a run with a
    single one), "last_checkpoint" says so and the test split is not decoded again, which would double the
    end of the run for a choice that was not made. None when the run has no best checkpoint."""
    prefix = latest_checkpoint(layout.best_dir)
    if prefix is None:
        return None
    score = read_json(os.path.join(layout.best_dir, SCORE_FILE), "the best checkpoint's dev score")
    report = {"checkpoint": prefix, "step": score.get("step"), "metric": score.get("metric"),
              "dev_score": score.get("value"), "higher_is_better": score.get("higher_is_better")}
    if evaluated is None:
        return report
    if evaluated.step != report["step"]:
        report["test"] = jobs.decode_test_split(restore_run(layout.output_dir, "best"), layout.path(BEST_TEST_OUTPUT))
    elif same_weights(evaluated.model, restore_run(layout.output_dir, "best").model):
        report["same_as"] = evaluated.checkpoint
    else:
        report["last_checkpoint"] = True
    return report
