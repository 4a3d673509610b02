"""Scoring given translations of a source file: each pair's log-probability under the model and the corpus
perplexity (fairseq's --score-reference and Sockeye's sockeye-score are the idea).

    results = score_text_files("newstest2014.en", "newstest2014.de", scorer, vocabularies, settings)
    lines = format_scores(results)            # "<log P>\\t<tokens>\\t<score>" per pair
    total = corpus_total(results)             # total.perplexity = exp(-sum log P / sum tokens)

Sources are read, stripped, truncated past max_input_length and encoded exactly as the decoder reads them
(`t2t_repro.decode.decode_text`), so a pair is scored against the source the decoder translated. A target is
stripped and encoded as the training data's targets are, and scored with the EOS that ends every sentence: its
token count includes it. The scored text is the model's raw output form: for a problem that post-processes
its outputs (parsing puts the words back into the trees) the post-processed text does not encode to what
the model produced.

What the scores of decoded text equal: the beam search's score of an output that ended with EOS, when the
output's text encodes back to the ids it was decoded from. Decoding and encoding again is not always the
identity: SentencePiece may segment a decoded string differently from the pieces the model chose (e.g. "a" +
"b" decoded to "ab", encoded as the one piece "ab"), and unknown pieces decode to a character that encodes to
another id. Such a text is another token sequence, and the model gives it another probability. Outputs cut at
the maximum length without EOS are scored with an EOS they did not have.

One bad line never stops the run, as in decoding: an empty source line, a line either side the vocabulary
cannot encode, or a target longer than any output of the decoder (max_input_length + extra_length tokens, or
the model's positions where it learned them) (with a warning), is not scored and gets "0.000000\\t0\\t0.000000"
(as the decoder answers an empty line with an empty output of score 0); it takes no part in the perplexity. An
empty target line is the empty sentence: EOS alone. Text that is not UTF-8 is refused, naming the file and
line; so is a file mostly in characters its side's vocabulary lacks (`check_script`: another script).
"""

import dataclasses
import logging
import math

from tqdm import tqdm

from t2t_repro.data.parallel_files import check_aligned
from t2t_repro.decode.decode_text import (
    DEFAULT_MAX_INPUT_LENGTH, encode_line, encode_sources, length_sorted_batches, read_source_lines,
)
from t2t_repro.errors import UserError
from t2t_repro.special_tokens import EOS_ID

logger = logging.getLogger(__name__)

_NOT_SCORED = "not scored"


@dataclasses.dataclass(frozen=True)
class PairScore:
    """One scored pair: log P(target | source), the target's tokens with EOS, and the beam search's score of it,
    log P / length penalty (section 6.1). An unscored pair has 0 tokens."""

    log_prob: float = 0.0
    tokens: int = 0
    score: float = 0.0


@dataclasses.dataclass(frozen=True)
class CorpusTotal:
    """The sums over the scored pairs, and the perplexity exp(-log_prob / tokens) (NaN with no tokens)."""

    pairs: int
    tokens: int
    log_prob: float

    @property
    def perplexity(self):
        return math.exp(-self.log_prob / self.tokens) if self.tokens else math.nan


def _encode_targets(texts, vocabulary, max_length, why):
    """Target ids ending in EOS for each text (stripped); None, with a warning, where the vocabulary cannot
    encode it or it has more tokens than `max_length` (`why` that limit)."""
    encoded = []
    for number, text in enumerate(texts, 1):
        ids = encode_line(text.strip(), vocabulary, number, _NOT_SCORED)
        if ids is not None and len(ids) + 1 > max_length:
            logger.warning("line %d: the target has %d tokens with EOS, more than %d (%s); %s", number,
                           len(ids) + 1, max_length, why, _NOT_SCORED)
            ids = None
        encoded.append(None if ids is None else ids + [EOS_ID])
    return encoded


def _target_limit(scorer, settings):
    """The most target tokens (EOS included) a pair is scored with, and why: the model's positions where it has
    learned ones, else the longest output the decoder could give (the longest source plus extra_length), which
    also keeps a runaway line from exhausting memory."""
    model_positions = getattr(scorer, "max_target_length", None)
    longest_output = (settings.max_input_length or DEFAULT_MAX_INPUT_LENGTH) + settings.extra_length
    if model_positions is not None and model_positions <= longest_output:
        return model_positions, "the model's positions"
    return longest_output, "the longest output the decoder gives: max_input_length + extra_length"


