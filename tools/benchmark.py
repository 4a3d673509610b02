"""Speed and memory measurements of t2t-repro, one suite at a time, optionally against a peer.

    python tools/benchmark.py --suite {data,train,decode,serve,attention} [--hparams H] [--problem P]
        [--peer NAME] [--batch_sentences B --src_len S --tgt_len T] [--data_dir D] [--json]

Each suite is tools/benchmarks/<suite>.py (`run(args) -> list[dict]`, optionally `add_arguments(parser)` for
its own flags, listed by `--suite <name> --help`). Every measurement is taken after warm-up as a median. With
--json each one is a line {"suite", "metric", "value", "unit", "config"} plus "peer", "peer_value" and
"ratio" (= value / peer_value) when compared with a peer run in the same invocation; without it, a table.
"""

import argparse
import importlib
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
_TOOLS_DIR = os.path.dirname(os.path.abspath(__file__))
if _TOOLS_DIR not in sys.path:
    sys.path.insert(0, _TOOLS_DIR)

from t2t_repro.cli.common import run_main  # noqa: E402
from t2t_repro.errors import UserError  # noqa: E402

SUITES = ("data", "train", "decode", "serve", "attention")
_REQUIRED_KEYS = ("metric", "value", "unit", "config")
_TABLE_COLUMNS = ("suite", "metric", "value", "unit", "peer", "peer_value", "ratio")


def build_parser(add_help=True):
    parser = argparse.ArgumentParser(
        prog="benchmark.py", description=__doc__.splitlines()[0], add_help=add_help,
        epilog="Each suite's own flags: --suite <name> --help.",
    )
    parser.add_argument("--suite", required=add_help, choices=SUITES, help="what to measure")
    parser.add_argument("--hparams", default="transformer_base", help="registered hparams set")
    parser.add_argument("--hparams_overrides", default="", help='e.g. "num_layers=2,d_model=128"')
    parser.add_argument("--problem", help="registered problem (vocabulary size; data for the data suite)")
    parser.add_argument("--problem_overrides", default="",
                        help='the problem\'s settings, e.g. "source_language=en,target_language=de,vocab_size=8000"')
    parser.add_argument("--data_dir", help="where the problem's generated data is")
    parser.add_argument("--peer", help="also measure this peer implementation and report the ratio")
    parser.add_argument("--batch_sentences", type=_positive_int, default=64, help="sentences per batch")
    parser.add_argument("--src_len", type=_positive_int, default=32, help="source tokens per sentence")
    parser.add_argument("--tgt_len", type=_positive_int, default=32, help="target tokens per sentence")
    parser.add_argument("--warmup", type=_non_negative_int, help="untimed calls before timing (suite default)")
    parser.add_argument("--repeats", type=_positive_int, help="timed calls whose median is reported (suite default)")
    parser.add_argument("--json", action="store_true", help="one JSON object per measurement")
    return parser


def _positive_int(text):
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive integer")
    return value


def _non_negative_int(text):
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is not a non-negative integer")
    return value


def load_suite(name):
    """Imports benchmarks.<name>; a suite that does not exist is a UserError, its own import errors are not."""
    module_name = f"benchmarks.{name}"
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name != module_name:
            raise
        raise UserError(
            f"suite {name!r} is not available: {os.path.join(_TOOLS_DIR, 'benchmarks', name + '.py')} "
            "does not exist"
        ) from None


def _checked(suite_name, result):
    missing = [key for key in _REQUIRED_KEYS if key not in result]
    if missing:
        raise ValueError(f"suite {suite_name!r} returned a measurement without {', '.join(missing)}: {result}")
    return {"suite": suite_name, **result}


def _config_text(config):
    return " ".join(f"{key}={value}" for key, value in config.items())


def format_table(results):
    """An aligned table of the measurements, one row each, the config last; peer columns only with a peer."""
    from benchmarks import format_number

    columns = [c for c in _TABLE_COLUMNS if c in ("suite", "metric", "value", "unit") or
               any("peer" in r for r in results)]
    text_columns = ("suite", "metric", "unit", "peer")
    rows = [
        [str(r.get(c, "-")) if c in text_columns else format_number(r.get(c)) for c in columns]
        + [_config_text(r["config"])]
        for r in results
    ]
    header = columns + ["config"]
    widths = [max(len(row[i]) for row in rows + [header]) for i in range(len(columns))]
    lines = []
    for row in [header] + rows:
        cells = [
            cell.ljust(width) if name in text_columns else cell.rjust(width)
            for cell, width, name in zip(row, widths, columns)
        ]
        lines.append("  ".join(cells + [row[-1]]).rstrip())
    lines.insert(1, "-" * max(len(line) for line in lines))
    return "\n".join(lines)


def _main(argv):
    # First the suite's name, so that its own flags can join the parser before the full parse.
    known, _ = build_parser(add_help=False).parse_known_args(argv)
    parser = build_parser()
    if known.suite is not None:
        suite = load_suite(known.suite)
        if hasattr(suite, "add_arguments"):
            suite.add_arguments(parser.add_argument_group(f"{known.suite} suite"))
    args = parser.parse_args(argv)
    results = [_checked(args.suite, result) for result in suite.run(args)]
    if args.json:
        for result in results:
            print(json.dumps(result), flush=True)
    else:
        print(format_table(results))
    return 0


def main(argv=None):
    return run_main(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
