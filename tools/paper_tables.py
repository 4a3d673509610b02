"""Regenerates the paper's tables from this project's code, configurations and runs.

    python tools/paper_tables.py --table 1 [--hparams H] [--min_length N] [--max_length N] [--repeats R] [--json]
    python tools/paper_tables.py --table 2 [--report=OUTPUT_DIR/report.json ...] [--device_tflops=T] [--json]
    python tools/paper_tables.py --table 3 [--json]

Table 1: the per-layer complexity, sequential operations and maximum path length the paper claims (section 4),
checked against the `attention` benchmark suite: the time of one self-attention layer as n doubles, its growth
exponent per doubling beside the exponent of the layer's FLOP count, and whether it approaches 2.

Table 2: the paper's rows (newstest2014 BLEU, training cost in FLOPs), the cost of its two Transformer rows
recomputed by the paper's method (section 6.1: training time x GPUs x sustained single-precision TFLOPS per
GPU), and the same estimate for our runs from their report.json.

Table 3: for every row, the hparams that differ from base, the parameter count of the model built with a
37,000-token shared vocabulary (the EN-DE setting of section 5.1), the paper's count and their ratio.
"""

import argparse
import collections
import json
import math
import os
import sys
import textwrap

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
_TOOLS_DIR = os.path.dirname(os.path.abspath(__file__))
if _TOOLS_DIR not in sys.path:
    sys.path.insert(0, _TOOLS_DIR)

from t2t_repro.cli.common import quiet_tensorflow, run_main  # noqa: E402
from t2t_repro.errors import UserError  # noqa: E402

ENDE_VOCAB_SIZE = 37_000
_ARCHITECTURE = ("num_layers", "d_model", "d_ff", "num_heads", "d_k", "d_v")

# ---------------------------------------------------------------------------------------------------------------
# Table 1 (section 4): per layer, complexity, minimum number of sequential operations, maximum path length.

Table1Row = collections.namedtuple("Table1Row", "layer complexity sequential_operations max_path_length")
TABLE1_ROWS = (
    Table1Row("Self-Attention", "O(n^2 * d)", "O(1)", "O(1)"),
    Table1Row("Recurrent", "O(n * d^2)", "O(n)", "O(n)"),
    Table1Row("Convolutional", "O(k * n * d^2)", "O(1)", "O(log_k(n))"),
    Table1Row("Self-Attention (restricted)", "O(r * n * d)", "O(1)", "O(n/r)"),
)
# The measured exponent at the longest lengths counts as "approaching 2" from this value on.
APPROACHES_TWO = 1.8


def self_attention_flops(hparams, length):
    """Matmul FLOPs of one self-attention layer's forward pass on one sequence of `length` positions, as
    t2t_repro.model.attention.MultiHeadAttention computes it: the fused Q/K/V and the output projections
    (O(n d^2)) and the products Q K^T and weights x V (O(n^2 d), Table 1's self-attention term)."""
    d, h, d_k, d_v = hparams.d_model, hparams.num_heads, hparams.d_k, hparams.d_v
    projections = 2 * length * d * h * (2 * d_k + d_v) + 2 * length * h * d_v * d
    products = 2 * h * length * length * (d_k + d_v)
    return projections + products


def quadratic_crossover_length(hparams):
    """The n at which the n^2 d products cost as much as the n d^2 projections (2 d_model for the paper's
    sets, where h d_k = h d_v = d_model): well beyond it, the layer's cost grows as n^2."""
    per_position = self_attention_flops(hparams, 1) - 2 * hparams.num_heads * (hparams.d_k + hparams.d_v)
    return per_position / (2 * hparams.num_heads * (hparams.d_k + hparams.d_v))


def measure_self_attention(args):
    """Runs the `attention` suite of tools/benchmark.py in this process; returns its measurements."""
    import benchmark

    parser = benchmark.build_parser()
    suite = benchmark.load_suite("attention")
    suite.add_arguments(parser)
    flags = ["--suite=attention", f"--hparams={args.hparams}", f"--min_length={args.min_length}",
             f"--max_length={args.max_length}"]
    flags += [f"--warmup={args.warmup}"] if args.warmup is not None else []
    flags += [f"--repeats={args.repeats}"] if args.repeats is not None else []
    return suite.run(parser.parse_args(flags))


