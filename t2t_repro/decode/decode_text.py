"""Decoding lists of source strings and text files with a trained model, in input order.

    hypotheses = decode_texts(sources, model, vocabulary, problem)            # list[str], postprocessed
    nbest = decode_texts_nbest(sources, model, vocabulary, problem, nbest=4)  # list[list[Hypothesis]]

Sentences are stripped of surrounding whitespace and encoded (with the EOS the training data ends every
source with), sorted by length and decoded in batches by beam search (`t2t_repro.decode.beam_search`),
whose results do not depend on batch composition; the outputs come back in input order and go through `problem.postprocess`. One bad line never
stops the run: an empty line gives an empty output, a line longer than `max_input_length` tokens is
truncated with a warning naming it, invalid UTF-8 in a file is replaced with a warning, and a line whose
encoding or postprocessing fails gets a warning and its raw (or empty) output.
"""

import dataclasses
import logging
import os
import time

import numpy as np
from tqdm import tqdm

from t2t_repro.decode.beam_search import compiled_search
from t2t_repro.errors import UserError
from t2t_repro.special_tokens import EOS_ID, PAD_ID

logger = logging.getLogger(__name__)

# The longest source, in tokens with EOS, that is decoded whole (HParams.max_length of the paper's sets).
DEFAULT_MAX_INPUT_LENGTH = 256
DEFAULT_BATCH_SIZE = 32
_PREVIEW_CHARS = 40


@dataclasses.dataclass(frozen=True)
class Hypothesis:
    """One decoded output: its postprocessed text and its beam-search score (log-prob / length penalty)."""

    text: str
    score: float


def _preview(text):
    return repr(text if len(text) <= _PREVIEW_CHARS else text[:_PREVIEW_CHARS] + "...")


