"""t2t-repro-exporter: exports a trained run as a versioned SavedModel (text in, text out) for serving.

    t2t-repro-exporter --output_dir=runs/wmt_ende                      # -> runs/wmt_ende/export/<N>
    t2t-repro-exporter --output_dir=O --export_dir=/models/wmt_ende --beam_size=4 --alpha=0.6

The new version is the next integer under --export_dir, written atomically: TensorFlow Serving (or
t2t-repro-serve) watching that directory never sees a half-written version. Beam search settings default to
the problem's (section 6.1: beam 4, alpha 0.6, input length + 50 for translation).
"""

import json
import sys

from t2t_repro.cli.common import ArgumentParser, add_settings_flags, quiet_tensorflow, run_main, settings_values
from t2t_repro.decode_settings import DecodeSettings


def build_parser():
    parser = ArgumentParser(prog="t2t-repro-exporter", description=__doc__.splitlines()[0],
                            epilog="Unset decode settings take the problem's defaults; they are fixed in the graph.")
    add = parser.add_argument
    add("--output_dir", required=True, help="the trained run's output_dir")
    add("--export_dir", default=None, help="where versions are written (default: OUTPUT_DIR/export)")
    add("--checkpoint", default=None, help="checkpoint prefix (default: the averaged one if current, else the latest)")
    add_settings_flags(parser, DecodeSettings, exclude=("nbest",))
    return parser


def _main(argv):
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    quiet_tensorflow()
    from t2t_repro.run import jobs
    from t2t_repro.serve.export import read_export_metadata

    path = jobs.export(args.output_dir, args.export_dir, args.checkpoint, **settings_values(args, DecodeSettings))
    metadata = read_export_metadata(path)
    print(json.dumps({"export": path, "step": metadata.get("step"), "decode": metadata.get("decode")}))
    return 0


def main(argv=None):
    sys.exit(run_main(_main, argv))


if __name__ == "__main__":
    main()
