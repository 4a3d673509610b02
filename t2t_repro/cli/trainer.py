"""t2t-repro-trainer: trains a registered problem with a registered hparams set.

    t2t-repro-trainer --registry_help
"""

import argparse
import sys

from t2t_repro.cli.common import quiet_tensorflow, run_main


def build_parser():
    parser = argparse.ArgumentParser(prog="t2t-repro-trainer", description=__doc__.splitlines()[0])
    parser.add_argument("--registry_help", action="store_true", help="list every problem and hparams set")
    return parser


def _main(argv):
    args = build_parser().parse_args(argv)
    quiet_tensorflow()
    from t2t_repro import registry

    if args.registry_help:
        print(registry.registry_help())
        return 0
    build_parser().print_usage(sys.stderr)
    return 2


def main(argv=None):
    sys.exit(run_main(_main, argv))


if __name__ == "__main__":
    main()
