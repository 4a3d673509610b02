"""An hparams set of your own: a function returning HParams, registered under the function's name.

Derive it from a registered set with dataclasses.replace, so that every field you do not name keeps the
paper's value (`t2t-repro-trainer --t2t_usr_dir=examples/usr_dir --hparams=transformer_en_es_small
--hparams_help` prints them all).
"""

import dataclasses

from t2t_repro.hparams.transformer import transformer_base
from t2t_repro.registry import register_hparams


@register_hparams
def transformer_en_es_small():
    """A small model for a small corpus: 3 layers, d_model=256, 4 heads, d_ff=1024, 4,000 steps of 4,096 tokens."""
    return dataclasses.replace(
        transformer_base(),
        num_layers=3,
        d_model=256,
        d_ff=1024,
        num_heads=4,
        d_k=64,
        d_v=64,
        warmup_steps=1000,
        train_steps=4000,
        batch_tokens=4096,
        max_length=128,
    )
