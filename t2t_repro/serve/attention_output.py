"""One example's answer of the `attention` signature (`t2t_repro.serve.export_attention`) as the server gives it:
the pieces and weights past the source's and each hypothesis' end (padding of the batch) removed, the weights
rounded to 6 decimals (JSON stays a tenth of its size; the rows still sum to 1 within 1e-5).

    {"source_pieces": ["▁the", "▁cat", "</s>"], "target_pieces": ["▁die", "▁Katze", "</s>"],
     "attention": [per layer [per head [per target piece [per source piece weight]]]], ...}

From an n-best export, target_pieces and attention hold one entry per hypothesis, best first.
"""

import numpy as np

from t2t_repro.serve.export_files import ATTENTION_NAME, SOURCE_PIECES_NAME, TARGET_PIECES_NAME

DECIMALS = 6


def _length(pieces):
    """How many pieces a padded piece vector [length] holds (padding is "")."""
    return int(np.count_nonzero(pieces != b""))


def trim_attention_example(outputs):
    """{output name: numpy value} of one example, its attention outputs trimmed (see the module docstring)."""
    source_length = _length(outputs[SOURCE_PIECES_NAME])
    targets, weights = outputs[TARGET_PIECES_NAME], outputs[ATTENTION_NAME]

    def one(pieces, hypothesis_weights):
        length = _length(pieces)
        return pieces[:length], np.round(hypothesis_weights[:, :, :length, :source_length].astype(np.float64), DECIMALS)

    if targets.ndim == 1:
        targets, weights = one(targets, weights)
    else:
        targets, weights = zip(*(one(p, w) for p, w in zip(targets, weights)))
        targets, weights = list(targets), list(weights)
    return dict(outputs, **{SOURCE_PIECES_NAME: outputs[SOURCE_PIECES_NAME][:source_length],
                            TARGET_PIECES_NAME: targets, ATTENTION_NAME: weights})
