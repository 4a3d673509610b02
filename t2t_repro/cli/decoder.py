"""t2t-repro-decoder: translates (or parses) a text file with a trained run, by beam search.

    t2t-repro-decoder --output_dir=O --decode_from_file=newstest2014.en --decode_to_file=newstest2014.de.out

The model is restored from the run's averaged checkpoint when it is as new as the last training checkpoint,
else from the last training checkpoint, or from --checkpoint. Beam size, length penalty alpha and extra
length default to the run's problem (translation: 4, 0.6, +50, section 6.1; parsing: 21, 0.3, +300,
section 6.3). Output: one line per input line, in order; with --nbest=N, N lines per input line, best
first, each "<score>\\t<text>" where the score is log-probability / length penalty.
"""

import sys
import time

from t2t_repro.cli.common import (
    ArgumentParser, add_settings_flags, quiet_tensorflow, run_main, settings_values, show_info_logs,
)
from t2t_repro.decode_settings import DecodeSettings

DEFAULT_BATCH_SIZE = 32


def build_parser():
    parser = ArgumentParser(
        prog="t2t-repro-decoder",
        description=__doc__.splitlines()[0],
        epilog="Output format: one line per input; with --nbest=N, N lines per input, each '<score>\\t<text>'. "
               "Unset decode settings take the problem's defaults.",
    )
    parser.add_argument("--output_dir", required=True, help="the training run's output_dir")
    parser.add_argument("--decode_from_file", required=True, help="source text, one sentence per line (UTF-8)")
    parser.add_argument("--decode_to_file", required=True, help="where to write the outputs (atomically)")
    parser.add_argument("--checkpoint", help="checkpoint prefix to decode with (default: the run's newest)")
    add_settings_flags(parser, DecodeSettings)
    parser.add_argument("--batch_size", type=int, default=DEFAULT_BATCH_SIZE,
                        help=f"sentences per batch (default {DEFAULT_BATCH_SIZE})")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def _main(argv):
    args = build_parser().parse_args(argv)
    quiet_tensorflow()
    show_info_logs()
    from t2t_repro.run import jobs

    started = time.perf_counter()
    count, _ = jobs.decode_file(
        args.output_dir, args.decode_from_file, args.decode_to_file, args.checkpoint, batch_size=args.batch_size,
        progress=not args.quiet, **settings_values(args, DecodeSettings),
    )
    print(f"wrote {count} outputs to {args.decode_to_file} in {time.perf_counter() - started:.1f} s",
          file=sys.stderr)
    return 0


def main(argv=None):
    sys.exit(run_main(_main, argv))


if __name__ == "__main__":
    main()