def read_source_lines(path):
    """The lines of a UTF-8 text file without their line ends; invalid bytes become U+FFFD with a warning."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as error:
        raise UserError(f"cannot read {path}: {error.strerror}") from None
    raw_lines = data.split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()  # the final newline ends the last line, it does not start another
    lines = []
    for number, raw in enumerate(raw_lines, 1):
        raw = raw[:-1] if raw.endswith(b"\r") else raw
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError as error:
            text = raw.decode("utf-8", errors="replace")
            logger.warning("%s line %d: invalid UTF-8 (%s), replaced with U+FFFD: %s", path, number, error.reason,
                           _preview(text))
            lines.append(text)
    return lines


def _single_line(text):
    """Decoded text on one line, so that output files stay aligned with their inputs."""
    return " ".join(text.splitlines()) if ("\n" in text or "\r" in text) else text


def write_lines_atomic(path, lines):
    """Writes `lines` (one per line, UTF-8) to `path` through a temporary file and a rename."""
    temporary = f"{path}.tmp-{os.getpid()}"
    try:
        with open(temporary, "w", encoding="utf-8") as f:
            for line in lines:
                f.write(_single_line(line) + "\n")
        os.replace(temporary, path)
    except OSError as error:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise UserError(f"cannot write {path}: {error.strerror}") from None


def format_nbest(results):
    """The n-best file format: for every input, one line per hypothesis, "<score>\\t<text>", best first."""
    return [f"{hypothesis.score:.6f}\t{_single_line(hypothesis.text)}" for per_input in results
            for hypothesis in per_input]


def _encode_sources(texts, vocabulary, max_input_length):
    """Source ids ending in EOS for each (already stripped) text; None for an empty (or unencodable) line."""
    encoded = []
    for number, text in enumerate(texts, 1):
        if not text:
            encoded.append(None)
            continue
        try:
            ids = list(vocabulary.encode(text))
        except Exception as error:  # noqa: BLE001 - one unencodable line must not end a long decode
            logger.warning("line %d: cannot encode (%s), output left empty: %s", number, error, _preview(text))
            encoded.append(None)
            continue
        if len(ids) + 1 > max_input_length:
            logger.warning("line %d: %d tokens, truncated to the first %d: %s", number, len(ids) + 1,
                           max_input_length, _preview(text))
            ids = ids[: max_input_length - 1]
        encoded.append(ids + [EOS_ID])
    return encoded


def _postprocess(problem, decoded, source, number):
    try:
        return problem.postprocess(decoded, source)
    except Exception as error:  # noqa: BLE001 - one malformed output must not end a long decode
        logger.warning("line %d: postprocessing failed (%s), kept the raw output: %s", number, error,
                       _preview(decoded))
        return decoded


def decode_texts_nbest(
    texts,
    model,
    vocabulary,
    problem,
    nbest=1,
    beam_size=None,
    alpha=None,
    extra_length=None,
    batch_size=DEFAULT_BATCH_SIZE,
    max_input_length=DEFAULT_MAX_INPUT_LENGTH,
    progress=True,
):
    """Decodes every source string; returns, in input order, a list of `nbest` Hypothesis per input.

    Args:
        texts: source strings.
        model: a trained `Transformer`; vocabulary: its `Vocabulary`; problem: its `Problem`.
        nbest: hypotheses per input, best first (at most the beam size).
        beam_size, alpha, extra_length: beam search settings; None takes `problem.decode_defaults`.
        batch_size: sentences per beam-search batch.
        max_input_length: sources longer than this many tokens (EOS included) are truncated with a warning.
        progress: show a tqdm progress bar and log the throughput.

    An empty line gives `nbest` empty hypotheses with score 0.0.
    """
    defaults = problem.decode_defaults
    beam_size = defaults.beam_size if beam_size is None else beam_size
    alpha = defaults.alpha if alpha is None else alpha
    extra_length = defaults.extra_length if extra_length is None else extra_length
    if batch_size < 1:
        raise UserError(f"batch_size={batch_size}: must be at least 1")
    if max_input_length < 2:
        raise UserError(f"max_input_length={max_input_length}: must be at least 2 (one token and EOS)")
    if beam_size < 1 or not 1 <= nbest <= beam_size:
        raise UserError(f"beam_size={beam_size}, nbest={nbest}: need 1 <= nbest <= beam_size")
    if alpha < 0 or extra_length < 0:
        raise UserError(f"alpha={alpha}, extra_length={extra_length}: must not be negative")
    search = compiled_search(model, beam_size, alpha, extra_length, nbest)

    # Stripped, as the training data is (leading or trailing spaces would otherwise become tokens).
    texts = [text.strip() for text in texts]
    encoded = _encode_sources(texts, vocabulary, max_input_length)
    results = [[Hypothesis("", 0.0)] * nbest for _ in texts]
    # Longest first: similar lengths share a batch (little padding), and memory peaks at the start.
    order = sorted((i for i, ids in enumerate(encoded) if ids is not None), key=lambda i: -len(encoded[i]))
    started = time.perf_counter()
    output_tokens = 0
    with tqdm(total=len(order), unit="sent", desc="decoding", disable=not progress) as bar:
        for start in range(0, len(order), batch_size):
            indices = order[start : start + batch_size]
            batch = np.full([len(indices), max(len(encoded[i]) for i in indices)], PAD_ID, np.int32)
            for row, i in enumerate(indices):
                batch[row, : len(encoded[i])] = encoded[i]
            ids, scores = search(batch)
            ids, scores = ids.numpy(), scores.numpy()
            for row, i in enumerate(indices):
                output_tokens += int(np.count_nonzero(ids[row, 0]))
                results[i] = [
                    Hypothesis(_postprocess(problem, vocabulary.decode(ids[row, k].tolist()), texts[i], i + 1),
                               float(scores[row, k]))
                    for k in range(nbest)
                ]
            bar.update(len(indices))
    if progress and order:
        seconds = time.perf_counter() - started
        logger.info("decoded %d sentences in %.1f s: %.1f sentences/s, %.0f output tokens/s", len(order), seconds,
                    len(order) / seconds, output_tokens / seconds)
    return results


def decode_texts(texts, model, vocabulary, problem, **settings):
    """The best postprocessed hypothesis of every source string, in input order (see `decode_texts_nbest`)."""
    return [per_input[0].text for per_input in decode_texts_nbest(texts, model, vocabulary, problem, **settings)]


def decode_file(source_path, target_path, model, vocabulary, problem, nbest=1, **settings):
    """Decodes a text file line by line into `target_path` (written atomically); returns the line count.

    With nbest 1 the output has one hypothesis per line; with nbest N it has N lines per input in the
    `format_nbest` layout, "<score>\\t<text>"."""
    sources = read_source_lines(source_path)
    results = decode_texts_nbest(sources, model, vocabulary, problem, nbest=nbest, **settings)
    lines = [per_input[0].text for per_input in results] if nbest == 1 else format_nbest(results)
    write_lines_atomic(target_path, lines)
    return len(sources)