def _exponent(n0, v0, n1, v1):
    return math.log(v1 / v0) / math.log(n1 / n0)


def table1_check(measurements, hparams):
    """Per length: time, attention-weights bytes, FLOPs and the growth exponents of time and FLOPs over the
    doubling that ends there; and a summary with the fitted exponents and the verdict on "approaches 2"."""
    by_metric = collections.defaultdict(list)
    for m in measurements:
        by_metric[m["metric"]].append(m)
    weights = {m["config"]["n"]: m["value"] for m in by_metric["attention_weights_bytes"]}
    lengths, rows = [], []
    for m in by_metric["self_attention_ms"]:
        n = m["config"]["n"]
        row = {"n": n, "time_ms": m["value"], "flops": self_attention_flops(hparams, n),
               "attention_weights_bytes": weights.get(n), "time_exponent": None, "flops_exponent": None}
        if rows:
            previous = rows[-1]
            row["time_exponent"] = _exponent(previous["n"], previous["time_ms"], n, row["time_ms"])
            row["flops_exponent"] = _exponent(previous["n"], previous["flops"], n, row["flops"])
        rows.append(row)
        lengths.append(n)
    fits = {m["metric"]: m["value"] for m in measurements if m["unit"] == "exponent"}
    crossover = quadratic_crossover_length(hparams)
    summary = {
        "hparams": measurements[0]["config"]["hparams"],
        "device": measurements[0]["config"]["device"],
        "d_model": hparams.d_model,
        "lengths": lengths,
        "time_growth_exponent": fits.get("time_growth_exponent"),
        "time_growth_exponent_n_ge_d_model": fits.get("time_growth_exponent_n_ge_d_model"),
        "last_time_exponent": rows[-1]["time_exponent"] if len(rows) > 1 else None,
        "last_flops_exponent": rows[-1]["flops_exponent"] if len(rows) > 1 else None,
        "quadratic_crossover_n": crossover,
    }
    summary["approaches_2"] = (summary["last_time_exponent"] is not None
                               and summary["last_time_exponent"] >= APPROACHES_TWO)
    return rows, summary


def table1_verdict(summary):
    """A plain-language reading of the measurement against Table 1's O(n^2 d)."""
    last, flops_last = summary["last_time_exponent"], summary["last_flops_exponent"]
    if last is None:
        return "one length only: no growth exponent (give --max_length >= 2 x --min_length)"
    longest = summary["lengths"][-1]
    crossover = summary["quadratic_crossover_n"]
    if summary["approaches_2"]:
        verdict = (f"yes: at n={longest} the time grows as n^{last:.2f} per doubling (FLOP count n^{flops_last:.2f}), "
                   f"the O(n^2 d) term of Table 1 dominating beyond n ~ {crossover:.0f}")
        if last > flops_last + 0.2:
            verdict += ("; faster than the FLOP count because the softmax writes and reads the n^2 h attention "
                        "weights, memory traffic that also grows as n^2 and slows once it outgrows the caches (one doubling, "
                        "so noisy on a shared machine)")
        return verdict
    return (f"not within n <= {longest}: the last doubling grows the time as n^{last:.2f} and the FLOP count as "
            f"n^{flops_last:.2f}. The projections' O(n d^2) cost the layer as much as the O(n^2 d) products at "
            f"n ~ {crossover:.0f}, so the exponent tends to 2 only for n well above that (try --max_length="
            f"{2 ** math.ceil(math.log2(8 * crossover))}); on a CPU, fixed per-call overheads and the d-linear "
            "terms also dominate at small n, which flattens the exponent there")


