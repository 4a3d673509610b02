"""t2t-repro-decoder: translates (or parses) a text file with a trained run, by beam search.

    t2t-repro-decoder --output_dir=O --decode_from_file=newstest2014.en --decode_to_file=newstest2014.de.out

The model is restored from the run's averaged checkpoint when it is as new as the last training checkpoint,
else from the last training checkpoint, or from --checkpoint. Beam size, length penalty alpha and extra
length default to the run's problem (translation: 4, 0.6, +50, section 6.1; parsing: 21, 0.3, +300,
section 6.3). Output: one line per input line, in order; with --nbest=N, N lines per input line, best
first, each "<score>\\t<text>" where the score is log-probability / length penalty.
"""

import os
import sys
import time

from t2t_repro.cli.common import ArgumentParser, quiet_tensorflow, run_main, show_info_logs


def build_parser():
    parser = ArgumentParser(
        prog="t2t-repro-decoder",
        description=__doc__.splitlines()[0],
        epilog="Output format: one line per input; with --nbest=N, N lines per input, each '<score>\\t<text>'.",
    )
    parser.add_argument("--output_dir", required=True, help="the training run's output_dir")
    parser.add_argument("--decode_from_file", required=True, help="source text, one sentence per line (UTF-8)")
    parser.add_argument("--decode_to_file", required=True, help="where to write the outputs (atomically)")
    parser.add_argument("--checkpoint", help="checkpoint prefix to decode with (default: the run's newest)")
    parser.add_argument("--beam_size", type=int, help="beam width; 1 is greedy (default: the problem's)")
    parser.add_argument("--alpha", type=float, help="length penalty exponent (default: the problem's)")
    parser.add_argument("--extra_length", type=int, help="max output length = input length + this (default: "
                        "the problem's)")
    parser.add_argument("--nbest", type=int, default=1, help="hypotheses written per input (default 1)")
    parser.add_argument("--batch_size", type=int, default=32, help="sentences per batch (default 32)")
    parser.add_argument("--max_input_length", type=int, help="longer sources are truncated with a warning "
                        "(default: the run's hparams.max_length)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def _main(argv):
    args = build_parser().parse_args(argv)
    quiet_tensorflow()
    show_info_logs()
    from t2t_repro.decode.decode_text import decode_file
    from t2t_repro.errors import UserError
    from t2t_repro.train.run_dir import restore_run

    if not os.path.isfile(args.decode_from_file):
        raise UserError(f"--decode_from_file={args.decode_from_file}: no such file")
    target_dir = os.path.dirname(os.path.abspath(args.decode_to_file))
    if not os.path.isdir(target_dir):
        raise UserError(f"--decode_to_file={args.decode_to_file}: directory {target_dir} does not exist")
    if args.nbest < 1:
        raise UserError(f"--nbest={args.nbest}: must be at least 1")
    run = restore_run(args.output_dir, args.checkpoint)
    defaults = run.problem.decode_defaults
    beam_size = defaults.beam_size if args.beam_size is None else args.beam_size
    if beam_size < 1:
        raise UserError(f"--beam_size={beam_size}: must be at least 1")
    if args.nbest > beam_size:
        raise UserError(f"--nbest={args.nbest} is larger than the beam size {beam_size}; raise --beam_size")
    print(f"decoding {args.decode_from_file} with {run.checkpoint}", file=sys.stderr)
    started = time.perf_counter()
    count = decode_file(
        args.decode_from_file,
        args.decode_to_file,
        run.model,
        run.vocabulary,
        run.problem,
        nbest=args.nbest,
        beam_size=beam_size,
        alpha=args.alpha,
        extra_length=args.extra_length,
        batch_size=args.batch_size,
        max_input_length=args.max_input_length or run.hparams.max_length,
        progress=not args.quiet,
    )
    print(f"wrote {count} outputs to {args.decode_to_file} in {time.perf_counter() - started:.1f} s",
          file=sys.stderr)
    return 0


def main(argv=None):
    sys.exit(run_main(_main, argv))


if __name__ == "__main__":
    main()
