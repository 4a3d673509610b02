"""Decoding lists of source strings and text files with a trained model, in input order.

    hypotheses = decode_texts(sources, model, vocabularies, settings, problem.postprocess)      # list[str]
    nbest = decode_texts_nbest(sources, model, vocabularies, settings.override(nbest=4))   # list[list[Hypothesis]]
    nbest = search_texts_nbest(sources, search, vocabularies, settings)   # any engine's batch search

A batch search is a function `search(sources) -> results`: `sources` a list of source id lists, each ending
in EOS; `results` per source, its `settings.nbest` hypotheses best first, each (target ids, score), the ids
ending in EOS or cut at the maximum length (PAD after the end is allowed). `tensorflow_search(model, settings)`
is the project's beam search over a Keras model, `t2t_repro.decode.sampling.sampling_search` its sampler;
other engines (CTranslate2) provide their own.

Sentences are stripped of surrounding whitespace and encoded (with the EOS the training data ends every
source with), sorted by length and decoded in batches by beam search (`t2t_repro.decode.beam_search`),
whose results do not depend on batch composition; the outputs come back in input order and go through the
given `postprocess(decoded, source)` (a problem's, e.g. parsing puts trees onto the words). One bad line never
stops the run: an empty line gives an empty output, a line longer than `max_input_length` tokens is
truncated with a warning naming it, and a line whose encoding or postprocessing fails gets a warning and its
raw (or empty) output. Text that is not UTF-8 is refused, naming the file and line, before anything is decoded
(as datagen refuses it): its bytes would have to be guessed at.
"""

import dataclasses
import logging
import time

import numpy as np
from tqdm import tqdm

from t2t_repro import safe_write
from t2t_repro.data.parallel_files import text_lines
from t2t_repro.decode.transformer_search import compiled_search
from t2t_repro.decode_settings import DEFAULT_BATCH_TOKENS, check_batching
from t2t_repro.errors import UserError
from t2t_repro.special_tokens import EOS_ID, PAD_ID

logger = logging.getLogger(__name__)

# The longest source, in tokens with EOS, that is decoded whole (HParams.max_length of the paper's sets).
DEFAULT_MAX_INPUT_LENGTH = 256
_PREVIEW_CHARS = 40


@dataclasses.dataclass(frozen=True)
class Hypothesis:
    """One decoded output: its postprocessed text and its beam-search score (log-prob / length penalty)."""

    text: str
    score: float


def _preview(text):
    return repr(text if len(text) <= _PREVIEW_CHARS else text[:_PREVIEW_CHARS] + "...")


def read_source_lines(path):
    """The lines of a UTF-8 text file without their line ends (or a leading byte order mark); UserError naming
    the file and line for bytes that are not UTF-8, as datagen refuses them."""
    try:
        return list(text_lines(path))
    except IsADirectoryError:
        raise UserError(f"{path} is a directory, not a text file") from None
    except OSError as error:
        raise UserError(f"cannot read {path}: {error.strerror}") from None


def single_line(text):
    """Decoded text on one line, so that output files stay aligned with their inputs."""
    return " ".join(text.splitlines()) if ("\n" in text or "\r" in text) else text


def write_lines(path, lines):
    """Writes `lines` (one per line, UTF-8) to `path` through a temporary file and a rename."""
    try:
        safe_write.write_lines(path, [single_line(line) for line in lines])
    except OSError as error:
        raise UserError(f"cannot write {path}: {error.strerror}") from None


def format_nbest(results):
    """The n-best file format: for every input, one line per hypothesis, "<score>\\t<text>", best first."""
    return [f"{hypothesis.score:.6f}\t{single_line(hypothesis.text)}" for per_input in results
            for hypothesis in per_input]


def encode_line(text, vocabulary, number, consequence="output left empty"):
    """The ids of one (stripped) line, or None with a warning naming line `number` and the `consequence` when
    the vocabulary cannot encode it."""
    try:
        return list(vocabulary.encode(text))
    except Exception as error:  # noqa: BLE001 - one unencodable line must not end a long decode
        logger.warning("line %d: cannot encode (%s), %s: %s", number, error, consequence, _preview(text))
        return None


