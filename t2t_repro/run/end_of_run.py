"""The end of a training run: average the last checkpoints, decode and score the test split, export, report.

Section 6.1: base models are evaluated as the average of the last 5 checkpoints and big models of the last 20,
decoded with beam search (beam 4, alpha 0.6, max length input + 50 for translation; section 6.3 for parsing).
"""

from t2t_repro import catalog
from t2t_repro.run import jobs
from t2t_repro.run.layout import RunLayout
from t2t_repro.run.restore import restore_run
from t2t_repro.safe_write import write_json


def finish_run(output_dir, training, average=True, test=True, export=True):
    """Runs the end-of-run steps that are not skipped and writes report.json; returns the report.

    The steps: average the last checkpoints, decode and score the test split, export the (averaged) model
    as a SavedModel version under output_dir/export."""
    layout = RunLayout(output_dir)
    info = layout.load_info()
    report = {"problem": info.problem, "hparams_set": info.hparams_set, **training}
    checkpoint = None
    if average:
        checkpoint = report["averaged_checkpoint"] = jobs.average(output_dir)
    run = restore_run(output_dir, checkpoint) if test or export else None  # one model for both
    problem = run.problem if run else catalog.get_problem(info.problem, info.problem_overrides)
    report["vocabulary"] = problem.vocabulary_report(info.data_dir)
    if test:
        report.update(jobs.decode_test_split(run))
    if export:
        report["export"] = jobs.export_run(run)
    write_json(layout.report_file, report)
    return report
