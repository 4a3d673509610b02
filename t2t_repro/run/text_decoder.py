"""What t2t-repro-decoder decodes with, whichever engine runs the model, and the decoding of files and of
standard input with it.

    decoder = jobs.run_decoder("runs/wmt_ende", beam_size=4)                       # TensorFlow, the run's checkpoint
    decoder = ctranslate2_jobs.export_decoder("runs/wmt_ende/export_ctranslate2")  # a CTranslate2 export
    decode_file(decoder, "newstest2014.en", "newstest2014.de")
    decode_interactive(decoder, sys.stdin.buffer, sys.stdout)

A `TextDecoder` holds a batch search (`t2t_repro.decode.decode_text`), its settings, the vocabulary and the
problem's post-processing; both engines decode text the same way from there (stripping, truncation, invalid
UTF-8, empty lines, n-best format).
"""

import dataclasses
import logging
import os
import sys

from t2t_repro import catalog
from t2t_repro.decode.decode_text import decode_file as decode_text_file
from t2t_repro.decode.interactive import decode_interactively
from t2t_repro.errors import UserError
from t2t_repro.run.user_code import import_recorded

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class TextDecoder:
    """A model ready to decode text: a batch search with `settings`, the vocabulary, the problem's
    `postprocess` (or None) and what the model is, for messages (e.g. "checkpoint runs/x/averaged/ckpt-5")."""

    search: object
    settings: object
    vocabulary: object
    postprocess: object
    description: str


def check_file_paths(source_path, target_path):
    """UserError for a source file that does not exist or a target in a directory that does not."""
    if not os.path.isfile(source_path):
        raise UserError(f"{source_path}: no such file")
    target_dir = os.path.dirname(os.path.abspath(target_path))
    if not os.path.isdir(target_dir):
        raise UserError(f"{target_path}: directory {target_dir} does not exist")


def decode_file(decoder, source_path, target_path, batch_size=None, progress=True):
    """Decodes a text file into `target_path` (written atomically); returns the lines decoded."""
    print(f"decoding {source_path} with {decoder.description} ({decoder.settings.describe()})", file=sys.stderr,
          flush=True)
    return decode_text_file(source_path, target_path, decoder.search, decoder.vocabulary, decoder.settings,
                            decoder.postprocess, batch_size=batch_size, progress=progress)


def decode_interactive(decoder, input_stream, output_stream):
    """Answers each line of `input_stream` (binary) on `output_stream` as soon as it is read; returns the count."""
    print(f"decoding standard input with {decoder.description} ({decoder.settings.describe()}): one sentence per "
          "line, each answered at once; end with Ctrl-D", file=sys.stderr, flush=True)
    return decode_interactively(input_stream, output_stream, decoder.search, decoder.vocabulary, decoder.settings,
                                decoder.postprocess)


def export_postprocess(metadata, usr_dir=None):
    """The post-processing of the problem an export was made from (its metadata's "problem", with its settings;
    a user's problem through `usr_dir` or the user directory the metadata records), or None when the export
    does not name a problem registered here (then outputs are served as decoded)."""
    name = metadata.get("problem")
    if not name:
        return None
    needed = {"problems": [name]} if name in metadata.get("usr_names", {}).get("problems", []) else {}
    try:
        import_recorded(metadata.get("t2t_usr_dir", ""), needed, usr_dir, what="the export")
        return catalog.get_problem(name, metadata.get("problem_overrides", "")).postprocess
    except UserError as error:
        logger.warning("outputs are not post-processed: %s", error)
        return None