def encode_sources(texts, settings, vocabulary, consequence="output left empty"):
    """(the texts stripped, as the training data is, and their source ids ending in EOS); None for an empty or
    unencodable line. A source longer than settings.max_input_length (default DEFAULT_MAX_INPUT_LENGTH)
    tokens with EOS is truncated with a warning naming it."""
    max_input_length = settings.max_input_length or DEFAULT_MAX_INPUT_LENGTH
    # Stripped: leading or trailing spaces would otherwise become tokens.
    texts = [text.strip() for text in texts]
    encoded = []
    for number, text in enumerate(texts, 1):
        ids = encode_line(text, vocabulary, number, consequence) if text else None
        if ids is None:
            encoded.append(None)
            continue
        if len(ids) + 1 > max_input_length:
            logger.warning("line %d: %d tokens, truncated to the first %d: %s", number, len(ids) + 1,
                           max_input_length, _preview(text))
            ids = ids[: max_input_length - 1]
        encoded.append(ids + [EOS_ID])
    return texts, encoded


def _postprocess(postprocess, decoded, source, number):
    if postprocess is None:
        return decoded
    try:
        return postprocess(decoded, source)
    except Exception as error:  # noqa: BLE001 - one malformed output must not end a long decode
        logger.warning("line %d: postprocessing failed (%s), kept the raw output: %s", number, error,
                       _preview(decoded))
        return decoded


def padded_batch(sequences):
    """int32 [len(sequences), longest] of id lists, PAD after each one's end."""
    batch = np.full([len(sequences), max(len(ids) for ids in sequences)], PAD_ID, np.int32)
    for row, ids in enumerate(sequences):
        batch[row, : len(ids)] = ids
    return batch


def batch_results(ids, scores):
    """A batch search's results of ids [batch, n, length] and scores [batch, n] tensors: per source, n (target
    ids, score)."""
    ids, scores = ids.numpy(), scores.numpy()
    return [[(ids[row, k].tolist(), float(scores[row, k])) for k in range(ids.shape[1])] for row in range(len(ids))]


def length_sorted_batches(lengths, batch_size=None, batch_tokens=None):
    """The indices of the lines of these lengths (None: a line not to be decoded) in batches, longest first:
    similar lengths share a batch (little padding), and memory peaks at the start.

    A batch holds `batch_size` lines, or, by default, as many as fit a budget of `batch_tokens` padded tokens
    (lines x the batch's longest line; DEFAULT_BATCH_TOKENS when neither is given), as OpenNMT-py's
    `-batch_type tokens`: short lines go in larger batches. A line longer than the budget is a batch alone."""
    check_batching(batch_size, batch_tokens)
    if batch_size is None and batch_tokens is None:
        batch_tokens = DEFAULT_BATCH_TOKENS
    order = sorted((i for i, length in enumerate(lengths) if length is not None), key=lambda i: -lengths[i])
    batches = []
    for i in order:
        batch = batches[-1] if batches else None
        fits = batch is not None and (len(batch) < batch_size if batch_size is not None
                                      else (len(batch) + 1) * lengths[batch[0]] <= batch_tokens)
        if fits:
            batch.append(i)
        else:
            batches.append([i])
    return batches


def tensorflow_search(model, settings, jit_compile=False, drop_finished=None, constraint=None):
    """The batch search (see the module docstring) of the project's beam search over `model` (a Transformer)
    with `settings`, compiled once per model and settings (with XLA where `jit_compile`; `drop_finished` and a
    problem's output `constraint`: see `t2t_repro.decode.transformer_search.search`)."""
    search = compiled_search(model, settings, jit_compile=jit_compile, drop_finished=drop_finished,
                             constraint=constraint)

    def run(sources):
        return batch_results(*search(padded_batch(sources)))

    run.model = model  # the compiled search holds the model weakly: whoever holds the search keeps it alive
    return run


