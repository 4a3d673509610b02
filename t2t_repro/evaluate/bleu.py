"""The paper's BLEU: sacreBLEU on detokenized text, and the tokenized BLEU that Table 2 reports.

The paper (section 6.1, Table 2) reports BLEU on tokenized text, as tensor2tensor's `get_ende_bleu` recipe
(also fairseq's `compound_split_bleu.sh`) computed it: Moses `tokenizer.perl -l de` on hypotheses and
references, then for German "compound splitting" (`rich-text` -> `rich ##AT##-##AT## text`), then the cased
`multi-bleu.perl`. That figure depends on the tokenizer and is not comparable across papers, so the
detokenized sacreBLEU score with its signature is reported beside it (Post, 2018).

    scores = corpus_bleu(hypotheses, references, lang="de")
    scores["sacrebleu"], scores["signature"], scores["tokenized_compound_split"]

The detokenized score tokenizes with what suits the target language, as sacreBLEU itself does for its test
sets: 13a (the tokenizer of WMT's mteval-v13a.pl) splits at spaces and punctuation, which Chinese and Japanese
do not put between words (nor Korean inside its space-separated phrases), so a BLEU into those languages
computed with it matches phrase-long "words". `check_tokenizer` names the choice and
fails early (before hours of training) where the tokenizer cannot run, e.g. ja-mecab without its extras.
The paper's tokenized figures keep the Moses tokenizer for any language: sacremoses, like `tokenizer.perl -l xx`,
falls back to English abbreviations for a code it has no data for; for zh/ja/ko it keeps runs of CJK characters
together, so there the tokenized figures mean little and the sacreBLEU figure is the one to read.

Tokenized figures use sacreBLEU with `tokenize="none"` (the text is already tokenized) and
`smooth_method="none"`, which is `multi-bleu.perl`'s arithmetic: BLEU is 0 when some n-gram order has no match.
The uncased figures lowercase all of Unicode (Python's `str.lower`), where `multi-bleu.perl -lc` lowercases
ASCII only ("Über" stays apart from "über"), so on text with non-ASCII capitals ours are a little higher; the
paper's figure is cased, so this touches only the uncased extras. `UNCASED_NOTE` says so in every result.
"""

import functools
import re

import sacrebleu
from sacrebleu.metrics import BLEU
from sacrebleu.utils import smart_open
from sacremoses import MosesTokenizer

from t2t_repro.errors import UserError, first_line

# The recipe's `perl -ple 's{(\S)-(\S)}{$1 ##AT##-##AT## $2}g'`. Matches do not overlap, exactly as in Perl, so
# "a-b-c" becomes "a ##AT##-##AT## b-c": the recipe's quirk is kept so that the figures stay comparable.
_COMPOUND_HYPHEN = re.compile(r"(\S)-(\S)")

# Compound splitting belongs to the English-German recipe only.
_COMPOUND_SPLIT_LANGS = ("de",)

# How the uncased figures differ from multi-bleu.perl -lc; it goes beside them in every result and report.
UNCASED_NOTE = ("uncased = Unicode lowercasing; multi-bleu.perl -lc lowercases ASCII only (not e.g. Ü), so it "
                "can score text with non-ASCII capitals lower")


# sacreBLEU's tokenizer per target language where 13a does not suit it (sacreBLEU's own choice for its test
# sets, `BLEU(trg_lang=...)`); every other language gets sacreBLEU's default, 13a.
_TOKENIZER_FOR_LANG = {"zh": "zh", "ja": "ja-mecab", "ko": "ko-mecab"}


@functools.lru_cache(maxsize=None)
def _moses_tokenizer(lang):
    return MosesTokenizer(lang=lang)


def moses_tokenize(line, lang="de"):
    """Moses tokenization as `tokenizer.perl -l <lang>` with its defaults (HTML escaping, no `-a`)."""
    return _moses_tokenizer(lang).tokenize(line, escape=True, return_str=True)


def split_compounds(tokenized_line):
    """Marks the hyphens inside tokens as separate `##AT##-##AT##` tokens (the get_ende_bleu recipe)."""
    return _COMPOUND_HYPHEN.sub(r"\1 ##AT##-##AT## \2", tokenized_line)


def default_tokenizer(lang):
    """sacreBLEU's tokenizer for text in `lang`: zh, ja-mecab, ko-mecab for Chinese, Japanese, Korean, else 13a.
    The language is the code's primary subtag, so "zh-TW" and "ja_JP" count as Chinese and Japanese."""
    return _TOKENIZER_FOR_LANG.get(re.split(r"[-_]", lang, maxsplit=1)[0].lower(), BLEU.TOKENIZER_DEFAULT)


def _why_it_cannot_run(error):
    """What the exception sacreBLEU raised when a tokenizer could not start says, in a few words: the
    `pip install ...` it advises (names with extras quoted, so that shells leave `sacrebleu[ja]` alone), a
    model it could not download, else its first line."""
    if isinstance(error, (OSError, SystemExit)):
        reason = "an SSL error" if isinstance(error, SystemExit) else getattr(error, "reason", error)
        return (f"cannot get its model (sacreBLEU downloads it into $SACREBLEU or ~/.sacrebleu on first use): "
                f"{first_line(reason)}")
    for line in str(error).splitlines():
        if line.strip().startswith("pip install "):
            names = (f'"{name}"' if "[" in name else name for name in line.split()[2:])
            return "needs packages that are not installed: pip install " + " ".join(names)
    return f"cannot run: {first_line(error)}"


