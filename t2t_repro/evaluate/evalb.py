"""Labelled bracket precision, recall and F1 of parses, exactly as evalb.c (EVALB, Sekine and Collins 1997,
release 20061121) computes them, by default with COLLINS.prm (`t2t_repro.evaluate.evalb_params`).

The paper scores parsing (section 6.3, Table 4) with EVALB. What evalb.c does, and this module with it:
- sentences are compared line by line: gold sentence i with test sentence i, each read as `read_line` reads
  it (`t2t_repro.evaluate.evalb_reader`): terminals tagged with a DELETE_LABEL (COLLINS.prm: -NONE- and the
  punctuation tags , : `` '' .) are removed, and bracket spans count the words that remain;
- every other bracket is scored, its label cut at the first '-' or '=' (NP-SBJ-1 = NP), unless it spans no
  word after the deletions or its label is a DELETE_LABEL (COLLINS.prm: TOP). The Penn Treebank's
  unlabelled outer pair `( (S ...) )` is a bracket labelled "": COLLINS.prm does not delete it, so it is
  one more gold, test and (when both files have it) matched bracket per sentence;
- a test sentence with no words (a blank line: the parser failed) is a skip sentence; one whose words differ
  from the gold sentence's in number or form ("Length unmatch", "Words unmatch"), or whose brackets do not
  balance, is an error sentence. Both are counted and left out of the totals, and the evaluation goes on;
- each gold bracket, in order, matches the first unmatched test bracket with the same span and an equal
  label (EQ_LABEL pairs are equal: ADVP = PRT), so each bracket counts once per occurrence; a test bracket
  counts one crossing when any gold bracket crosses it; tags are compared word by word (EQ_LABEL too);
- figures are reported for all sentences and for those of at most CUTOFF_LEN (40) words, the length counting
  every word except DELETE_LABEL_FOR_LENGTH ones (-NONE-);
- when the files hold different numbers of sentences, the sentences both have are scored and the mismatch is
  one more error ("Number of lines unmatch");
- with MAX_ERROR set (`EvalbParameters.max_error`), evalb.c exits without a summary at the error that finds
  `Error_count++ > MAX_ERROR`, i.e. at error number MAX_ERROR + 2: so does `evaluate_lines` (a UserError).
  The default (None) never stops.
evalb.c's fixed buffers (5,000 bytes a line, 200 words or brackets a sentence) are not imposed, and any
nesting depth scores in O(n log n) per sentence.
"""

import collections
import dataclasses

from t2t_repro.errors import UserError
from t2t_repro.evaluate.crossing import count_crossing
from t2t_repro.evaluate.evalb_params import COLLINS
from t2t_repro.evaluate.evalb_reader import read_sentence
from t2t_repro.evaluate.evalb_summary import ERROR, OK, SKIP, SentenceResult, summarise

LINES_UNMATCH = "Number of lines unmatch (too many lines in {} file)"


def evalb_label(label):
    """A bracket label as evalb.c's modify_label leaves it: cut at the first '-' or '=' ("-NONE-" -> "")."""
    for index, char in enumerate(label):
        if char in "-=":
            return label[:index]
    return label


def _scored_brackets(sentence, params):
    """(start, end, label) of the brackets that are scored: not empty, label cut and not deleted."""
    kept = []
    for start, end, label in sentence.brackets:
        label = evalb_label(label)
        if start != end and not params.is_deleted_label(label):
            kept.append((start, end, label))
    return kept


def _count_matches(gold, test, params):
    """evalb.c's greedy matching: each gold bracket takes the first unmatched test bracket (in reading order)
    with its span and an equal label (any label when LABELED is 0)."""
    unmatched = collections.defaultdict(lambda: collections.defaultdict(collections.deque))
    for index, (start, end, label) in enumerate(test):
        unmatched[start, end][label if params.labeled else None].append(index)
    matched = 0
    for start, end, label in gold:
        by_label = unmatched.get((start, end))
        if not by_label:
            continue
        candidates = params.label_partners(label) if params.labeled else (None,)
        heads = [(by_label[key][0], key) for key in candidates if by_label.get(key)]
        if heads:
            by_label[min(heads)[1]].popleft()
            matched += 1
    return matched