def print_table1(rows, summary):
    header = f"{'layer type':<30}{'complexity per layer':<22}{'sequential ops':<16}{'max path length'}"
    print("Table 1 (section 4); n: sequence length, d: representation size, k: kernel size, r: neighbourhood")
    print(header)
    print("-" * len(header))
    for row in TABLE1_ROWS:
        print(f"{row.layer:<30}{row.complexity:<22}{row.sequential_operations:<16}{row.max_path_length}")
    print()
    print(f"Measured: one self-attention layer of {summary['hparams']} (d_model={summary['d_model']}), forward, "
          f"batch 1, on {summary['device']}")
    header = f"{'n':>7}{'time ms':>12}{'exponent':>10}{'GFLOPs':>10}{'FLOP exp.':>11}{'weights MiB':>13}"
    print(header)
    print("-" * len(header))
    for r in rows:
        exponents = [f"{e:.2f}" if e is not None else "-" for e in (r["time_exponent"], r["flops_exponent"])]
        weights = f"{r['attention_weights_bytes'] / 2**20:.2f}" if r["attention_weights_bytes"] is not None else "-"
        print(f"{r['n']:>7}{r['time_ms']:>12.3f}{exponents[0]:>10}{r['flops'] / 1e9:>10.3f}{exponents[1]:>11}"
              f"{weights:>13}")
    for key in ("time_growth_exponent", "time_growth_exponent_n_ge_d_model"):
        if summary[key] is not None:
            print(f"{key}: {summary[key]:.2f}")
    print(textwrap.fill(f"approaches 2: {table1_verdict(summary)}", width=110, subsequent_indent="    "))


def table1(args):
    from t2t_repro import registry

    hparams = registry.get_hparams(args.hparams)
    rows, summary = table1_check(measure_self_attention(args), hparams)
    if args.json:
        for row in TABLE1_ROWS:
            print(json.dumps({"kind": "claim", **row._asdict()}))
        for row in rows:
            print(json.dumps({"kind": "measurement", **row}))
        print(json.dumps({"kind": "summary", **summary, "verdict": table1_verdict(summary)}))
    else:
        print_table1(rows, summary)


# ---------------------------------------------------------------------------------------------------------------
# Table 2: BLEU on newstest2014 and training cost in FLOPs.

# The Table 2 footnote: sustained single-precision TFLOPS per GPU.
PAPER_GPU_TFLOPS = {"K80": 2.8, "K40": 3.7, "M40": 6.0, "P100": 9.5}

Table2Row = collections.namedtuple("Table2Row", "model bleu_ende bleu_enfr cost_ende cost_enfr")
TABLE2_ROWS = (
    Table2Row("ByteNet", 23.75, None, None, None),
    Table2Row("Deep-Att + PosUnk", None, 39.2, None, 1.0e20),
    Table2Row("GNMT + RL", 24.6, 39.92, 2.3e19, 1.4e20),
    Table2Row("ConvS2S", 25.16, 40.46, 9.6e18, 1.5e20),
    Table2Row("MoE", 26.03, 40.56, 2.0e19, 1.2e20),
    Table2Row("Deep-Att + PosUnk Ensemble", None, 40.4, None, 8.0e20),
    Table2Row("GNMT + RL Ensemble", 26.30, 41.16, 1.8e20, 1.1e21),
    Table2Row("ConvS2S Ensemble", 26.36, 41.29, 7.7e19, 1.2e21),
    Table2Row("Transformer (base model)", 27.3, 38.1, 3.3e18, 3.3e18),
    Table2Row("Transformer (big)", 28.4, 41.8, 2.3e19, 2.3e19),
)

# Section 5.2: one machine with 8 P100 GPUs; base 100,000 steps at about 0.4 s ("12 hours"), big 300,000 steps
# at about 1.0 s ("3.5 days").
PaperTraining = collections.namedtuple("PaperTraining", "model steps step_seconds stated_hours gpus gpu")
PAPER_TRAINING = (
    PaperTraining("Transformer (base model)", 100_000, 0.4, 12.0, 8, "P100"),
    PaperTraining("Transformer (big)", 300_000, 1.0, 3.5 * 24, 8, "P100"),
)


def training_cost(seconds, devices, tflops):
    """Section 6.1's estimate of the floating-point operations used to train a model: training time x number
    of devices x sustained single-precision FLOPS of one device."""
    return seconds * devices * tflops * 1e12


def paper_cost_rows():
    """The paper's two Transformer costs recomputed: from the stated wall time (the paper's own figure) and
    from steps x seconds per step."""
    paper = {row.model: row for row in TABLE2_ROWS}
    for t in PAPER_TRAINING:
        tflops = PAPER_GPU_TFLOPS[t.gpu]
        yield {
            "kind": "paper_estimate", "model": t.model, "steps": t.steps, "step_seconds": t.step_seconds,
            "stated_hours": t.stated_hours, "devices": t.gpus, "device_kind": t.gpu, "device_tflops": tflops,
            "cost_flops": training_cost(t.stated_hours * 3600, t.gpus, tflops),
            "cost_flops_from_steps": training_cost(t.steps * t.step_seconds, t.gpus, tflops),
            "paper_cost_flops": paper[t.model].cost_ende,
        }


