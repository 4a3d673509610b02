"""The memory a beam search needs, estimated from the settings before any model loads, so that a beam too wide for
the machine is refused in one line instead of ending in a MemoryError deep inside the search.

    check_beam_fits(settings, hparams, target_vocab_size=8000)
"""

import os

from t2t_repro.errors import UserError

_FLOAT_BYTES = 4


def search_bytes(beam_size, input_length, output_length, hparams, target_vocab_size):
    """Bytes of the largest float32 tensors one sentence's search holds: the decoder's key/value cache of every
    layer for each hypothesis (self-attention over the output, encoder-decoder attention over the input) and a
    step's log-probabilities over the vocabulary with their two working copies (scores, top-k input)."""
    key_value_width = hparams.num_heads * (hparams.d_k + hparams.d_v)
    cache = beam_size * hparams.num_layers * (output_length + input_length) * key_value_width
    scores = 3 * beam_size * target_vocab_size
    return _FLOAT_BYTES * (cache + scores)


def physical_memory():
    """The machine's memory in bytes."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check_beam_fits(settings, hparams, target_vocab_size, memory_bytes=None):
    """UserError when a beam search with the DecodeSettings `settings` needs more memory than the machine has
    (`memory_bytes`, default: all of its physical memory) for one sentence of the longest input."""
    input_length = settings.max_input_length or hparams.max_length
    needed = search_bytes(settings.beam_size, input_length, input_length + settings.extra_length, hparams,
                          target_vocab_size)
    memory = memory_bytes or physical_memory()
    if needed > memory:
        raise UserError(f"beam_size={settings.beam_size} needs about {needed / 2**30:,.1f} GiB to decode one sentence "
                        f"of {input_length} tokens, more than this machine's {memory / 2**30:,.1f} GiB; give a "
                        "smaller beam_size (the paper's is 4, section 6.1)")
