"""What t2t-repro-decoder decodes with, whichever engine runs the model, and the decoding of files and of
standard input with it.

    decoder = jobs.run_decoder("runs/wmt_ende", beam_size=4)                       # TensorFlow, the run's checkpoint
    decoder = ctranslate2_jobs.export_decoder("runs/wmt_ende/export_ctranslate2")  # a CTranslate2 export
    decode_file(decoder, "newstest2014.en", "newstest2014.de")
    decode_interactive(decoder, sys.stdin.buffer, sys.stdout)

A `TextDecoder` holds a batch search (`t2t_repro.decode.decode_text`: the beam search, or the sampler of
`t2t_repro.decode.sampling` or of `t2t_repro.serve.ctranslate2_sampling`), its settings, the vocabularies and the
problem's post-processing; both engines decode text the same way from there (stripping, truncation, invalid
UTF-8, empty lines, n-best format).

    scorer = jobs.run_scorer("runs/wmt_ende")                   # the log-probabilities of given translations
    score_file(scorer, "newstest2014.en", "newstest2014.de")    # one line per pair on stdout; perplexity on stderr
"""

import dataclasses
import logging
import os
import sys

from t2t_repro import catalog
from t2t_repro.data.parallel_files import check_aligned
from t2t_repro.decode.decode_text import decode_file as decode_text_file
from t2t_repro.decode.decode_text import read_source_lines, write_lines
from t2t_repro.decode.interactive import decode_interactively
from t2t_repro.decode.score_text import corpus_total, format_scores, score_text_files
from t2t_repro.errors import UserError
from t2t_repro.run.user_code import import_recorded
from t2t_repro.safe_write import check_not_overwriting, check_writable

logger = logging.getLogger(__name__)


def sampling_flags(settings_flags, default_nbest=1):
    """The decode settings flags of a sampler: nbest samples per input (the flag, else `default_nbest`), one
    decoder row each, which are the rows a beam search of that size has per input."""
    return dict(settings_flags, beam_size=settings_flags.get("nbest") or default_nbest)


@dataclasses.dataclass(frozen=True)
class TextDecoder:
    """A model ready to decode text: a batch search with `settings` (and `sampling`, the SamplingSettings of a
    sampling search), the `Vocabularies`, the problem's `postprocess` (or None) and what the model is, for
    messages (e.g. "checkpoint runs/x/averaged/ckpt-5")."""

    search: object
    settings: object
    vocabularies: object
    postprocess: object
    description: str
    sampling: object = None

    def describe(self):
        """How it decodes, in words: "beam 4, alpha 0.6, max length input + 50", or the sampling's."""
        return self.sampling.describe(self.settings) if self.sampling else self.settings.describe()


@dataclasses.dataclass(frozen=True)
class TextScorer:
    """A model ready to score given translations: a batch scorer (`t2t_repro.decode.scoring`), the decode
    `settings` (alpha, max_input_length), the vocabularies and what the model is, for messages."""

    scorer: object
    settings: object
    vocabularies: object
    description: str


def check_file_paths(source_path, target_path):
    """UserError for a source file that does not exist, a target that cannot be written (a directory, in a
    directory that does not exist or refuses new files), or a target that is the source itself."""
    _check_input_file(source_path)
    check_writable(target_path, "--decode_to_file")
    check_not_overwriting(target_path, {"--decode_from_file": source_path})


def _check_input_file(path):
    """UserError for a path that is not a readable UTF-8 text file (naming the first line that is not UTF-8)."""
    if not os.path.exists(path):
        raise UserError(f"{path}: no such file")
    read_source_lines(path)


def check_score_paths(source_path, target_path, output_path=None):
    """UserError for a missing source or target file, an output in a directory that does not exist or that is
    one of the files read, or source and target files of different line counts (naming both), before any model
    is loaded."""
    for path in (source_path, target_path):
        _check_input_file(path)
    if output_path:
        check_file_paths(source_path, output_path)
        check_not_overwriting(output_path, {"--score_file": target_path})
    check_aligned(source_path, target_path)


def score_file(text_scorer, source_path, target_path, output_path=None, progress=True, **batching):
    """Scores each line of `target_path` as the translation of the same line of `source_path`: one line per pair,
    "<log P>\\t<tokens>\\t<score>", into `output_path` (written atomically) or, without it, standard output;
    the totals and the perplexity go to standard error; `batching`: batch_size or batch_tokens
    (`length_sorted_batches`). Returns the `CorpusTotal`."""
    print(f"scoring {target_path} given {source_path} with {text_scorer.description} (alpha "
          f"{text_scorer.settings.alpha})", file=sys.stderr, flush=True)
    results = score_text_files(source_path, target_path, text_scorer.scorer, text_scorer.vocabularies,
                               text_scorer.settings, progress=progress, **batching)
    lines = format_scores(results)
    if output_path:
        write_lines(output_path, lines)
    else:
        sys.stdout.write("".join(line + "\n" for line in lines))
        sys.stdout.flush()
    total = corpus_total(results)
    print(f"scored {total.pairs} of {len(results)} pairs: {total.tokens} target tokens with EOS, log-probability "
          f"{total.log_prob:.4f}, perplexity {total.perplexity:.4f}", file=sys.stderr, flush=True)
    return total


def decode_file(decoder, source_path, target_path, progress=True, **batching):
    """Decodes a text file into `target_path` (written atomically); returns the lines decoded. `batching`:
    batch_size or batch_tokens (`length_sorted_batches`)."""
    print(f"decoding {source_path} with {decoder.description} ({decoder.describe()})", file=sys.stderr,
          flush=True)
    return decode_text_file(source_path, target_path, decoder.search, decoder.vocabularies, decoder.settings,
                            decoder.postprocess, progress=progress, **batching)


def decode_interactive(decoder, input_stream, output_stream):
    """Answers each line of `input_stream` (binary) on `output_stream` as soon as it is read; returns the count."""
    print(f"decoding standard input with {decoder.description} ({decoder.describe()}): one sentence per "
          "line, each answered at once; end with Ctrl-D", file=sys.stderr, flush=True)
    return decode_interactively(input_stream, output_stream, decoder.search, decoder.vocabularies, decoder.settings,
                                decoder.postprocess)


def export_problem(metadata, usr_dir=None):
    """The problem an export was made from (its metadata's "problem", with its settings; a user's problem through
    `usr_dir` or the user directory the metadata records), or None when the export does not name a problem
    registered here (then outputs are served as decoded)."""
    name = metadata.get("problem")
    if not name:
        return None
    needed = {"problems": [name]} if name in metadata.get("usr_names", {}).get("problems", []) else {}
    try:
        import_recorded(metadata.get("t2t_usr_dir", ""), needed, usr_dir, what="the export")
        return catalog.get_problem(name, metadata.get("problem_overrides", ""))
    except UserError as error:
        logger.warning("outputs are not post-processed: %s", error)
        return None


def export_postprocess(metadata, usr_dir=None):
    """The post-processing of the problem an export was made from (`export_problem`), or None."""
    problem = export_problem(metadata, usr_dir)
    return None if problem is None else problem.postprocess