def score_sentence(gold, test, params=COLLINS):
    """Compares two EvalbSentences (`evalb_reader.read_sentence`) as evalb.c's calc_result does."""
    problems = gold.problems + test.problems
    if not test.words:
        return SentenceResult(gold.length, SKIP, errors=problems)
    if len(gold.words) != len(test.words):
        return SentenceResult(gold.length, ERROR,
                              errors=problems + (f"Length unmatch ({len(gold.words)}|{len(test.words)})",))
    for gold_word, test_word in zip(gold.words, test.words):
        if not params.words_equal(gold_word, test_word):
            return SentenceResult(gold.length, ERROR, errors=problems + (f"Words unmatch ({gold_word}|{test_word})",))
    if problems:
        return SentenceResult(gold.length, ERROR, errors=problems)
    gold_brackets, test_brackets = _scored_brackets(gold, params), _scored_brackets(test, params)
    crossing = count_crossing([b[:2] for b in gold_brackets], [b[:2] for b in test_brackets])
    correct_tags = sum(params.labels_equal(g, t) for g, t in zip(gold.tags, test.tags))
    return SentenceResult(gold.length, OK, len(gold_brackets), len(test_brackets),
                          _count_matches(gold_brackets, test_brackets, params), crossing, len(gold.words),
                          correct_tags)


@dataclasses.dataclass(frozen=True)
class EvalbResult:
    """Per-sentence results, summaries over all sentences and over those within the length cutoff, and the
    error messages evalb.c prints on stderr, as (sentence number, message)."""

    sentences: list
    all: object  # evalb_summary.Summary
    short: object
    cutoff_length: int
    errors: tuple = ()

    def as_dict(self):
        """{"precision", "recall", "f1", "sentences", ...} over all sentences, plus the same figures for
        sentences of at most `cutoff_length` words under "len_le_<cutoff>"."""
        figures = self.all.as_dict()
        figures["cutoff_length"] = self.cutoff_length
        figures[f"len_le_{self.cutoff_length}"] = self.short.as_dict()
        return figures


class _ErrorCount:
    """evalb.c's Error(): records each message and stops as `if (Error_count++ > Max_error) exit(1)` does."""

    def __init__(self, max_error):
        self.max_error = max_error
        self.messages = []

    def add(self, number, message):
        if self.max_error is not None and len(self.messages) > self.max_error:
            raise UserError(f"sentence {number}: {message}: error {len(self.messages) + 1} with MAX_ERROR "
                            f"{self.max_error}, where evalb.c stops without a summary")
        self.messages.append((number, message))


def evaluate_lines(gold_lines, test_lines, params=COLLINS, names=("gold", "test")):
    """Scores test sentences against gold sentences, one line (str, no newline) each, in order, as evalb.c
    does on two files with those lines; `names` name the two sides in messages."""
    errors = _ErrorCount(params.max_error)
    results = []
    gold_lines, test_lines = iter(gold_lines), iter(test_lines)
    for number, gold_line in enumerate(gold_lines, start=1):
        gold = read_sentence(gold_line, params, where=f"{names[0]}, sentence {number}")
        test_line = next(test_lines, None)
        if test_line is None:
            for message in gold.problems + (LINES_UNMATCH.format(names[0]),):
                errors.add(number, message)
            break
        test = read_sentence(test_line, params, where=f"{names[1]}, sentence {number}")
        result = score_sentence(gold, test, params)
        for message in result.errors:
            errors.add(number, message)
        results.append(result)
    else:
        if next(test_lines, None) is not None:
            errors.add(len(results) + 1, LINES_UNMATCH.format(names[1]))
    short = [r for r in results if r.length <= params.cutoff_length]
    return EvalbResult(results, summarise(results), summarise(short), params.cutoff_length, tuple(errors.messages))
