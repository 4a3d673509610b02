"""t2t-repro-bleu: scores a translation file against a reference file as sacreBLEU and as the paper's BLEU.

    t2t-repro-bleu --translation=newstest2014.decoded.de --reference=newstest2014.de [--lang=de] [--json]
    t2t-repro-bleu --translation=test.decoded.zh --reference=test.zh --lang=zh [--tokenize=zh]
    t2t-repro-bleu --translation=T --reference=R --metrics=bleu,chrf    # chrF2 too, as `sacrebleu -m chrf`

The first line is what `sacrebleu REFERENCE -i TRANSLATION -f text [-tok TOKENIZE]` prints (score and
signature), with sacreBLEU's tokenizer for --lang unless --tokenize names another; the
others are the tokenized BLEU of the paper's Table 2 (Moses tokenization, cased, compound splitting for German),
its uncased variants (Unicode lowercasing, unlike multi-bleu.perl -lc: the last line says so). With
--metrics=bleu,chrf (or chrf) chrF2 follows, the figure `sacrebleu REFERENCE -i TRANSLATION -m chrf` prints;
--json then nests it as "chrf" (with chrf alone, it is the whole object).
"""

import argparse
import json
import sys

from t2t_repro.cli.common import ArgumentParser, run_main


def build_parser():
    parser = ArgumentParser(prog="t2t-repro-bleu", description=__doc__.splitlines()[0])
    parser.add_argument("--translation", required=True, help="system output, one detokenized sentence per line")
    parser.add_argument("--reference", required=True, help="reference translations, line-aligned")
    parser.add_argument("--lang", default="de", help="target language code (Moses tokenizer; de: compound split)")
    parser.add_argument("--tokenize", default=None,
                        help="sacreBLEU's tokenizer: 13a, intl, char, none, zh, ja-mecab, ko-mecab, flores200... "
                             "(default: zh for zh, ja-mecab for ja, ko-mecab for ko, else 13a)")
    parser.add_argument("--metrics", default="bleu", type=_metrics,
                        help="comma-separated: bleu (sacreBLEU and the paper's tokenized BLEU), chrf (sacreBLEU's "
                             "chrF2, as `sacrebleu -m chrf`); default bleu")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    return parser


METRICS = ("bleu", "chrf")


def _metrics(text):
    names = [name.strip() for name in text.split(",")]
    unknown = [name for name in names if name not in METRICS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"{', '.join(unknown) or 'nothing'}: give {' and/or '.join(METRICS)}, "
                                         "comma-separated")
    return [name for name in METRICS if name in names]


def format_report(scores):
    """The human-readable report: the sacreBLEU line, the tokenized figures, then how uncased ones lowercase."""
    lines = [scores["sacrebleu_text"]]
    rows = [
        ("tokenized BLEU (Moses, cased)", scores["tokenized"]),
        ("tokenized BLEU (Moses, uncased, Unicode*)", scores["tokenized_uncased"]),
    ]
    if scores["tokenized_compound_split"] is not None:
        rows += [
            ("tokenized BLEU, compound split (paper, cased)", scores["tokenized_compound_split"]),
            ("tokenized BLEU, compound split (uncased, Unicode*)", scores["tokenized_compound_split_uncased"]),
        ]
    width = max(len(name) for name, _ in rows)
    lines += [f"{name.ljust(width)} = {value:.2f}" for name, value in rows]
    return "\n".join([*lines, f"* {scores['uncased_note']}"])


def _main(argv):
    args = build_parser().parse_args(argv)
    from t2t_repro.evaluate.bleu import file_bleu, read_aligned
    from t2t_repro.evaluate.chrf import corpus_chrf

    bleu = chrf = None
    if "bleu" in args.metrics:
        bleu = file_bleu(args.translation, args.reference, lang=args.lang, tokenize=args.tokenize)
    if "chrf" in args.metrics:
        chrf = corpus_chrf(*read_aligned(args.translation, args.reference))
    if args.json:
        print(json.dumps(chrf if bleu is None else dict(bleu, **({"chrf": chrf} if chrf else {})), sort_keys=True))
    else:
        print("\n".join(([format_report(bleu)] if bleu else []) + ([chrf["text"]] if chrf else [])))
    return 0


def main(argv=None):
    sys.exit(run_main(_main, argv))


if __name__ == "__main__":
    main()
