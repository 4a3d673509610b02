"""The end of a training run: average the last checkpoints, decode and score the test split, write report.json.

Section 6.1: base models are evaluated as the average of the last 5 checkpoints and big models of the last 20,
decoded with beam search (beam 4, alpha 0.6, max length input + 50 for translation; section 6.3 for parsing).
"""

import os

from t2t_repro.train import run_dir

REPORT_FILE = "report.json"
TEST_OUTPUT_FILE = "test_decoded.txt"


def decode_test_split(output_dir, checkpoint=None):
    """Decodes the test split with the problem's defaults; writes the outputs and returns the scores."""
    from t2t_repro.decode.decode_text import decode_texts, write_lines_atomic

    run = run_dir.restore_run(output_dir, checkpoint)
    pairs = run.problem.text_pairs("test", run.info.data_dir)
    sources = [source for source, _ in pairs]
    references = [reference for _, reference in pairs]
    defaults = run.problem.decode_defaults
    print(
        f"decoding {len(sources)} test sentences with {os.path.relpath(run.checkpoint, output_dir)} "
        f"(beam {defaults.beam_size}, alpha {defaults.alpha}, max length input + {defaults.extra_length})",
        flush=True,
    )
    # The longest source is the run's max_length, as for t2t-repro-decoder and the exported model.
    hypotheses = decode_texts(
        sources, run.model, run.vocabulary, run.problem, max_input_length=run.hparams.max_length
    )
    write_lines_atomic(os.path.join(output_dir, TEST_OUTPUT_FILE), hypotheses)
    scores = run.problem.evaluate(hypotheses, references, sources)
    settings = {"beam_size": defaults.beam_size, "alpha": defaults.alpha, "extra_length": defaults.extra_length}
    return {**scores, "test_sentences": len(sources), "decode": settings, "checkpoint": run.checkpoint}


def finish_run(output_dir, training, average=True, test=True, export=True):
    """Runs the end-of-run steps that are not skipped and writes report.json; returns the report.

    The steps: average the last checkpoints, decode and score the test split, export the (averaged) model
    as a SavedModel version under output_dir/export."""
    hparams = run_dir.load_hparams(output_dir)
    info = run_dir.load_run_info(output_dir)
    report = {"problem": info.problem, "hparams_set": info.hparams_set, **training}
    checkpoint = None
    if average:
        from t2t_repro.train.averaging import average_checkpoints

        checkpoint = average_checkpoints(output_dir, hparams.checkpoint_average_count)
        report["averaged_checkpoint"] = checkpoint
    if test:
        report.update(decode_test_split(output_dir, checkpoint))
    if export:
        from t2t_repro.serve.export import export_saved_model

        report["export"] = export_saved_model(output_dir, checkpoint=checkpoint)
    run_dir.write_json_atomic(os.path.join(output_dir, REPORT_FILE), report)
    return report
