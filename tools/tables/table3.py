"""Table 3: for every row, the hparams that differ from base, the parameter count of the model built with a
37,000-token shared vocabulary (the EN-DE setting of section 5.1), the paper's count and their ratio.
"""

import json

from t2t_repro import catalog
from t2t_repro.hparams.table3 import TABLE3_ROWS
from t2t_repro.model import build_transformer

# Section 5.1: the EN-DE sentences share a vocabulary of about 37,000 tokens.
ENDE_VOCAB_SIZE = 37_000
_ARCHITECTURE = ("num_layers", "d_model", "d_ff", "num_heads", "d_k", "d_v")


def table3_rows(vocab_size=ENDE_VOCAB_SIZE):
    """One dict per Table 3 row, with the built model's parameter count beside the paper's."""
    base = catalog.get_hparams("transformer_base")
    for row in TABLE3_ROWS:
        hparams = catalog.get_hparams(row.hparams)
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


def run(args):
    """Prints Table 3's rows with their parameter counts; with --json, one JSON object per row."""
    rows = list(table3_rows())
    if args.json:
        for r in rows:
            print(json.dumps(r))
    else:
        print_table3(rows)
