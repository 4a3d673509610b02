"""Regenerates the paper's tables from this project's code, configurations and runs.

    python tools/paper_tables.py --table 1 [--hparams H] [--min_length N] [--max_length N] [--repeats R] [--json]
    python tools/paper_tables.py --table 2 [--report=OUTPUT_DIR/report.json ...] [--device_tflops=T] [--json]
    python tools/paper_tables.py --table 3 [--json]

Table N is tools/tables/table<N>.py; its docstring says what the table holds and how it is checked.
"""

import argparse
import importlib
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
_TOOLS_DIR = os.path.dirname(os.path.abspath(__file__))
if _TOOLS_DIR not in sys.path:
    sys.path.insert(0, _TOOLS_DIR)

from t2t_repro.cli.common import quiet_tensorflow, run_main  # noqa: E402


def build_parser():
    parser = argparse.ArgumentParser(prog="paper_tables.py", description=__doc__.splitlines()[0])
    parser.add_argument("--table", type=int, choices=[1, 2, 3], required=True, help="which table of the paper")
    parser.add_argument("--json", action="store_true", help="one JSON object per row")
    one = parser.add_argument_group("table 1 (timed by tools/benchmarks/attention.py)")
    one.add_argument("--hparams", default="transformer_base", help="sizes of the timed layer (default base)")
    one.add_argument("--min_length", type=int, default=64, help="shortest sequence length (default 64)")
    one.add_argument("--max_length", type=int, default=4096, help="longest sequence length (default 4096)")
    one.add_argument("--warmup", type=int, help="untimed calls per length (the suite's default)")
    one.add_argument("--repeats", type=int, help="timed calls per length, median kept (the suite's default)")
    two = parser.add_argument_group("table 2")
    two.add_argument("--report", action="append", default=[],
                     help="a run's report.json or output_dir, to estimate its cost; repeatable")
    two.add_argument("--device_tflops", type=float,
                     help="sustained fp32 TFLOPS of one of the runs' devices (default: the Table 2 footnote's "
                          "figure for K80/K40/M40/P100, else this machine's measured fp32 matmul peak)")
    return parser


def _main(argv):
    args = build_parser().parse_args(argv)
    if args.table != 2 or args.report:
        quiet_tensorflow()
    # Imported only now, after quiet_tensorflow(): tables 1 and 3 import TensorFlow as they load.
    importlib.import_module(f"tables.table{args.table}").run(args)
    return 0


def main(argv=None):
    return run_main(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
