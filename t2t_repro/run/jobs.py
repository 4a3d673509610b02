"""What the command-line tools do with a run directory: average, decode, export, draw (data: `run.data`).

Each job reads the run's records (`RunLayout`), rebuilds what it needs (`restore_run`) and hands plain
objects (model, vocabulary, decode settings) to the layer below, which knows nothing of run directories.
Decode settings start from the problem's (section 6.1 / 6.3) and the run's max_length; given flags override
them (`LoadedRun.decode_settings`).
"""

import os

from t2t_repro.decode.decode_text import decode_texts, tensorflow_search, write_lines
from t2t_repro.decode.sampling import sampling_search
from t2t_repro.decode.scoring import tensorflow_scorer
from t2t_repro.errors import UserError
from t2t_repro.run.ensemble import restore_ensemble
from t2t_repro.run.layout import RunLayout
from t2t_repro.run.restore import restore_run
from t2t_repro.run.text_decoder import TextDecoder, TextScorer, export_postprocess, sampling_flags
from t2t_repro.serve.export import export_saved_model
from t2t_repro.serve.saved_model_backend import SavedModelBackend
from t2t_repro.serve.served_model import ServedModel
from t2t_repro.serve.versions import latest_version_dir
from t2t_repro.train.averaging import average_checkpoints
from t2t_repro.visualize.attention_maps import compute_attention_maps

TEST_GOLD_FILE = "test_gold.txt"  # the gold side of a parsing test split, in the form its scorer reads


def average(output_dir, num_last=None):
    """Averages the last `num_last` training checkpoints (default: hparams.checkpoint_average_count, section
    6.1) into output_dir/averaged; returns the averaged checkpoint's prefix."""
    layout = RunLayout(output_dir)
    hparams = layout.load_hparams()
    num_last = hparams.checkpoint_average_count if num_last is None else num_last
    return average_checkpoints(layout.checkpoint_dir, layout.averaged_dir, hparams, num_last)


def run_decoder(output_dir, checkpoint=None, precision="float32", usr_dir=None, ensemble=(), sampling=None,
                jit_compile=False, keep_finished=False, **settings_flags):
    """A TextDecoder of a run's model (TensorFlow beam search, or sampling with `sampling`, a SamplingSettings
    that names a method), restored from `checkpoint` (default: the averaged one when current, else the latest)
    to compute in `precision`, with the problem's decode settings and the given flags. `usr_dir`: a
    --t2t_usr_dir that replaces the one the run recorded. `ensemble`: the output_dirs of more runs whose models
    decode together with this one's (`t2t_repro.run.ensemble`). `jit_compile`: the beam search loop compiled
    with XLA; `keep_finished`: every sentence of a batch searched until the batch's last ends, not dropped when
    done (`t2t_repro.decode.transformer_search.search`)."""
    if ensemble:
        loaded = restore_ensemble(output_dir, ensemble, checkpoint, precision, usr_dir)
        description = loaded.description
    else:
        loaded = restore_run(output_dir, checkpoint, precision, usr_dir)
        description = loaded.checkpoint
    constraint = loaded.problem.output_constraint(loaded.vocabularies)
    if sampling is not None and sampling.sampling:
        settings = loaded.decode_settings(**sampling_flags(settings_flags))
        search = sampling_search(loaded.model, settings, sampling, constraint)
    else:
        settings, sampling = loaded.decode_settings(**settings_flags), None
        search = tensorflow_search(loaded.model, settings, jit_compile, drop_finished=False if keep_finished else None,
                                   constraint=constraint)
    return TextDecoder(search, settings, loaded.vocabularies, loaded.problem.postprocess, description, sampling)


def run_scorer(output_dir, checkpoint=None, precision="float32", usr_dir=None, **settings_flags):
    """A TextScorer of a run's model, restored as `run_decoder` restores it, that scores given translations
    with the problem's decode settings and the given flags (alpha, max_input_length)."""
    run = restore_run(output_dir, checkpoint, precision, usr_dir)
    settings = run.decode_settings(**settings_flags)
    return TextScorer(tensorflow_scorer(run.model, settings.alpha), settings, run.vocabularies, run.checkpoint)


def decode_test_split(run, output_file=None):
    """Decodes the test split of a restored run (`restore_run`) with the problem's defaults into `output_file`
    (default: the run's test_decoded.txt); returns its scores (`decode_test_texts`) and the checkpoint."""
    scores = decode_test_texts(run.problem, run.info.data_dir, run.model, run.vocabularies, run.decode_settings(),
                               output_file or run.layout.test_output_file, run.layout.path(TEST_GOLD_FILE),
                               os.path.relpath(run.checkpoint, run.layout.output_dir))
    return {**scores, "checkpoint": run.checkpoint}


def decode_ensemble_test_split(loaded, output_dir):
    """Decodes the test split with a `LoadedEnsemble` (the first run's data and decode defaults) into
    output_dir/test_decoded.txt; returns its scores (`decode_test_texts`) and each model's checkpoint."""
    layout = RunLayout(output_dir)
    scores = decode_test_texts(loaded.problem, loaded.runs[0].info.data_dir, loaded.model, loaded.vocabularies,
                               loaded.decode_settings(), layout.test_output_file, layout.path(TEST_GOLD_FILE),
                               loaded.description)
    return {**scores, "checkpoints": [run.checkpoint for run in loaded.runs]}


