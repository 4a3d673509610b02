"""The paper's BLEU: sacreBLEU on detokenized text, and the tokenized BLEU that Table 2 reports.

The paper (section 6.1, Table 2) reports BLEU on tokenized text, as tensor2tensor's `get_ende_bleu` recipe
(also fairseq's `compound_split_bleu.sh`) computed it: Moses `tokenizer.perl -l de` on hypotheses and
references, then for German "compound splitting" (`rich-text` -> `rich ##AT##-##AT## text`), then the cased
`multi-bleu.perl`. That figure depends on the tokenizer and is not comparable across papers, so the
detokenized sacreBLEU score with its signature is reported beside it (Post, 2018).

    scores = corpus_bleu(hypotheses, references, lang="de")
    scores["sacrebleu"], scores["signature"], scores["tokenized_compound_split"]

Tokenized figures use sacreBLEU with `tokenize="none"` (the text is already tokenized) and
`smooth_method="none"`, which is `multi-bleu.perl`'s arithmetic: BLEU is 0 when some n-gram order has no match.
The uncased figures lowercase all of Unicode (Python's `str.lower`), where `multi-bleu.perl -lc` lowercases
ASCII only ("Über" stays apart from "über"), so on text with non-ASCII capitals ours are a little higher; the
paper's figure is cased, so this touches only the uncased extras. `UNCASED_NOTE` says so in every result.
"""

import functools
import re

from sacrebleu.metrics import BLEU
from sacrebleu.utils import smart_open
from sacremoses import MosesTokenizer

from t2t_repro.errors import UserError

# The recipe's `perl -ple 's{(\S)-(\S)}{$1 ##AT##-##AT## $2}g'`. Matches do not overlap, exactly as in Perl, so
# "a-b-c" becomes "a ##AT##-##AT## b-c": the recipe's quirk is kept so that the figures stay comparable.
_COMPOUND_HYPHEN = re.compile(r"(\S)-(\S)")

# Compound splitting belongs to the English-German recipe only.
_COMPOUND_SPLIT_LANGS = ("de",)

# How the uncased figures differ from multi-bleu.perl -lc; it goes beside them in every result and report.
UNCASED_NOTE = ("uncased = Unicode lowercasing; multi-bleu.perl -lc lowercases ASCII only (not e.g. Ü), so it "
                "can score text with non-ASCII capitals lower")


@functools.lru_cache(maxsize=None)
def _moses_tokenizer(lang):
    return MosesTokenizer(lang=lang)


def moses_tokenize(line, lang="de"):
    """Moses tokenization as `tokenizer.perl -l <lang>` with its defaults (HTML escaping, no `-a`)."""
    return _moses_tokenizer(lang).tokenize(line, escape=True, return_str=True)


def split_compounds(tokenized_line):
    """Marks the hyphens inside tokens as separate `##AT##-##AT##` tokens (the get_ende_bleu recipe)."""
    return _COMPOUND_HYPHEN.sub(r"\1 ##AT##-##AT## \2", tokenized_line)


def _score(hypotheses, references, **bleu_args):
    metric = BLEU(**bleu_args)
    return metric, metric.corpus_score(hypotheses, [references])


def _tokenized_bleu(hypotheses, references, lowercase):
    _, score = _score(hypotheses, references, tokenize="none", smooth_method="none", lowercase=lowercase,
                      force=True)
    return score.score


def corpus_bleu(hypotheses, references, lang="de"):
    """Scores detokenized `hypotheses` against one reference per line.

    Args:
        hypotheses: list of str, the system output, one detokenized sentence per item.
        references: list of str, aligned with `hypotheses`.
        lang: target language code, for the Moses tokenizer and to decide on compound splitting ("de").
    Returns:
        dict with
        - sacrebleu: float, sacreBLEU's default BLEU (13a tokenization, mixed case, exp smoothing);
        - signature: its signature string, as the `sacrebleu` command line prints it;
        - sacrebleu_text: the score line `sacrebleu -f text` prints (one decimal);
        - tokenized, tokenized_uncased: BLEU on Moses-tokenized text (the paper's tokenized BLEU, cased);
        - tokenized_compound_split, tokenized_compound_split_uncased: the same after compound splitting,
          the paper's Table 2 figure for English-German; None for other languages;
        - uncased_note: `UNCASED_NOTE`, how the uncased figures differ from multi-bleu.perl -lc;
        - lines: the number of sentence pairs.
    Raises:
        UserError: the two lists differ in length, or are empty.
    """
    hypotheses, references = list(hypotheses), list(references)
    if len(hypotheses) != len(references):
        raise UserError(f"{len(hypotheses)} hypotheses but {len(references)} references: the files must be "
                        "line-aligned")
    if not hypotheses:
        raise UserError("nothing to score: no hypotheses and no references")
    metric, score = _score(hypotheses, references)
    signature = metric.get_signature().format()
    tokenized_hyps = [moses_tokenize(line, lang) for line in hypotheses]
    tokenized_refs = [moses_tokenize(line, lang) for line in references]
    result = {
        "sacrebleu": score.score,
        "signature": signature,
        "sacrebleu_text": score.format(width=1, signature=signature),
        "tokenized": _tokenized_bleu(tokenized_hyps, tokenized_refs, lowercase=False),
        "tokenized_uncased": _tokenized_bleu(tokenized_hyps, tokenized_refs, lowercase=True),
        "tokenized_compound_split": None,
        "tokenized_compound_split_uncased": None,
        "uncased_note": UNCASED_NOTE,
        "lang": lang,
        "lines": len(hypotheses),
    }
    if lang in _COMPOUND_SPLIT_LANGS:
        split_hyps = [split_compounds(line) for line in tokenized_hyps]
        split_refs = [split_compounds(line) for line in tokenized_refs]
        result["tokenized_compound_split"] = _tokenized_bleu(split_hyps, split_refs, lowercase=False)
        result["tokenized_compound_split_uncased"] = _tokenized_bleu(split_hyps, split_refs, lowercase=True)
    return result


def read_lines(path):
    """The lines of a text file (or .gz), trailing whitespace removed, as the `sacrebleu` command reads them."""
    try:
        with smart_open(str(path)) as handle:
            return [line.rstrip() for line in handle]
    except FileNotFoundError:
        raise UserError(f"no such file: {path}") from None
    except IsADirectoryError:
        raise UserError(f"{path} is a directory, not a text file") from None
    except UnicodeDecodeError as error:
        raise UserError(f"{path} is not UTF-8 text ({error.reason} at byte {error.start})") from None


def file_bleu(translation_path, reference_path, lang="de"):
    """`corpus_bleu` of two line-aligned files: system output and reference."""
    hypotheses = read_lines(translation_path)
    references = read_lines(reference_path)
    if len(hypotheses) != len(references):
        raise UserError(f"{translation_path} has {len(hypotheses)} lines but {reference_path} has "
                        f"{len(references)}: the files must be line-aligned")
    return corpus_bleu(hypotheses, references, lang=lang)