def measured_device_tflops(device_kind):
    """(TFLOPS, how it was obtained) for a run's device kind by measuring this machine's fp32 matmul peak
    (tools/benchmarks/timing.py); the run must have used this kind of device."""
    import tensorflow as tf
    from benchmarks.timing import device_description, device_name, matmul_peak

    here = device_name().split(":")[0]
    if here != device_kind.upper():
        raise UserError(f"the run used a {device_kind} but this machine computes on its {here}: give the "
                        f"{device_kind}'s sustained fp32 TFLOPS with --device_tflops")
    if here == "GPU":
        # The paper's figures are plain single precision; TF32 matmuls would overstate them.
        tf.config.experimental.enable_tensor_float_32_execution(False)
    peak = matmul_peak()
    return peak["flops_per_sec"] / 1e12, (
        f"measured fp32 matmul peak ({peak['size']}x{peak['size']}, median of {peak['repeats']}) of this "
        f"machine's {device_description()}")


class DeviceTflops:
    """The sustained fp32 TFLOPS used for a run's device, per device kind, measured at most once.

    Defaults: the Table 2 footnote's figure for K80, K40, M40 and P100; for "CPU" and "GPU" (what the trainer
    records) the fp32 matmul peak measured on this machine, which must then be of that kind. --device_tflops
    overrides every default."""

    def __init__(self, override=None):
        if override is not None and not override > 0:
            raise UserError(f"--device_tflops={override}: must be positive")
        self.override = override
        self._known = {}

    def __call__(self, device_kind):
        if self.override is not None:
            return self.override, "--device_tflops"
        name = device_kind.upper()
        if name in PAPER_GPU_TFLOPS:
            return PAPER_GPU_TFLOPS[name], "Table 2 footnote"
        if name not in self._known:
            self._known[name] = measured_device_tflops(name)
        return self._known[name]


def read_report(path):
    """A run's report.json (or the one in an output_dir), checked for the fields the estimate needs."""
    from t2t_repro.train.run_dir import read_json

    if not os.path.exists(path):
        raise UserError(f"--report={path}: no such file or directory")
    if os.path.isdir(path):
        path = os.path.join(path, "report.json")
    report = read_json(path, "a run's report")
    required = ("steps", "train_seconds", "devices", "device_kind")
    missing = [key for key in required if key not in report] if isinstance(report, dict) else list(required)
    if missing:
        raise UserError(f"{path} is not a finished run's report: it lacks {', '.join(missing)}")
    return path, report


def run_cost_row(path, report, device_tflops):
    """Our run in Table 2's units: its training cost and its test score."""
    tflops, source = device_tflops(report["device_kind"])
    bleu = report.get("bleu") or {}
    return {
        "kind": "run", "model": f"{report.get('hparams_set', '?')} on {report.get('problem', '?')}", "report": path,
        "steps": report["steps"], "train_hours": report["train_seconds"] / 3600, "devices": report["devices"],
        "device_kind": report["device_kind"], "device_tflops": tflops, "tflops_source": source,
        "cost_flops": training_cost(report["train_seconds"], report["devices"], tflops),
        # Table 2's BLEU is tokenized (with compound splitting for German); sacreBLEU is the comparable one.
        "bleu_tokenized": bleu.get("tokenized_compound_split", bleu.get("tokenized")) if bleu else None,
        "bleu_sacrebleu": bleu.get("sacrebleu"),
        "f1": report.get("f1"),
    }


def _number(value, form):
    return "-" if value is None else format(value, form)


