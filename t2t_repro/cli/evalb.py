"""t2t-repro-evalb: labelled bracket precision, recall and F1 of parses, exactly as evalb.c with COLLINS.prm.

    t2t-repro-evalb --gold=wsj_23.mrg --test=parses.txt [--json] [--param_file=COLLINS.prm]

Gives evalb.c's figures on any pair of files evalb.c reads (one tree per line; a blank test line is a skip
sentence), unlabelled outer pairs `( (S ...) )` included as the bracket evalb.c counts. The gold file may
also be in the Treebank's own layout (trees spread over lines, as in .mrg files), and the test file may hold
one linearised tree per line, e.g. "(S (NP NNP )NP (VP VBZ )VP . )S", as the decoder writes them; see
`t2t_repro.evaluate.evalb_files`. Errors evalb.c reports (length or word mismatches, unbalanced brackets,
different numbers of sentences) are printed on stderr as evalb.c prints them, and the evaluation goes on
unless --max_error says otherwise.
"""

import json
import sys

from t2t_repro.cli.common import ArgumentParser, run_main, show_info_logs
from t2t_repro.errors import UserError
from t2t_repro.evaluate import evalb, evalb_files, evalb_params, evalb_report


def build_parser():
    parser = ArgumentParser(prog="t2t-repro-evalb", description=__doc__.splitlines()[0])
    parser.add_argument("--gold", required=True, help="gold trees (PTB bracketed: one per line, or .mrg)")
    parser.add_argument("--test", required=True, help="test trees, or linearised trees one per line")
    parser.add_argument("--test_format", default="auto", choices=evalb_files.TEST_FORMATS,
                        help="auto: linearised when the file has labelled closers such as ')NP'")
    parser.add_argument("--layout", default="auto", choices=evalb_files.LAYOUTS,
                        help="lines: every line one sentence (evalb.c); treebank: trees over several lines "
                             "(.mrg); auto: treebank when a tree continues onto the next line")
    parser.add_argument("--param_file", help="an EVALB parameter file (default: COLLINS.prm's settings)")
    parser.add_argument("--cutoff_length", type=int, help="length limit of the second summary (default 40)")
    parser.add_argument("--max_error", type=int,
                        help="stop without figures at error number MAX_ERROR + 2, as evalb.c does (default: "
                             "go on; a --param_file's MAX_ERROR applies unless this is given)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the report")
    parser.add_argument("--per_sentence", action="store_true", help="also print EVALB's per-sentence lines")
    return parser


def _main(argv):
    args = build_parser().parse_args(argv)
    show_info_logs()
    params = evalb_params.read_parameter_file(args.param_file) if args.param_file else evalb_params.COLLINS
    if args.cutoff_length is not None:
        if args.cutoff_length <= 0:
            raise UserError(f"--cutoff_length={args.cutoff_length}: must be a positive integer")
        params = params.replace(cutoff_length=args.cutoff_length)
    if args.max_error is not None:
        params = params.replace(max_error=args.max_error)
    gold, test = evalb_files.load_evalb_files(args.gold, args.test, args.test_format, args.layout, params)
    result = evalb.evaluate_lines(gold, test, params, names=(args.gold, args.test))
    for line in evalb_report.format_errors(result):
        print(line, file=sys.stderr)
    if args.json:
        print(json.dumps(result.as_dict(), sort_keys=True))
    else:
        print(evalb_report.format_report(result, per_sentence=args.per_sentence))
    return 0


def main(argv=None):
    sys.exit(run_main(_main, argv))


if __name__ == "__main__":
    main()
