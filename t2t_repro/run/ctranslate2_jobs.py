"""The command-line jobs that use CTranslate2: export a run as a CTranslate2 model, decode and serve with one.

This module imports ctranslate2 (through `t2t_repro.serve.ctranslate2_*`), an optional dependency
(`pip install "t2t-repro[ctranslate2]"`): the command lines import it only when asked for that engine or
format, so the rest of the project works without it.

    path = export("runs/wmt_ende", quantization="int8")          # -> runs/wmt_ende/export_ctranslate2/<N>
    decoder = export_decoder("runs/wmt_ende/export_ctranslate2")  # newest version; or a version directory
    sampler = export_decoder(model_dir, sampling=SamplingSettings("topk:10", seed=1), nbest=4)  # 4 samples each
    served = served_model("runs/wmt_ende/export_ctranslate2", limits)
"""

import logging
import os

from t2t_repro.errors import UserError
from t2t_repro.run.jobs import export_description
from t2t_repro.run.layout import RunLayout
from t2t_repro.run.restore import restore_run, run_vocabulary
from t2t_repro.run.text_decoder import TextDecoder, export_problem, sampling_flags
from t2t_repro.serve.ctranslate2_backend import CTranslate2Backend
from t2t_repro.serve.ctranslate2_export import check_exportable, export_ctranslate2
from t2t_repro.serve.ctranslate2_model import CTranslate2Model
from t2t_repro.serve.ctranslate2_sampling import sampling_search
from t2t_repro.serve.export_files import read_export_metadata
from t2t_repro.serve.served_model import ServedModel
from t2t_repro.serve.versions import latest_version_dir

# A run's CTranslate2 versions, beside its SavedModel versions in export/ (which TensorFlow Serving watches).
EXPORT_SUBDIR = "export_ctranslate2"

logger = logging.getLogger(__name__)


def default_export_dir(output_dir):
    """Where a run's CTranslate2 versions go by default: output_dir/export_ctranslate2."""
    return os.path.join(output_dir, EXPORT_SUBDIR)


def export(output_dir, export_dir=None, checkpoint=None, quantization="float32", usr_dir=None, **settings_flags):
    """Exports a run as a new CTranslate2 version (default under output_dir/export_ctranslate2); returns its path.
    Settings CTranslate2 cannot express are refused before the checkpoint is read."""
    check_exportable(RunLayout(output_dir).load_hparams())
    check_unconstrained(output_dir, usr_dir, settings_flags.get("constrained_output"))
    run = restore_run(output_dir, checkpoint, usr_dir=usr_dir)
    settings = run.decode_settings(**settings_flags)
    return export_ctranslate2(run.model, run.vocabularies, settings, export_dir or default_export_dir(output_dir),
                              export_description(run), quantization)


def check_unconstrained(output_dir, usr_dir, constrained_output):
    """Refuses (UserError) a run whose problem constrains its outputs (parsing's trees on the sentence's words)
    unless `constrained_output` is False: CTranslate2's search cannot apply the constraint, so its export decodes
    as `--constrained_output=false` does, and the flag is how the user says that this is wanted."""
    if constrained_output is False:
        return
    info, problem, vocabularies = run_vocabulary(output_dir, usr_dir)
    if problem.output_constraint(vocabularies) is not None:
        raise UserError(f"{info.problem} constrains its outputs to trees on the sentence's words, which CTranslate2's "
                        "search cannot: give --constrained_output=false to export its search without the "
                        "constraint (trees repaired onto the words afterwards), or export a SavedModel")


def version_dir(model_dir):
    """`model_dir` itself when it is a version directory (it holds an export's metadata), else its newest
    version."""
    return model_dir if read_export_metadata(model_dir) else latest_version_dir(model_dir)


def export_decoder(model_dir=None, output_dir=None, threads=0, usr_dir=None, sampling=None, **settings_flags):
    """A TextDecoder of a CTranslate2 export: `model_dir` (a version directory, or an export directory whose
    newest version is used), by default the run's output_dir/export_ctranslate2. Decode settings are the
    export's, with the given flags on top; outputs are post-processed as the export's problem says. It
    searches as the export's beam search, or samples with `sampling`, a SamplingSettings that names a method
    (`t2t_repro.serve.ctranslate2_sampling`: its samples depend on the whole command, not only the sentence)."""
    if model_dir is None:
        if output_dir is None:
            raise UserError("give --model_dir (a CTranslate2 export) or --output_dir (a run with one in "
                            f"{EXPORT_SUBDIR}/)")
        model_dir = default_export_dir(output_dir)
    model = CTranslate2Model(version_dir(model_dir), threads)
    description = f"CTranslate2 export {model.version_dir} ({model.quantization})"
    if sampling is not None and sampling.sampling:
        settings = model.decode_settings(**sampling_flags(settings_flags, model.settings.nbest))
        search = sampling_search(model, settings, sampling)
    else:
        settings, sampling = model.decode_settings(**settings_flags), None
        search = model.search(settings)
    postprocess = ctranslate2_postprocess(model, settings, usr_dir)
    return TextDecoder(search, settings, model.vocabularies, postprocess, description, sampling)


def served_model(model_dir, limits, threads=0, usr_dir=None):
    """The newest CTranslate2 version under `model_dir`, ready to serve with `limits`; a parsing model answers
    trees (its problem's post-processing)."""
    backend = CTranslate2Backend(latest_version_dir(model_dir), threads)
    postprocess = ctranslate2_postprocess(backend.model, backend.settings, usr_dir)
    return ServedModel(backend, limits, postprocess=postprocess)


def ctranslate2_postprocess(model, settings, usr_dir):
    """The post-processing of the problem a CTranslate2Model was exported from, or None. Warns when the problem
    constrains its outputs (parsing) and neither the export's metadata nor `settings` (the flags on top) say
    constrained_output false: such an export predates the exporter's refusal and decodes its search's free trees,
    repaired onto the sentence's words."""
    problem = export_problem(model.metadata, usr_dir)
    if problem is None:
        return None
    if settings.constrained_output and problem.output_constraint(model.vocabularies) is not None:
        logger.warning("%s: CTranslate2 searches without %s's tree constraint (this export predates the record of "
                       "it), so its trees are repaired onto the words afterwards; export again with "
                       "--constrained_output=false to record it, or decode a SavedModel for constrained trees",
                       model.version_dir, model.metadata["problem"])
    return problem.postprocess
