"""t2t-repro-exporter: exports a trained run as a versioned SavedModel (text in, text out) or CTranslate2 model.

    t2t-repro-exporter --output_dir=runs/wmt_ende                      # -> runs/wmt_ende/export/<N>
    t2t-repro-exporter --output_dir=O --export_dir=/models/wmt_ende --beam_size=4 --alpha=0.6
    t2t-repro-exporter --output_dir=O --format=ctranslate2 --quantization=int8   # -> O/export_ctranslate2/<N>
    t2t-repro-exporter --output_dir=O --serving_precision=mixed_bfloat16          # a bf16 serving graph
    t2t-repro-exporter --output_dir=O --nbest=4               # answers the 4 best hypotheses per input
    t2t-repro-exporter --output_dir=O1 --ensemble=O2,O3       # a SavedModel decoding with 3 runs' models as one
    t2t-repro-exporter --output_dir=O --checkpoint=best                           # the best dev evaluation's weights

The new version is the next integer under --export_dir, written atomically: TensorFlow Serving (or
t2t-repro-serve) watching that directory never sees a half-written version. Beam search settings default to
the problem's (section 6.1: beam 4, alpha 0.6, input length + 50 for translation); a SavedModel fixes them in
its graph, a CTranslate2 export records them as the defaults of t2t-repro-decoder and t2t-repro-serve
--engine=ctranslate2 (which needs `pip install "t2t-repro[ctranslate2]"`). A SavedModel computes in float32
whatever precision the run trained in (its checkpoints hold float32 weights), or in --serving_precision; its
outputs equal t2t-repro-decoder's with the same --serving_precision. With --nbest=N (a decode setting like the
beam size) each input gets the N best hypotheses and their scores, best first, as t2t-repro-decoder --nbest=N
gives them: a SavedModel's outputs and scores are [batch, N], and t2t-repro-serve answers lists. With --ensemble
the SavedModel holds the models of several runs and answers as t2t-repro-decoder --ensemble does (a CTranslate2
model holds one model: --format=ctranslate2 --ensemble is refused). CTranslate2's search cannot keep a parsing
model's outputs to trees on the sentence's words: --format=ctranslate2 refuses such a run unless given
--constrained_output=false.
"""

import json
import sys

from t2t_repro.cli.common import (
    ArgumentParser, add_checkpoint_flag, add_ensemble_flag, add_settings_flags, add_usr_dir_flag, ctranslate2_jobs,
    ensemble_dirs, import_usr_dir, quiet_tensorflow, run_main, settings_from_flags, settings_values,
)
from t2t_repro.decode_settings import DecodeSettings
from t2t_repro.errors import UserError
from t2t_repro.serve.options import CTRANSLATE2, SAVED_MODEL, ExportSettings


def build_parser():
    parser = ArgumentParser(prog="t2t-repro-exporter", description=__doc__.splitlines()[0],
                            epilog="Unset decode settings take the problem's defaults.")
    add = parser.add_argument
    add("--output_dir", required=True, help="the trained run's output_dir")
    add("--export_dir", default=None, help="where versions are written (default: OUTPUT_DIR/export, or "
        "OUTPUT_DIR/export_ctranslate2 for --format=ctranslate2)")
    add_checkpoint_flag(parser)
    add_usr_dir_flag(parser)
    add_ensemble_flag(parser, "saved_model format only: ")
    add_settings_flags(parser, ExportSettings)
    add_settings_flags(parser, DecodeSettings)
    return parser


def _main(argv):
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    export_settings = settings_from_flags(args, ExportSettings)
    decode_flags = settings_values(args, DecodeSettings)
    ensemble = ensemble_dirs(args.ensemble)
    if export_settings.format == CTRANSLATE2:
        if ensemble:
            raise UserError(f"--ensemble is for --format={SAVED_MODEL}: a CTranslate2 model holds one model")
        jobs = ctranslate2_jobs()
        import_usr_dir(args.t2t_usr_dir)
        path = jobs.export(args.output_dir, args.export_dir, args.checkpoint, export_settings.weight_type,
                           args.t2t_usr_dir, **decode_flags)
    else:
        quiet_tensorflow()
        import_usr_dir(args.t2t_usr_dir)
        from t2t_repro.run import jobs

        path = jobs.export(args.output_dir, args.export_dir, args.checkpoint, export_settings.serving_precision,
                           args.t2t_usr_dir, ensemble, **decode_flags)
    from t2t_repro.serve.export_files import read_export_metadata

    metadata = read_export_metadata(path)
    summary = {"export": path, "format": export_settings.format, "step": metadata.get("step"),
               "decode": metadata.get("decode")}
    if export_settings.format == CTRANSLATE2:
        summary["quantization"] = metadata.get("quantization")
    else:
        summary["serving_precision"] = metadata.get("serving_precision")
    print(json.dumps(summary))
    return 0


def main(argv=None):
    sys.exit(run_main(_main, argv))


if __name__ == "__main__":
    main()
