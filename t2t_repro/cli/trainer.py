"""t2t-repro-trainer: trains a registered problem with a registered hparams set, then evaluates it.

    t2t-repro-trainer --problem=toy_ende --hparams=transformer_tiny --output_dir=runs/toy_ende
    t2t-repro-trainer --problem=wmt_ende --hparams=transformer_big --data_dir=D --output_dir=O
    t2t-repro-trainer --registry_help

Data is generated first when data_dir lacks it. Restarting the same command resumes exactly where the last
checkpoint left off. The run ends by averaging the last checkpoints, decoding the test split, writing report.json
and exporting a SavedModel (each step can be skipped).
"""

import argparse
import json
import os
import sys

from t2t_repro.cli.common import ArgumentParser, quiet_tensorflow, run_main


def default_data_dir():
    """The per-user data cache used when --data_dir is not given."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "t2t-repro", "data")


def build_parser():
    parser = ArgumentParser(
        prog="t2t-repro-trainer",
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add = parser.add_argument
    add("--registry_help", action="store_true", help="list every problem and hparams set, then exit")
    add("--problem", help="registered problem, e.g. wmt_ende or toy_ende")
    add("--hparams", help="registered hparams set, e.g. transformer_base")
    add("--hparams_overrides", default="", help='typed overrides, e.g. "dropout=0.3,num_layers=4"')
    add("--data_dir", default=None, help=f"data directory (default: {default_data_dir()})")
    add("--tmp_dir", default=None, help="scratch directory for datagen downloads and raw text")
    add("--manual_dir", default=None, help="user-supplied raw data (parallel text or Penn Treebank files)")
    add("--output_dir", help="where checkpoints, summaries, reports and exports go")
    add("--train_steps", type=int, default=None, help="optimizer updates (default: the hparams set's)")
    add("--strategy", default="auto", help="auto, mirrored, multi_worker (TF_CONFIG), tpu or one_device")
    add("--tpu", default=None, help="TPU address for --strategy=tpu")
    add("--batch_tokens", type=int, default=None, help="global batch per side in tokens (default: the hparams')")
    add("--device_batch_tokens", type=int, default=None,
        help="tokens per side one device handles per micro-batch (default 4096; sets auto accumulation)")
    add("--gradient_accumulation", default="auto", help="micro-batches per update: auto or a count")
    add("--checkpoint_minutes", type=float, default=10.0, help="write a checkpoint this often (section 6.1)")
    add("--checkpoint_steps", type=int, default=None,
        help="also write a checkpoint every this many steps (default: train_steps / (4 x averaging count))")
    add("--keep_checkpoints", type=int, default=None, help="checkpoints kept (default: the averaging count)")
    add("--seed", type=int, default=1, help="seed of initialization, dropout and data order")
    add("--log_steps", type=int, default=100, help="print and summarise training every this many steps")
    add("--eval_steps", type=int, default=2000, help="evaluate on the dev split every this many steps")
    add("--eval_decode_sentences", type=int, default=100, help="dev sentences beam-decoded for BLEU/F1 (0: none)")
    add("--skip_average", action="store_true", help="do not average the last checkpoints at the end")
    add("--skip_test", action="store_true", help="do not decode and score the test split at the end")
    add("--skip_export", action="store_true", help="do not export a SavedModel at the end")
    return parser


def _config(args, argv):
    from t2t_repro.errors import UserError
    from t2t_repro.train.trainer import TrainerConfig

    missing = [flag for flag in ("problem", "hparams", "output_dir") if not getattr(args, flag)]
    if missing:
        raise UserError(f"missing {', '.join('--' + m for m in missing)}")
    for name in ("train_steps", "batch_tokens", "device_batch_tokens", "checkpoint_steps", "keep_checkpoints"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise UserError(f"--{name}={value}: must be at least 1")
    if args.log_steps < 1 or args.eval_steps < 1 or args.checkpoint_minutes <= 0 or args.eval_decode_sentences < 0:
        raise UserError("--log_steps, --eval_steps and --checkpoint_minutes must be positive")
    return TrainerConfig(
        problem=args.problem,
        hparams_set=args.hparams,
        output_dir=args.output_dir,
        data_dir=args.data_dir or default_data_dir(),
        hparams_overrides=args.hparams_overrides,
        train_steps=args.train_steps,
        strategy=args.strategy,
        tpu_address=args.tpu,
        batch_tokens=args.batch_tokens,
        device_batch_tokens=args.device_batch_tokens,
        gradient_accumulation=args.gradient_accumulation,
        checkpoint_minutes=args.checkpoint_minutes,
        checkpoint_steps=args.checkpoint_steps,
        keep_checkpoints=args.keep_checkpoints,
        seed=args.seed,
        log_steps=args.log_steps,
        eval_steps=args.eval_steps,
        eval_decode_sentences=args.eval_decode_sentences,
        tmp_dir=args.tmp_dir,
        manual_dir=args.manual_dir,
        command_line=tuple(["t2t-repro-trainer", *argv]),
    )


def _main(argv):
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    quiet_tensorflow()
    from t2t_repro import registry

    if args.registry_help:
        print(registry.registry_help())
        return 0
    from t2t_repro.train.end_of_run import finish_run
    from t2t_repro.train.trainer import Trainer

    trainer = Trainer(_config(args, argv))
    training = trainer.train()
    if not trainer.chief:
        return 0
    report = finish_run(
        trainer.config.output_dir, training,
        average=not args.skip_average, test=not args.skip_test, export=not args.skip_export,
    )
    print(json.dumps({k: v for k, v in report.items() if k in ("bleu", "f1", "precision", "recall", "steps")}))
    return 0


def main(argv=None):
    sys.exit(run_main(_main, argv))


if __name__ == "__main__":
    main()
