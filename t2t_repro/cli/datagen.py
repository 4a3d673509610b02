"""t2t-repro-datagen: generates a registered problem's vocabulary and TFRecord shards into data_dir/<problem>.

    t2t-repro-datagen --problem=wmt_ende --data_dir=D                   # WMT14 through TFDS (downloads)
    t2t-repro-datagen --problem=wmt_ende --data_dir=D --manual_dir=M    # M/{train,dev,test}.{en,de}
    t2t-repro-datagen --problem=toy_ende --data_dir=D                   # made by code, no download

Complete data already in data_dir is verified (sha256) and reused; an interrupted earlier run is redone.
The last line printed is a one-line summary.
"""

import sys

from t2t_repro.cli.common import ArgumentParser, quiet_tensorflow, run_main


def build_parser():
    parser = ArgumentParser(prog="t2t-repro-datagen", description=__doc__.splitlines()[0])
    parser.add_argument("--problem", required=True, help="registered problem, e.g. wmt_ende or toy_ende")
    parser.add_argument("--data_dir", required=True, help="data directory; the data goes to data_dir/<problem>")
    parser.add_argument("--tmp_dir", default=None, help="scratch directory for downloads and raw text (TFDS data_dir)")
    parser.add_argument("--manual_dir", default=None, help="user-supplied raw data (parallel text, treebank files)")
    return parser


def _main(argv):
    args = build_parser().parse_args(argv)
    quiet_tensorflow()
    from t2t_repro.run import jobs

    print(jobs.generate_data(args.problem, args.data_dir, args.tmp_dir, args.manual_dir), flush=True)
    return 0


def main(argv=None):
    sys.exit(run_main(_main, argv))


if __name__ == "__main__":
    main()