def decode_test_texts(problem, data_dir, model, vocabularies, settings, output_file, gold_file, what):
    """Decodes the test split of `problem`'s data in `data_dir` with `model` and `settings` into `output_file`;
    returns its scores, the sentence count and the decode settings. `what` names the model in the log line.

    When the problem's scorer scores a canonical form of the texts (`evaluation_files`: parsing, whose trees
    EVALB scores), `output_file` holds the decoded side in that form and `gold_file` the gold side, so that the
    external tool (evalb.c with COLLINS.prm, or t2t-repro-evalb) on the two files gives the scores returned."""
    pairs = problem.text_pairs("test", data_dir)
    sources = [source for source, _ in pairs]
    references = [reference for _, reference in pairs]
    print(f"decoding {len(sources)} test sentences with {what} ({settings.describe()})", flush=True)
    hypotheses = decode_texts(sources, model, vocabularies, settings, problem.postprocess,
                              problem.output_constraint(vocabularies))
    evaluation_files = getattr(problem.scorer, "evaluation_files", None)
    if evaluation_files is None:
        write_lines(output_file, hypotheses)
    else:
        files = evaluation_files(hypotheses, references, sources)
        write_lines(output_file, files["decoded"])
        write_lines(gold_file, files["gold"])
    scores = problem.evaluate(hypotheses, references, sources)
    decode = {"beam_size": settings.beam_size, "alpha": settings.alpha, "extra_length": settings.extra_length}
    return {**scores, "test_sentences": len(sources), "decode": decode}


def export_description(run):
    """What an export of a restored run comes from, for its metadata: problem, hparams, checkpoint, step, the
    precision it trained in and the problem's post-processing."""
    return {
        "problem": run.info.problem,
        "hparams_set": run.info.hparams_set,
        "hparams_overrides": run.info.hparams_overrides,
        "problem_overrides": run.info.problem_overrides,
        "t2t_usr_dir": run.info.t2t_usr_dir,
        "usr_names": run.info.usr_names,
        "checkpoint": os.path.abspath(run.checkpoint),
        "step": run.step,
        "training_precision": run.hparams.precision,
        "postprocess": run.problem.postprocess_note,
    }


def ensemble_member_description(run):
    """What one more model of an exported ensemble comes from, for the export's metadata."""
    return {
        "output_dir": os.path.abspath(run.layout.output_dir),
        "hparams_set": run.info.hparams_set,
        "hparams_overrides": run.info.hparams_overrides,
        "checkpoint": os.path.abspath(run.checkpoint),
        "step": run.step,
    }


def export(output_dir, export_dir=None, checkpoint=None, precision="float32", usr_dir=None, ensemble=(),
           **settings_flags):
    """Exports a run as a new SavedModel version (default under output_dir/export) whose graph computes in
    `precision` (float32 by default, whatever the run trained in); returns its path. `ensemble`: the output_dirs
    of more runs whose models the graph decodes with together with this one's (`t2t_repro.run.ensemble`)."""
    if not ensemble:
        return export_run(restore_run(output_dir, checkpoint, precision, usr_dir), precision, export_dir,
                          **settings_flags)
    return export_ensemble(restore_ensemble(output_dir, ensemble, checkpoint, precision, usr_dir), precision,
                           export_dir, **settings_flags)


def export_ensemble(loaded, precision="float32", export_dir=None, **settings_flags):
    """`export` for a `LoadedEnsemble` whose models compute in `precision` (default export_dir: the first run's)."""
    first = loaded.runs[0]
    description = {**export_description(first), "serving_precision": precision,
                   "ensemble": [ensemble_member_description(run) for run in loaded.runs[1:]]}
    return export_saved_model(loaded.model, loaded.vocabularies, loaded.decode_settings(**settings_flags),
                              export_dir or first.layout.export_dir, description,
                              loaded.problem.output_constraint(loaded.vocabularies))


def export_run(run, precision="float32", export_dir=None, **settings_flags):
    """`export` for a run already restored (`restore_run`) to compute in `precision`."""
    settings = run.decode_settings(**settings_flags)
    return export_saved_model(run.model, run.vocabularies, settings, export_dir or run.layout.export_dir,
                              {**export_description(run), "serving_precision": precision},
                              run.problem.output_constraint(run.vocabularies))


def served_model(model_dir, limits, usr_dir=None):
    """The newest SavedModel version under `model_dir`, ready to serve with `limits` (TensorFlow engine); a
    parsing model answers trees (its problem's post-processing, found through `usr_dir` or the user directory
    the export records when the problem is the user's)."""
    backend = SavedModelBackend(latest_version_dir(model_dir))
    return ServedModel(backend, limits, postprocess=export_postprocess(backend.metadata, usr_dir))


def attention_maps(output_dir, sentence, checkpoint=None, layers=None, usr_dir=None, **settings_flags):
    """The attention maps of a run for `sentence` (decoded with the problem's settings, or the flags)."""
    run = restore_run(output_dir, checkpoint, usr_dir=usr_dir)
    if layers and not all(1 <= layer <= run.hparams.num_layers for layer in layers):
        raise UserError(f"--layer={layers}: this model's layers are numbered 1 to {run.hparams.num_layers}")
    settings = run.decode_settings(**settings_flags)
    return compute_attention_maps(run.model, run.vocabularies, sentence, settings, run.problem.postprocess)
