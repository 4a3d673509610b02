"""Regenerates the paper's tables from this project's registered configurations.

    python tools/paper_tables.py --table 3 [--json]

Table 3: for every row, the hparams that differ from base, the parameter count of the model built with a
37,000-token shared vocabulary (the EN-DE setting of section 5.1), the paper's count and their ratio.
"""

import argparse
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from t2t_repro import registry  # noqa: E402
from t2t_repro.hparams.table3 import TABLE3_ROWS  # noqa: E402
from t2t_repro.model import build_transformer  # noqa: E402

ENDE_VOCAB_SIZE = 37_000
_ARCHITECTURE = ("num_layers", "d_model", "d_ff", "num_heads", "d_k", "d_v")


def table3_rows(vocab_size=ENDE_VOCAB_SIZE):
    """One dict per Table 3 row, with the built model's parameter count beside the paper's."""
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", type=int, choices=[3], required=True, help="which table of the paper")
    parser.add_argument("--json", action="store_true", help="one JSON object per row")
    args = parser.parse_args(argv)
    rows = list(table3_rows())
    if args.json:
        for r in rows:
            print(json.dumps(r))
    else:
        print_table3(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
