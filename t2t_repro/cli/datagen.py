"""t2t-repro-datagen: generates a registered problem's vocabulary and TFRecord shards into data_dir/<problem>.

    t2t-repro-datagen --problem=wmt_ende --data_dir=D                   # WMT14 through TFDS (downloads)
    t2t-repro-datagen --problem=wmt_ende --data_dir=D --manual_dir=M    # M/{train,dev,test}.{en,de}
    t2t-repro-datagen --problem=toy_ende --data_dir=D                   # made by code, no download
    t2t-repro-datagen --problem=wmt_ende --data_dir=D --manual_dir=M --workers=8
    t2t-repro-datagen --problem=translate_files --problem_overrides="source_language=en,target_language=de" \
        --manual_dir=M --data_dir=D                                  # your own corpus: M/{train,dev,test}.{en,de}
    t2t-repro-datagen --t2t_usr_dir=DIR --problem=my_problem --data_dir=D
    t2t-repro-datagen --problem=parse_files --problem_help

Complete data already in data_dir is verified (sha256) and reused; an interrupted earlier run is redone; data
made with other problem settings, or from another --manual_dir, is refused (use another --data_dir).
Worker processes (one per CPU core unless --workers says) encode and write the records; the data is the same
for any number. The last line printed is a one-line summary.
"""

import sys

from t2t_repro.cli.common import (
    ArgumentParser, add_settings_flags, add_usr_dir_flag, import_usr_dir, quiet_tensorflow, run_main,
    settings_from_flags,
)
from t2t_repro.data.datagen_options import DatagenOptions
from t2t_repro.errors import UserError
from t2t_repro.run.config import PROBLEM_OVERRIDES_HELP

_TRAINER_ONLY = ("data_wait_minutes",)


def build_parser():
    parser = ArgumentParser(prog="t2t-repro-datagen", description=__doc__.splitlines()[0])
    parser.add_argument("--problem", required=True, help="registered problem, e.g. wmt_ende or toy_ende")
    parser.add_argument("--problem_overrides", default="", help=PROBLEM_OVERRIDES_HELP)
    parser.add_argument("--problem_help", action="store_true",
                        help="list every setting of --problem with its help and its value, then exit")
    add_usr_dir_flag(parser, recorded=False)
    parser.add_argument("--data_dir", help="data directory; the data goes to data_dir/<problem>")
    parser.add_argument("--tmp_dir", default=None, help="scratch directory for downloads and raw text (TFDS data_dir)")
    parser.add_argument("--manual_dir", default=None, help="user-supplied raw data (parallel text, treebank files)")
    add_settings_flags(parser, DatagenOptions, exclude=_TRAINER_ONLY)
    return parser


def _main(argv):
    args = build_parser().parse_args(argv)
    quiet_tensorflow()
    import_usr_dir(args.t2t_usr_dir)
    if args.problem_help:
        from t2t_repro import catalog

        print(catalog.problem_help(args.problem, args.problem_overrides))
        return 0
    if not args.data_dir:
        raise UserError("the following arguments are required: --data_dir")
    options = settings_from_flags(args, DatagenOptions)
    from t2t_repro.run.data import generate_data

    print(generate_data(args.problem, args.data_dir, args.tmp_dir, args.manual_dir, options,
                        args.problem_overrides), flush=True)
    return 0


def main(argv=None):
    sys.exit(run_main(_main, argv))


if __name__ == "__main__":
    main()
