"""t2t-repro-avg-checkpoints: averages the last K training checkpoints of a run (section 6.1).

    t2t-repro-avg-checkpoints --output_dir=O [--num_last=K]

Writes O/averaged/ckpt-<step of the newest checkpoint>, which the decoder and the exporter then use. K
defaults to the run's hparams.checkpoint_average_count (5 for base, 20 for big, as in the paper).
"""

import sys

from t2t_repro.cli.common import (
    ArgumentParser, add_usr_dir_flag, import_usr_dir, quiet_tensorflow, run_main, show_info_logs,
)


def build_parser():
    parser = ArgumentParser(prog="t2t-repro-avg-checkpoints", description=__doc__.splitlines()[0])
    parser.add_argument("--output_dir", required=True, help="the training run's output_dir")
    parser.add_argument("--num_last", type=int, help="checkpoints to average (default: the run's "
                        "hparams.checkpoint_average_count)")
    add_usr_dir_flag(parser)
    return parser


def _main(argv):
    args = build_parser().parse_args(argv)
    quiet_tensorflow()
    show_info_logs()
    import_usr_dir(args.t2t_usr_dir)
    from t2t_repro.run import jobs

    print(jobs.average(args.output_dir, args.num_last))
    return 0


def main(argv=None):
    sys.exit(run_main(_main, argv))


if __name__ == "__main__":
    main()
