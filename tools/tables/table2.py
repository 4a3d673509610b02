"""Table 2: the paper's rows (newstest2014 BLEU, training cost in FLOPs), the cost of its two Transformer rows
recomputed by the paper's method (section 6.1: training time x GPUs x sustained single-precision TFLOPS per
GPU), and the same estimate for our runs from their report.json.
"""

import collections
import json

from tables.cost import PAPER_GPU_TFLOPS, DeviceTflops, read_report, run_cost_row, training_cost

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


def run(args):
    """Prints Table 2 and the cost estimates, the paper's and our runs'; with --json, one JSON object per line."""
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
