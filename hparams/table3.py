"""One hparams set per row of the paper's Table 3 (variations on the base model, EN-DE newstest2013).

`TABLE3_ROWS` pairs each set with the row's label and the paper's dev perplexity, dev BLEU and parameter count
(millions; None where the paper gives none), for `tools/paper_tables.py --table 3`.
"""

import collections
import dataclasses

from t2t_repro.hparams.transformer import transformer_base, transformer_big
from t2t_repro.registry import register_hparams

Table3Row = collections.namedtuple("Table3Row", "row hparams paper_ppl paper_bleu paper_params")

TABLE3_ROWS = []


def _row(label, ppl, bleu, params, **changes):
    """Registers `transformer_table3_<name>` = base with `changes`, and records the paper's numbers."""

    def register(fn):
        def build():
            return dataclasses.replace(transformer_base(), **changes)

        build.__name__ = fn.__name__
        build.__doc__ = fn.__doc__
        register_hparams(build)
        TABLE3_ROWS.append(Table3Row(label, fn.__name__, ppl, bleu, params))
        return build

    return register


TABLE3_ROWS.append(Table3Row("base", "transformer_base", 4.92, 25.8, 65))


@_row("A", 5.29, 24.9, None, num_heads=1, d_k=512, d_v=512)
def transformer_table3_a_heads1():
    """Table 3 (A): h=1, d_k=d_v=512."""


@_row("A", 5.00, 25.5, None, num_heads=4, d_k=128, d_v=128)
def transformer_table3_a_heads4():
    """Table 3 (A): h=4, d_k=d_v=128."""


@_row("A", 4.91, 25.8, None, num_heads=16, d_k=32, d_v=32)
def transformer_table3_a_heads16():
    """Table 3 (A): h=16, d_k=d_v=32."""


@_row("A", 5.01, 25.4, None, num_heads=32, d_k=16, d_v=16)
def transformer_table3_a_heads32():
    """Table 3 (A): h=32, d_k=d_v=16."""


@_row("B", 5.16, 25.1, 58, d_k=16)
def transformer_table3_b_dk16():
    """Table 3 (B): attention key size d_k=16."""


@_row("B", 5.01, 25.4, 60, d_k=32)
def transformer_table3_b_dk32():
    """Table 3 (B): attention key size d_k=32."""


@_row("C", 6.11, 23.7, 36, num_layers=2)
def transformer_table3_c_layers2():
    """Table 3 (C): N=2 layers."""


@_row("C", 5.19, 25.3, 50, num_layers=4)
def transformer_table3_c_layers4():
    """Table 3 (C): N=4 layers."""


@_row("C", 4.88, 25.5, 80, num_layers=8)
def transformer_table3_c_layers8():
    """Table 3 (C): N=8 layers."""


@_row("C", 5.75, 24.5, 28, d_model=256, d_k=32, d_v=32)
def transformer_table3_c_dmodel256():
    """Table 3 (C): d_model=256, d_k=d_v=32."""


@_row("C", 4.66, 26.0, 168, d_model=1024, d_k=128, d_v=128)
def transformer_table3_c_dmodel1024():
    """Table 3 (C): d_model=1024, d_k=d_v=128."""


@_row("C", 5.12, 25.4, 53, d_ff=1024)
def transformer_table3_c_dff1024():
    """Table 3 (C): d_ff=1024."""


@_row("C", 4.75, 26.2, 90, d_ff=4096)
def transformer_table3_c_dff4096():
    """Table 3 (C): d_ff=4096."""


@_row("D", 5.77, 24.6, None, dropout=0.0)
def transformer_table3_d_dropout0():
    """Table 3 (D): P_drop=0.0."""


@_row("D", 4.95, 25.5, None, dropout=0.2)
def transformer_table3_d_dropout0p2():
    """Table 3 (D): P_drop=0.2."""


@_row("D", 4.67, 25.3, None, label_smoothing=0.0)
def transformer_table3_d_smoothing0():
    """Table 3 (D): eps_ls=0.0 (no label smoothing)."""


@_row("D", 5.47, 25.7, None, label_smoothing=0.2)
def transformer_table3_d_smoothing0p2():
    """Table 3 (D): eps_ls=0.2."""


@_row("E", 4.92, 25.7, None, position_encoding="learned")
def transformer_table3_e_learned_positions():
    """Table 3 (E): learned positional embeddings instead of sinusoids."""


TABLE3_ROWS.append(Table3Row("big", transformer_big.__name__, 4.33, 26.4, 213))
