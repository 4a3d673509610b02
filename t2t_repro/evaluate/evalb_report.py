"""EVALB's text report, in evalb.c's layout: the per-sentence table (print_head, individual_result), the
totals line and the summaries for all sentences and for those within the length cutoff (print_total), and
the error lines evalb.c writes on stderr ("<sentence> : <message>")."""

from t2t_repro.evaluate.evalb_summary import STATUS_CODES

_RULE = "=" * 76


def _sentence_row(number, r):
    accuracy = 100.0 * r.correct_tags / r.words if r.words else 0.0
    return (f"{number:4d}  {r.length:3d}    {STATUS_CODES[r.status]}  {r.recall:6.2f} {r.precision:6.2f}   "
            f"{r.matched:3d}    {r.gold_brackets:3d}  {r.test_brackets:3d}    {r.crossing:3d}   "
            f"{r.words:4d}  {r.correct_tags:4d}   {accuracy:6.2f}")


def _totals_row(summary):
    row = ""
    if summary.gold_brackets > 0 and summary.test_brackets > 0:
        row = (f"                {summary.recall:6.2f} {summary.precision:6.2f} {summary.matched_brackets:6d} "
               f"{summary.gold_brackets:5d} {summary.test_brackets:5d}  {summary.crossing:5d}")
    figures = summary.as_dict()
    return row + f"  {summary.words:5d} {summary.correct_tags:5d}   {figures['tagging_accuracy']:6.2f}"


def _summary_block(title, summary):
    figures = summary.as_dict()
    return [
        "",
        f"-- {title} --",
        f"Number of sentence        = {summary.sentences:6d}",
        f"Number of Error sentence  = {summary.error_sentences:6d}",
        f"Number of Skip  sentence  = {summary.skip_sentences:6d}",
        f"Number of Valid sentence  = {summary.valid_sentences:6d}",
        f"Bracketing Recall         = {summary.recall:6.2f}",
        f"Bracketing Precision      = {summary.precision:6.2f}",
        f"Bracketing FMeasure       = {summary.f1:6.2f}",
        f"Complete match            = {figures['complete_match']:6.2f}",
        f"Average crossing          = {figures['average_crossing']:6.2f}",
        f"No crossing               = {figures['no_crossing']:6.2f}",
        f"2 or less crossing        = {figures['two_or_less_crossing']:6.2f}",
        f"Tagging accuracy          = {figures['tagging_accuracy']:6.2f}",
    ]


def format_report(result, per_sentence=False):
    """An EvalbResult as evalb.c prints it; without `per_sentence`, only the summaries."""
    lines = []
    if per_sentence:
        lines += ["  Sent.                        Matched  Bracket   Cross        Correct Tag",
                  " ID  Len.  Stat. Recal  Prec.  Bracket gold test Bracket Words  Tags Accracy", _RULE]
        lines += [_sentence_row(number, r) for number, r in enumerate(result.sentences, start=1)]
        lines += [_RULE, _totals_row(result.all)]
    lines.append("=== Summary ===")
    lines += _summary_block("All", result.all)
    lines += _summary_block(f"len<={result.cutoff_length}", result.short)
    return "\n".join(lines)


def format_errors(result):
    """evalb.c's stderr lines for the result's errors, e.g. "12 : Length unmatch (24|23)"."""
    return [f"{number} : {message}" for number, message in result.errors]