def score_texts(sources, targets, scorer, vocabularies, settings, batch_size=None, batch_tokens=None, progress=True,
                file_names=None):
    """Scores every (source, target) string pair with a batch scorer (`t2t_repro.decode.scoring`); returns a
    PairScore per pair, in input order.

    Args:
        sources, targets: strings, as many of each.
        scorer: a batch scorer, e.g. `tensorflow_scorer(model, settings.alpha)`; its `max_target_length`
            attribute, where it has one, is the longest target it can read (tokens with EOS).
        vocabularies: the model's `Vocabularies`.
        settings: the `DecodeSettings` whose max_input_length truncates sources as decoding does.
        batch_size, batch_tokens: pairs per batch, or padded tokens of the longer side per batch (the default,
            `length_sorted_batches`).
        progress: show a tqdm progress bar.
        file_names: (source, target) names of the files the texts were read from: each side is then checked to
            be in its vocabulary's script (`check_script`) before anything is scored.
    """
    if len(sources) != len(targets):
        raise ValueError(f"{len(sources)} sources but {len(targets)} targets")
    _, encoded_sources = encode_sources(sources, settings, vocabularies.source, _NOT_SCORED)
    encoded_targets = _encode_targets(targets, vocabularies.target, *_target_limit(scorer, settings))
    if file_names:
        for name, encoded, side in zip(file_names, (encoded_sources, encoded_targets), ("source", "target")):
            check_script(name, encoded, getattr(vocabularies, side), side)
    pairs = [None if source is None or target is None else (source, target)
             for source, target in zip(encoded_sources, encoded_targets)]
    # The longer side of a pair decides the batch it joins: similar lengths both sides pad little.
    lengths = [None if pair is None else max(map(len, pair)) for pair in pairs]
    batches = length_sorted_batches(lengths, batch_size, batch_tokens)
    results = [PairScore()] * len(pairs)
    with tqdm(total=sum(map(len, batches)), unit="pair", desc="scoring", disable=not progress) as bar:
        for indices in batches:
            scored = scorer([pairs[i][0] for i in indices], [pairs[i][1] for i in indices])
            for i, (log_prob, tokens, score) in zip(indices, scored):
                results[i] = PairScore(log_prob, tokens, score)
            bar.update(len(indices))
    return results


def score_text_files(source_path, target_path, scorer, vocabularies, settings, **options):
    """`score_texts` of two line-aligned text files (UserError naming both line counts when they differ, or a
    file written mostly in characters its side's vocabulary lacks)."""
    check_aligned(source_path, target_path)
    return score_texts(read_source_lines(source_path), read_source_lines(target_path), scorer, vocabularies,
                       settings, file_names=(source_path, target_path), **options)


# A file whose tokens are more than this share byte pieces is in a script its vocabulary never saw.
FOREIGN_SCRIPT_SHARE = 0.5


def check_script(path, encoded, vocabulary, side):
    """UserError when more than FOREIGN_SCRIPT_SHARE of the tokens of `encoded` (the id lists, None for a line
    not scored, of the lines of `path`) are byte pieces, the spelling of characters the `side` vocabulary never
    saw: a file in another language or script than the model reads there (the two files swapped, say), whose
    scores would mean nothing."""
    byte_pieces = set(getattr(vocabulary, "byte_piece_ids", lambda: ())())
    if not byte_pieces:
        return
    ids = [token for line_ids in encoded if line_ids for token in line_ids]
    share = sum(token in byte_pieces for token in ids) / max(1, len(ids))
    if share > FOREIGN_SCRIPT_SHARE:
        raise UserError(f"{path}: {share:.0%} of its tokens spell characters the model's {side} vocabulary never "
                        f"saw (byte pieces): it is not in the {side} language's script; are the source and the "
                        "file to score swapped?")


def format_scores(results):
    """One line per pair, "<log P>\\t<tokens>\\t<score>", the numbers with 6 decimals as the n-best format's."""
    return [f"{result.log_prob:.6f}\t{result.tokens}\t{result.score:.6f}" for result in results]


def corpus_total(results):
    """The CorpusTotal of the scored pairs (those with tokens) of `results`."""
    scored = [result for result in results if result.tokens]
    return CorpusTotal(len(scored), sum(r.tokens for r in scored), math.fsum(r.log_prob for r in scored))
