"""t2t-repro-exporter: exports a trained run as a versioned SavedModel (text in, text out) for serving.

    t2t-repro-exporter --output_dir=runs/wmt_ende                      # -> runs/wmt_ende/export/<N>
    t2t-repro-exporter --output_dir=O --export_dir=/models/wmt_ende --beam_size=4 --alpha=0.6

The new version is the next integer under --export_dir, written atomically: TensorFlow Serving (or
t2t-repro-serve) watching that directory never sees a half-written version. Beam search settings default to
the problem's (section 6.1: beam 4, alpha 0.6, input length + 50 for translation).
"""

import argparse
import json
import sys

from t2t_repro.cli.common import ArgumentParser, quiet_tensorflow, run_main


def build_parser():
    parser = ArgumentParser(
        prog="t2t-repro-exporter",
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add = parser.add_argument
    add("--output_dir", help="the trained run's output_dir")
    add("--export_dir", default=None, help="where versions are written (default: OUTPUT_DIR/export)")
    add("--checkpoint", default=None, help="checkpoint prefix (default: the averaged one if current, else the latest)")
    add("--beam_size", type=int, default=None, help="beam size baked into the graph (default: the problem's)")
    add("--alpha", type=float, default=None, help="length penalty exponent (default: the problem's)")
    add("--extra_length", type=int, default=None,
        help="max output length = input length + this (default: the problem's)")
    add("--max_input_length", type=int, default=None,
        help="longest source in tokens with EOS; longer ones are truncated (default: the run's hparams.max_length)")
    return parser


def _main(argv):
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    from t2t_repro.errors import UserError

    if not args.output_dir:
        raise UserError("missing --output_dir")
    quiet_tensorflow()
    from t2t_repro.serve.export import export_saved_model, read_export_metadata

    path = export_saved_model(
        args.output_dir, export_dir=args.export_dir, beam_size=args.beam_size, alpha=args.alpha,
        extra_length=args.extra_length, checkpoint=args.checkpoint, max_input_length=args.max_input_length,
    )
    metadata = read_export_metadata(path)
    print(json.dumps({"export": path, "step": metadata.get("step"), "decode": metadata.get("decode")}))
    return 0


def main(argv=None):
    sys.exit(run_main(_main, argv))


if __name__ == "__main__":
    main()
