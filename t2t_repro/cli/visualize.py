"""t2t-repro-visualize: attention heat maps of a trained run for a sentence, and its training curves.

    t2t-repro-visualize --output_dir=O --sentence="The cat sat on the mat." --out=figures [--layer=5]
    t2t-repro-visualize --output_dir=O --curves --out=figures

With --sentence: the run's model (the decoder's default checkpoint, or --checkpoint=averaged, latest, best or
ckpt-N) decodes the sentence by beam search (the problem's defaults; --beam_size=1 is greedy), then runs
teacher-forced on the sentence and its output, and for every layer (or only --layer, numbered from 1 as the
paper's "layer 5 of 6") writes one PNG per head and one with all heads of the encoder self-attention, the
decoder self-attention and the encoder-decoder attention, the subword tokens on the axes (the paper's Figures
3-5). With --curves: loss, learning rate, throughput and dev loss, perplexity and BLEU or F1 over the training
steps, from the run's TensorBoard logs. Both may be given.
"""

import os
import sys

from t2t_repro.cli.common import (
    ArgumentParser, add_checkpoint_flag, add_settings_flags, add_usr_dir_flag, import_usr_dir, quiet_tensorflow,
    run_main, settings_values,
)
from t2t_repro.decode_settings import DecodeSettings
from t2t_repro.errors import UserError
from t2t_repro.safe_write import make_directory, removed_if_left_empty


def build_parser():
    parser = ArgumentParser(prog="t2t-repro-visualize", description=__doc__.splitlines()[0])
    parser.add_argument("--output_dir", required=True, help="the training run's output_dir")
    parser.add_argument("--out", required=True, help="directory for the PNG files: a new or empty one, or one this tool wrote before "
                        "(created if missing)")
    parser.add_argument("--sentence", help="source sentence whose attention to draw")
    parser.add_argument("--layer", type=int, action="append",
                        help="layer to draw, numbered from 1; repeatable (default: every layer)")
    add_checkpoint_flag(parser)
    add_usr_dir_flag(parser)
    add_settings_flags(parser, DecodeSettings, exclude=("nbest", "max_input_length"))
    parser.add_argument("--curves", action="store_true", help="plot the training curves of the run's logs")
    return parser


def prepare_out_dir(path):
    """Creates `path` if needed, marked as made by this project; a directory that cannot be created or written to,
    or one holding files that this project did not make, is a UserError (its PNG files would replace them)."""
    try:
        make_directory(path, remedy="name an empty or new --out directory")
    except OSError as error:
        raise UserError(f"--out={path}: cannot create the directory ({error.strerror})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise UserError(f"--out={path}: the directory is not writable")


def _main(argv):
    args = build_parser().parse_args(argv)
    if args.sentence is None and not args.curves:
        raise UserError("nothing to draw: give --sentence=TEXT (attention maps) and/or --curves")
    if args.sentence is not None and not args.sentence.strip():
        raise UserError("--sentence is empty: give the text whose attention to draw")
    if not os.path.isdir(args.output_dir):
        raise UserError(f"--output_dir={args.output_dir}: no such directory")
    with removed_if_left_empty(args.out):  # a failure leaves no empty --out behind
        prepare_out_dir(args.out)
        written = _draw(args)
    print(f"wrote {len(written)} PNG files to {args.out}")
    return 0


def _draw(args):
    """Draws what the flags ask into args.out; returns the paths of the PNG files written."""
    quiet_tensorflow()
    import_usr_dir(args.t2t_usr_dir)
    written = []
    if args.sentence is not None:
        from t2t_repro.run import jobs
        from t2t_repro.visualize.attention_maps import render_attention_maps

        layers = args.layer
        maps = jobs.attention_maps(args.output_dir, args.sentence, args.checkpoint, layers, args.t2t_usr_dir,
                                   **settings_values(args, DecodeSettings))
        print(f"source: {' '.join(maps.source_tokens)}")
        print(f"output: {' '.join(maps.output_tokens)}")
        print(f"decoded: {maps.translation}")
        written += render_attention_maps(maps, args.out, layers)
    if args.curves:
        from t2t_repro.visualize.curves import plot_curves

        written += plot_curves(args.output_dir, args.out)
    return written


def main(argv=None):
    sys.exit(run_main(_main, argv))


if __name__ == "__main__":
    main()
