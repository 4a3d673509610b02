"""Table 1: the per-layer complexity, sequential operations and maximum path length the paper claims (section 4),
checked against the `attention` benchmark suite: the time of one self-attention layer as n doubles, its growth
exponent per doubling beside the exponent of the layer's FLOP count, and whether it approaches 2.
"""

import collections
import json
import math
import textwrap

import benchmark
from t2t_repro import catalog

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


def run(args):
    """Prints Table 1's claims and the measurement that checks them; with --json, one JSON object per line."""
    hparams = catalog.get_hparams(args.hparams)
    rows, summary = table1_check(measure_self_attention(args), hparams)
    if args.json:
        for row in TABLE1_ROWS:
            print(json.dumps({"kind": "claim", **row._asdict()}))
        for row in rows:
            print(json.dumps({"kind": "measurement", **row}))
        print(json.dumps({"kind": "summary", **summary, "verdict": table1_verdict(summary)}))
    else:
        print_table1(rows, summary)
