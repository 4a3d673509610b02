"""Labelled bracket precision, recall and F1 of parse trees, as EVALB computes them with COLLINS.prm.

The paper scores parsing (section 6.3, Table 4) with EVALB. Its COLLINS.prm conventions, followed here:
- words tagged with a punctuation tag (`` '' . : ,) or -NONE- are removed from each tree before brackets are
  read, so spans are counted over the remaining words and a constituent left empty is not scored;
- the root (a TOP node, or the unlabelled outer wrapper of .mrg trees) is not scored;
- labels are compared without function tags or indices (NP-SBJ-1 = NP), and ADVP and PRT count as equal;
- preterminals (part-of-speech tags) are not brackets; each bracket counts once per occurrence;
- a sentence whose test tree has a different number of words from the gold tree (after the deletions above),
  or different words, is an error sentence; one whose test tree is empty or missing is a skip sentence. Both
  are left out of the bracket totals and counted, as EVALB does; nothing stops the evaluation;
- figures are reported for all sentences and for sentences of at most `cutoff_length` (40) words, the length
  counting every word except -NONE- elements.
Percentages are on a 0-100 scale, like EVALB's report.
"""

import collections
import dataclasses

from t2t_repro.data.ptb_tree import LEAF, OPEN, walk

DELETED_TAGS = frozenset({"-NONE-", ",", ":", "``", "''", "."})
DELETED_TAGS_FOR_LENGTH = frozenset({"-NONE-"})
DELETED_LABELS = frozenset({"TOP", ""})
EQUIVALENT_LABELS = {"PRT": "ADVP"}
DEFAULT_CUTOFF_LENGTH = 40

OK, ERROR, SKIP = "ok", "error", "skip"


def evalb_label(label):
    """A bracket label as EVALB compares it: cut at the first '-' or '=', then ADVP/PRT merged."""
    for index, char in enumerate(label):
        if char in "-=":
            label = label[:index]
            break
    return EQUIVALENT_LABELS.get(label, label)


@dataclasses.dataclass(frozen=True)
class _Analysed:
    words: list
    tags: list
    brackets: list  # (start, end, label) with end exclusive, over the words that remain after deletion
    length: int  # words except -NONE-: the length that the cutoff reads


def _analyse(tree):
    words, tags, brackets, starts = [], [], [], []
    length = 0
    for event, node in walk(tree):
        if event == OPEN:
            starts.append(len(words))
        elif event == LEAF:
            if node.label not in DELETED_TAGS_FOR_LENGTH:
                length += 1
            if node.label not in DELETED_TAGS:
                words.append(node.children[0])
                tags.append(node.label)
        else:
            start = starts.pop()
            label = evalb_label(node.label)
            if start < len(words) and label not in DELETED_LABELS:
                brackets.append((start, len(words), label))
    return _Analysed(words, tags, brackets, length)


@dataclasses.dataclass(frozen=True)
class SentenceResult:
    """One sentence's figures. `status` is "ok", "error" (length or word mismatch) or "skip" (no test tree)."""

    length: int
    status: str
    gold_brackets: int = 0
    test_brackets: int = 0
    matched: int = 0
    crossing: int = 0
    words: int = 0
    correct_tags: int = 0
    message: str = ""

    @property
    def recall(self):
        return 100.0 * self.matched / self.gold_brackets if self.gold_brackets else 0.0

    @property
    def precision(self):
        return 100.0 * self.matched / self.test_brackets if self.test_brackets else 0.0

    @property
    def f1(self):
        return _f1(self.precision, self.recall)


def _f1(precision, recall):
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def _crosses(a, b):
    return a[0] < b[0] < a[1] < b[1] or b[0] < a[0] < b[1] < a[1]


def score_sentence(gold_tree, test_tree):
    """Compares one test tree (a Tree, or None when the parser gave nothing) with its gold tree."""
    gold = _analyse(gold_tree)
    test = _analyse(test_tree) if test_tree is not None else None
    if test is None or not test.words:
        return SentenceResult(gold.length, SKIP, message="empty test tree")
    if len(gold.words) != len(test.words):
        return SentenceResult(gold.length, ERROR, message=f"length unmatch ({len(gold.words)}|{len(test.words)})")
    for gold_word, test_word in zip(gold.words, test.words):
        if gold_word != test_word:
            return SentenceResult(gold.length, ERROR, message=f"words unmatch ({gold_word}|{test_word})")
    gold_counts = collections.Counter(gold.brackets)
    test_counts = collections.Counter(test.brackets)
    matched = sum(min(count, test_counts[bracket]) for bracket, count in gold_counts.items())
    crossing = sum(1 for t in test.brackets if any(_crosses(g, t) for g in gold.brackets))
    same_tag = [EQUIVALENT_LABELS.get(g, g) == EQUIVALENT_LABELS.get(t, t) for g, t in zip(gold.tags, test.tags)]
    correct_tags = sum(same_tag)
    return SentenceResult(gold.length, OK, len(gold.brackets), len(test.brackets), matched, crossing,
                          len(gold.words), correct_tags)