def print_table2(paper_rows, estimates, runs):
    header = f"{'model':<30}{'BLEU EN-DE':>11}{'EN-FR':>8}{'cost EN-DE':>12}{'cost EN-FR':>12}"
    print("Table 2 (newstest2014 BLEU; training cost in FLOPs)")
    print(header)
    print("-" * len(header))
    for r in paper_rows:
        print(f"{r.model:<30}{_number(r.bleu_ende, 'g'):>11}{_number(r.bleu_enfr, 'g'):>8}"
              f"{_number(r.cost_ende, '.1e'):>12}{_number(r.cost_enfr, '.1e'):>12}")
    print()
    print("Cost = training time x devices x sustained fp32 TFLOPS per device (section 6.1; TFLOPS: "
          + ", ".join(f"{k} {v}" for k, v in PAPER_GPU_TFLOPS.items()) + ")")
    header = f"{'model':<30}{'hours':>8}{'devices':>13}{'TFLOPS':>9}{'cost':>10}{'paper':>10}{'steps x s/step':>16}"
    print(header)
    print("-" * len(header))
    for e in estimates:
        devices = f"{e['devices']} x {e['device_kind']}"
        print(f"{e['model']:<30}{e['stated_hours']:>8.1f}{devices:>13}{e['device_tflops']:>9.2f}"
              f"{e['cost_flops']:>10.1e}{e['paper_cost_flops']:>10.1e}{e['cost_flops_from_steps']:>16.1e}")
        print(f"    the paper's stated time (section 5.2); steps x s/step: {e['steps']:,} x {e['step_seconds']} s")
    for r in runs:
        devices = f"{r['devices']} x {r['device_kind']}"
        print(f"{r['model'][:29]:<30}{r['train_hours']:>8.3f}{devices:>13}{r['device_tflops']:>9.3f}"
              f"{r['cost_flops']:>10.1e}{'-':>10}{'-':>16}")
        score = (f"BLEU {_number(r['bleu_tokenized'], '.2f')} tokenized, {_number(r['bleu_sacrebleu'], '.2f')} "
                 "sacreBLEU" if r["f1"] is None else f"F1 {r['f1']:.2f}")
        print(f"    {r['report']}: {r['steps']} steps; {score}; TFLOPS: {r['tflops_source']}")


def table2(args):
    device_tflops = DeviceTflops(args.device_tflops)
    runs = [run_cost_row(*read_report(path), device_tflops) for path in args.report]
    estimates = list(paper_cost_rows())
    if args.json:
        for row in TABLE2_ROWS:
            print(json.dumps({"kind": "paper", **row._asdict()}))
        for row in estimates + runs:
            print(json.dumps(row))
    else:
        print_table2(TABLE2_ROWS, estimates, runs)


# ---------------------------------------------------------------------------------------------------------------
# Table 3: variations on the base model.


def table3_rows(vocab_size=ENDE_VOCAB_SIZE):
    """One dict per Table 3 row, with the built model's parameter count beside the paper's."""
    from t2t_repro import registry
    from t2t_repro.hparams.table3 import TABLE3_ROWS
    from t2t_repro.model import build_transformer

    base = registry.get_hparams("transformer_base")
    for row in TABLE3_ROWS:
        hparams = registry.get_hparams(row.hparams)
        params = build_transformer(hparams, vocab_size).count_params()
        changed = {name: getattr(hparams, name) for name in hparams.differing_keys(base)}
        yield {
            "row": row.row,
            "hparams": row.hparams,
            **{name: getattr(hparams, name) for name in _ARCHITECTURE},
            "dropout": hparams.dropout,
            "label_smoothing": hparams.label_smoothing,
            "position_encoding": hparams.position_encoding,
            "changed": changed,
            "vocab_size": vocab_size,
            "params": params,
            "paper_params": row.paper_params * 1_000_000 if row.paper_params else None,
            "params_ratio": round(params / (row.paper_params * 1e6), 4) if row.paper_params else None,
            "paper_dev_ppl": row.paper_ppl,
            "paper_dev_bleu": row.paper_bleu,
        }


def print_table3(rows):
    header = f"{'row':<5}{'hparams':<40}{'changed from base':<34}{'params':>9}{'paper':>8}{'ratio':>8}"
    print(header)
    print("-" * len(header))
    for r in rows:
        changed = ", ".join(f"{k}={v}" for k, v in r["changed"].items()) or "-"
        paper = f"{r['paper_params'] / 1e6:.0f}M" if r["paper_params"] else "-"
        ratio = f"{r['params_ratio']:.3f}" if r["params_ratio"] else "-"
        print(f"{r['row']:<5}{r['hparams']:<40}{changed:<34}{r['params'] / 1e6:>8.1f}M{paper:>8}{ratio:>8}")


def table3(args):
    rows = list(table3_rows())
    if args.json:
        for r in rows:
            print(json.dumps(r))
    else:
        print_table3(rows)


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
    {1: table1, 2: table2, 3: table3}[args.table](args)
    return 0


def main(argv=None):
    return run_main(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
