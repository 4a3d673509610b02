"""t2t-repro-trainer: trains a registered problem with a registered hparams set, then evaluates it.

    t2t-repro-trainer --problem=toy_ende --hparams=transformer_tiny --output_dir=runs/toy_ende
    t2t-repro-trainer --problem=wmt_ende --hparams=transformer_big --data_dir=D --output_dir=O
    t2t-repro-trainer --problem=translate_files --problem_overrides="source_language=en,target_language=de" \
        --manual_dir=M --hparams=transformer_base --output_dir=O     # your own corpus: M/{train,dev,test}.{en,de}
    t2t-repro-trainer --t2t_usr_dir=DIR --problem=my_problem --hparams=my_hparams --output_dir=O
    t2t-repro-trainer --registry_help [--t2t_usr_dir=DIR]
    t2t-repro-trainer --hparams=transformer_big --hparams_help
    t2t-repro-trainer --problem=translate_files --problem_help

Data is generated first when data_dir lacks it. Restarting the same command resumes exactly where the last
checkpoint left off. The run ends by averaging the last checkpoints, decoding the test split, writing report.json
and exporting a SavedModel (each step can be skipped). --ensemble_seeds=N trains N runs that differ in the seed
alone into OUTPUT_DIR/seed_S and ends with them as one ensemble.
"""

import json
import sys

from t2t_repro.cli.common import (
    ArgumentParser, add_settings_flags, import_usr_dir, quiet_tensorflow, run_main, settings_from_flags,
)
from t2t_repro.data.datagen_options import DatagenOptions
from t2t_repro.errors import UserError
from t2t_repro.run.config import RunConfig
from t2t_repro.train.options import TrainingOptions


def build_parser():
    parser = ArgumentParser(prog="t2t-repro-trainer", description=__doc__.splitlines()[0])
    parser.add_argument("--registry_help", action="store_true", help="list every problem and hparams set, then exit")
    parser.add_argument("--hparams_help", action="store_true",
                        help="list every hparams field with its help and its value in --hparams (with the "
                             "overrides), then exit")
    parser.add_argument("--problem_help", action="store_true",
                        help="list every setting of --problem with its help and its value (with "
                             "--problem_overrides), then exit")
    add_settings_flags(parser, RunConfig)
    add_settings_flags(parser, TrainingOptions)
    add_settings_flags(parser, DatagenOptions)
    return parser


def _main(argv):
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    quiet_tensorflow()
    from t2t_repro import catalog
    from t2t_repro.hparams_type import apply_overrides
    from t2t_repro.settings import describe

    if args.registry_help or args.problem_help or args.hparams_help:
        import_usr_dir(args.t2t_usr_dir)
    if args.registry_help:
        print(catalog.registry_help())
        return 0
    if args.problem_help:
        if not args.problem:
            raise UserError("--problem_help needs --problem (t2t-repro-trainer --registry_help lists them)")
        print(catalog.problem_help(args.problem, args.problem_overrides or ""))
        return 0
    if args.hparams_help:
        hparams = apply_overrides(catalog.get_hparams(args.hparams or "transformer_base"), args.hparams_overrides)
        print(describe(hparams))
        return 0
    config = settings_from_flags(args, RunConfig, command_line=("t2t-repro-trainer", *argv))
    options = settings_from_flags(args, TrainingOptions)
    datagen = settings_from_flags(args, DatagenOptions)
    if config.ensemble_seeds > 1:
        from t2t_repro.run.seed_ensemble import train_seed_ensemble

        report = train_seed_ensemble(config, options, datagen)
    else:
        from t2t_repro.run.training import train_run

        report = train_run(config, options, datagen)
    if report is not None:
        print(json.dumps({k: v for k, v in report.items() if k in ("bleu", "chrf", "f1", "precision", "recall",
                                                                    "steps")}))
    return 0


def main(argv=None):
    sys.exit(run_main(_main, argv))


if __name__ == "__main__":
    main()