def decode_texts_nbest(texts, model, vocabularies, settings, postprocess=None, constraint=None, **options):
    """Decodes every source string with `model` by beam search (within a problem's output `constraint`);
    returns, in input order, a list of `settings.nbest` Hypothesis per input (see `search_texts_nbest` for the
    options)."""
    return search_texts_nbest(texts, tensorflow_search(model, settings, constraint=constraint), vocabularies,
                              settings, postprocess, **options)


def search_texts_nbest(texts, search, vocabularies, settings, postprocess=None, batch_size=None, batch_tokens=None,
                       progress=True):
    """Decodes every source string; returns, in input order, a list of `settings.nbest` Hypothesis per input.

    Args:
        texts: source strings.
        search: a batch search (see the module docstring), e.g. `tensorflow_search(model, settings)`.
        vocabularies: the model's `Vocabularies` (sources encoded with the source one, outputs decoded with the
            target one).
        settings: the `DecodeSettings` of the search; its max_input_length (default DEFAULT_MAX_INPUT_LENGTH)
            truncates longer sources, EOS included, with a warning.
        postprocess: `postprocess(decoded_text, source_text)`, e.g. a problem's; None keeps the decoded text.
        batch_size, batch_tokens: sentences per search batch, or padded source tokens per batch (the default,
            DEFAULT_BATCH_TOKENS); see `length_sorted_batches`.
        progress: show a tqdm progress bar and log the throughput.

    An empty line gives `nbest` empty hypotheses with score 0.0.
    """
    texts, encoded = encode_sources(texts, settings, vocabularies.source)
    target = vocabularies.target
    lengths = [None if ids is None else len(ids) for ids in encoded]
    batches = length_sorted_batches(lengths, batch_size, batch_tokens)
    nbest = settings.nbest
    results = [[Hypothesis("", 0.0)] * nbest for _ in texts]
    count = sum(map(len, batches))
    started = time.perf_counter()
    output_tokens = 0
    with tqdm(total=count, unit="sent", desc="decoding", disable=not progress) as bar:
        for indices in batches:
            for i, hypotheses in zip(indices, search([encoded[i] for i in indices])):
                output_tokens += sum(1 for token in hypotheses[0][0] if token != PAD_ID)
                results[i] = [Hypothesis(_postprocess(postprocess, target.decode(ids), texts[i], i + 1), score)
                              for ids, score in hypotheses[:nbest]]
            bar.update(len(indices))
    if progress and count:
        seconds = time.perf_counter() - started
        logger.info("decoded %d sentences in %.1f s: %.1f sentences/s, %.0f output tokens/s", count, seconds,
                    count / seconds, output_tokens / seconds)
    return results


def decode_texts(texts, model, vocabularies, settings, postprocess=None, constraint=None, **options):
    """The best postprocessed hypothesis of every source string, in input order (see `decode_texts_nbest`)."""
    results = decode_texts_nbest(texts, model, vocabularies, settings.override(nbest=1), postprocess, constraint,
                                 **options)
    return [per_input[0].text for per_input in results]


def output_lines(results, nbest):
    """The output lines of decoded inputs: the best text per input, or with nbest > 1 the `format_nbest` lines."""
    return [per_input[0].text for per_input in results] if nbest == 1 else format_nbest(results)


def decode_file(source_path, target_path, search, vocabularies, settings, postprocess=None, **options):
    """Decodes a text file line by line with a batch search (`tensorflow_search(model, settings)`, say) into
    `target_path` (written atomically); returns the line count.

    With settings.nbest 1 the output has one hypothesis per line; with nbest N it has N lines per input in the
    `format_nbest` layout, "<score>\\t<text>"."""
    sources = read_source_lines(source_path)
    results = search_texts_nbest(sources, search, vocabularies, settings, postprocess, **options)
    write_lines(target_path, output_lines(results, settings.nbest))
    return len(sources)