@dataclasses.dataclass(frozen=True)
class Summary:
    """Corpus figures over a set of sentences, as EVALB's summary block."""

    sentences: int
    error_sentences: int
    skip_sentences: int
    gold_brackets: int
    test_brackets: int
    matched_brackets: int
    complete_match_sentences: int
    crossing: int
    no_crossing_sentences: int
    two_or_less_crossing_sentences: int
    words: int
    correct_tags: int

    @property
    def valid_sentences(self):
        return self.sentences - self.error_sentences - self.skip_sentences

    @property
    def recall(self):
        return 100.0 * self.matched_brackets / self.gold_brackets if self.gold_brackets else 0.0

    @property
    def precision(self):
        return 100.0 * self.matched_brackets / self.test_brackets if self.test_brackets else 0.0

    @property
    def f1(self):
        return _f1(self.precision, self.recall)

    def _rate(self, count):
        return 100.0 * count / self.valid_sentences if self.valid_sentences else 0.0

    def as_dict(self):
        valid = self.valid_sentences
        return {
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "sentences": self.sentences,
            "valid_sentences": valid,
            "error_sentences": self.error_sentences,
            "skip_sentences": self.skip_sentences,
            "matched_brackets": self.matched_brackets,
            "gold_brackets": self.gold_brackets,
            "test_brackets": self.test_brackets,
            "complete_match": self._rate(self.complete_match_sentences),
            "average_crossing": self.crossing / valid if valid else 0.0,
            "no_crossing": self._rate(self.no_crossing_sentences),
            "two_or_less_crossing": self._rate(self.two_or_less_crossing_sentences),
            "tagging_accuracy": 100.0 * self.correct_tags / self.words if self.words else 0.0,
        }


def summarise(results):
    """Adds sentence results up into a Summary."""
    valid = [r for r in results if r.status == OK]
    return Summary(
        sentences=len(results),
        error_sentences=sum(r.status == ERROR for r in results),
        skip_sentences=sum(r.status == SKIP for r in results),
        gold_brackets=sum(r.gold_brackets for r in valid),
        test_brackets=sum(r.test_brackets for r in valid),
        matched_brackets=sum(r.matched for r in valid),
        complete_match_sentences=sum(r.gold_brackets == r.test_brackets == r.matched for r in valid),
        crossing=sum(r.crossing for r in valid),
        no_crossing_sentences=sum(r.crossing == 0 for r in valid),
        two_or_less_crossing_sentences=sum(r.crossing <= 2 for r in valid),
        words=sum(r.words for r in valid),
        correct_tags=sum(r.correct_tags for r in valid),
    )


@dataclasses.dataclass(frozen=True)
class EvalbResult:
    """Per-sentence results, and summaries over all sentences and over those within the length cutoff."""

    sentences: list
    all: Summary
    short: Summary
    cutoff_length: int

    def as_dict(self):
        """{"precision", "recall", "f1", "sentences", ...} over all sentences, plus the same figures for
        sentences of at most `cutoff_length` words under "len_le_<cutoff>"."""
        figures = self.all.as_dict()
        figures["cutoff_length"] = self.cutoff_length
        figures[f"len_le_{self.cutoff_length}"] = self.short.as_dict()
        return figures


def evaluate_trees(gold_trees, test_trees, cutoff_length=DEFAULT_CUTOFF_LENGTH):
    """Scores test trees (Tree or None each) against gold trees, sentence by sentence, in order."""
    gold_trees, test_trees = list(gold_trees), list(test_trees)
    if len(gold_trees) != len(test_trees):
        raise ValueError(f"{len(gold_trees)} gold trees but {len(test_trees)} test trees")
    results = [score_sentence(gold, test) for gold, test in zip(gold_trees, test_trees)]
    return EvalbResult(results, summarise(results), summarise([r for r in results if r.length <= cutoff_length]),
                       cutoff_length)


def format_report(result, per_sentence=False):
    """A text report in EVALB's layout: the summary for all and for short sentences, after one line per
    sentence (status 0 ok, 1 error, 2 skip) when `per_sentence`."""
    lines = []
    if per_sentence:
        lines += [
            "  Sent.                        Matched  Bracket   Cross        Correct Tag",
            " ID  Len.  Stat. Recal  Prec.  Bracket gold test Bracket Words  Tags Accracy",
            "=" * 76,
        ]
    status_code = {OK: 0, ERROR: 1, SKIP: 2}
    for number, r in enumerate(result.sentences if per_sentence else [], start=1):
        accuracy = 100.0 * r.correct_tags / r.words if r.words else 0.0
        lines.append(f"{number:4d}  {r.length:3d}    {status_code[r.status]}  {r.recall:6.2f} {r.precision:6.2f}   "
                     f"{r.matched:3d}    {r.gold_brackets:3d}  {r.test_brackets:3d}    {r.crossing:3d}   "
                     f"{r.words:4d}  {r.correct_tags:4d}   {accuracy:6.2f}" + (f"  {r.message}" if r.message else ""))
    lines += ["=" * 76, "=== Summary ==="] if per_sentence else ["=== Summary ==="]
    for title, summary in (("All", result.all), (f"len<={result.cutoff_length}", result.short)):
        figures = summary.as_dict()
        lines += [
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
    return "\n".join(lines)
