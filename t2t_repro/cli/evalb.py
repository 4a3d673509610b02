"""t2t-repro-evalb: labelled bracket precision, recall and F1 of parses, as EVALB with COLLINS.prm.

    t2t-repro-evalb --gold=wsj_23.mrg --test=parses.txt [--json]

The gold file holds Penn Treebank trees (one per line, or spread over lines as in .mrg files). The test file
holds either trees in the same form or one linearised tree per line, e.g. "(S (NP NNP )NP (VP VBZ )VP . )S",
as the decoder writes them; those are de-linearised onto the gold sentence's words first (a blank line is a
sentence the parser gave nothing for).
"""

import json
import sys

from t2t_repro.cli.common import ArgumentParser, run_main

FORMATS = ("auto", "tree", "linearised")


def build_parser():
    parser = ArgumentParser(prog="t2t-repro-evalb", description=__doc__.splitlines()[0])
    parser.add_argument("--gold", required=True, help="gold trees (PTB bracketed, .mrg or one per line)")
    parser.add_argument("--test", required=True, help="test trees, or linearised trees one per line")
    parser.add_argument("--test_format", default="auto", choices=FORMATS,
                        help="auto: linearised when the file has labelled closers such as ')NP'")
    parser.add_argument("--cutoff_length", type=int, default=40, help="length limit of the second summary")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the report")
    parser.add_argument("--per_sentence", action="store_true", help="also print EVALB's per-sentence lines")
    return parser


def load_test_trees(path, gold_trees, test_format="auto"):
    """The test file's trees (None for a blank linearised line), aligned one to one with `gold_trees`."""
    from t2t_repro.data import ptb_tree
    from t2t_repro.errors import UserError

    text = ptb_tree.read_text(path)
    if test_format == "auto":
        test_format = "linearised" if ptb_tree.looks_linearised(text) else "tree"
    if test_format == "tree":
        trees = ptb_tree.parse_trees(text, source=path)
        if len(trees) != len(gold_trees):
            raise UserError(f"{path} has {len(trees)} trees but the gold file has {len(gold_trees)}")
        return trees
    lines = text.splitlines()
    if len(lines) != len(gold_trees):
        raise UserError(f"{path} has {len(lines)} lines but the gold file has {len(gold_trees)} trees")
    trees = []
    for line, gold in zip(lines, gold_trees):
        pairs = [(tag, word) for tag, word in gold.preterminals() if tag != ptb_tree.EMPTY_ELEMENT_TAG]
        words, tags = [word for _, word in pairs], [tag for tag, _ in pairs]
        trees.append(ptb_tree.delinearise(line, words, tags) if line.strip() else None)
    return trees


def _main(argv):
    args = build_parser().parse_args(argv)
    from t2t_repro.data import ptb_tree
    from t2t_repro.errors import UserError
    from t2t_repro.evaluate import evalb

    if args.cutoff_length <= 0:
        raise UserError(f"--cutoff_length={args.cutoff_length}: must be a positive integer")
    gold_trees = ptb_tree.read_trees(args.gold)
    if not gold_trees:
        raise UserError(f"{args.gold} holds no trees")
    test_trees = load_test_trees(args.test, gold_trees, args.test_format)
    result = evalb.evaluate_trees(gold_trees, test_trees, cutoff_length=args.cutoff_length)
    if args.json:
        print(json.dumps(result.as_dict(), sort_keys=True))
    else:
        print(evalb.format_report(result, per_sentence=args.per_sentence))
    return 0


def main(argv=None):
    sys.exit(run_main(_main, argv))


if __name__ == "__main__":
    main()