def _sacrebleu_metric(lang, tokenize):
    """(sacreBLEU's BLEU with the tokenizer `tokenize`, or the one for `lang`; the tokenizer's name).

    sacreBLEU builds the tokenizer when the metric is made, which is where a missing optional package or an
    unreachable model shows: ja-mecab and ko-mecab raise RuntimeError without their extras (AssertionError with
    another MeCab dictionary), the SentencePiece ones (spm, flores101, flores200...) ImportError without
    sentencepiece and OSError (SystemExit on an SSL error) where they cannot download their model on first use.
    Each becomes a one-line UserError that says what to do.
    """
    name = default_tokenizer(lang) if tokenize is None else tokenize
    if name not in BLEU.TOKENIZERS:
        raise UserError(f"unknown BLEU tokenizer {name!r}: sacreBLEU {sacrebleu.__version__} has "
                        f"{', '.join(BLEU.TOKENIZERS)}")
    try:
        return BLEU(tokenize=name), name
    except (ImportError, RuntimeError, AssertionError, OSError, SystemExit) as error:
        chosen = "" if tokenize is not None else f" (sacreBLEU's for lang {lang!r})"
        raise UserError(f"BLEU tokenizer {name!r}{chosen} {_why_it_cannot_run(error)} "
                        "(or choose another tokenizer)") from None


def check_tokenizer(lang, tokenize=None):
    """The name of the sacreBLEU tokenizer that `corpus_bleu(..., lang, tokenize)` uses: `tokenize` if given,
    else `default_tokenizer(lang)`.

    Builds it once, so that what would make scoring fail (an unknown name, a missing optional package such as
    ja-mecab's `sacrebleu[ja]`, a model that cannot be downloaded) is found before training rather than at its
    first evaluation.

    Raises:
        UserError: `tokenize` is not one of sacreBLEU's tokenizers (the message lists them), or the tokenizer
            cannot run here (the message says what to install or why).
    """
    return _sacrebleu_metric(lang, tokenize)[1]


def _tokenized_bleu(hypotheses, references, lowercase):
    metric = BLEU(tokenize="none", smooth_method="none", lowercase=lowercase, force=True)
    return metric.corpus_score(hypotheses, [references]).score


def corpus_bleu(hypotheses, references, lang="de", tokenize=None):
    """Scores detokenized `hypotheses` against one reference per line.

    Args:
        hypotheses: list of str, the system output, one detokenized sentence per item.
        references: list of str, aligned with `hypotheses`.
        lang: target language code (any), for sacreBLEU's default tokenizer, the Moses tokenizer and to decide
            on compound splitting ("de").
        tokenize: sacreBLEU's tokenizer for the detokenized score ("13a", "intl", "char", "zh", "ja-mecab"...);
            None: the one that suits `lang` (`default_tokenizer`).
    Returns:
        dict with
        - sacrebleu: float, sacreBLEU's BLEU (mixed case, exp smoothing) with the tokenizer `tokenize`;
        - tokenize: the name of that tokenizer;
        - signature: its signature string, as the `sacrebleu` command line prints it (it names the tokenizer);
        - sacrebleu_text: the score line `sacrebleu -f text` prints (one decimal);
        - tokenized, tokenized_uncased: BLEU on Moses-tokenized text (the paper's tokenized BLEU, cased);
        - tokenized_compound_split, tokenized_compound_split_uncased: the same after compound splitting,
          the paper's Table 2 figure for English-German; None for other languages;
        - uncased_note: `UNCASED_NOTE`, how the uncased figures differ from multi-bleu.perl -lc;
        - lines: the number of sentence pairs.
    Raises:
        UserError: the two lists differ in length, or are empty; the tokenizer is unknown or cannot run
            (`check_tokenizer`).
    """
    hypotheses, references = list(hypotheses), list(references)
    if len(hypotheses) != len(references):
        raise UserError(f"{len(hypotheses)} hypotheses but {len(references)} references: the files must be "
                        "line-aligned")
    if not hypotheses:
        raise UserError("nothing to score: no hypotheses and no references")
    metric, tokenize = _sacrebleu_metric(lang, tokenize)
    score = metric.corpus_score(hypotheses, [references])
    signature = metric.get_signature().format()
    tokenized_hyps = [moses_tokenize(line, lang) for line in hypotheses]
    tokenized_refs = [moses_tokenize(line, lang) for line in references]
    result = {
        "sacrebleu": score.score,
        "tokenize": tokenize,
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


def file_bleu(translation_path, reference_path, lang="de", tokenize=None):
    """`corpus_bleu` of two line-aligned files: system output and reference. The tokenizer is checked before
    the files are read, so that a wrong name does not wait for large files."""
    check_tokenizer(lang, tokenize)
    return corpus_bleu(*read_aligned(translation_path, reference_path), lang=lang, tokenize=tokenize)


def read_aligned(translation_path, reference_path):
    """(hypotheses, references): the lines of two files (`read_lines`); UserError when their counts differ."""
    hypotheses = read_lines(translation_path)
    references = read_lines(reference_path)
    if len(hypotheses) != len(references):
        raise UserError(f"{translation_path} has {len(hypotheses)} lines but {reference_path} has "
                        f"{len(references)}: the files must be line-aligned")
    return hypotheses, references
