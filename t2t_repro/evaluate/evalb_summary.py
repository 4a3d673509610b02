"""EVALB's figures: one sentence's result, and the corpus summary that evalb.c's print_total reports.

Error and skip sentences are counted but left out of every bracket, crossing and tagging total; rates
(complete match, crossing) are over the valid sentences; percentages are on a 0-100 scale, like EVALB's
report. F1 is 2PR / (P + R) of the corpus precision and recall (evalb.c prints nan when both are 0; 0 here).
"""

import dataclasses

OK, ERROR, SKIP = "ok", "error", "skip"
STATUS_CODES = {OK: 0, ERROR: 1, SKIP: 2}  # evalb.c's "Stat." column


def f1_score(precision, recall):
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


@dataclasses.dataclass(frozen=True)
class SentenceResult:
    """One sentence's figures. `status` is OK, ERROR (length or word mismatch, unbalanced brackets) or SKIP
    (the test sentence has no words); `errors` are the messages evalb.c would print for it (each one counts
    towards MAX_ERROR)."""

    length: int
    status: str
    gold_brackets: int = 0
    test_brackets: int = 0
    matched: int = 0
    crossing: int = 0
    words: int = 0
    correct_tags: int = 0
    errors: tuple = ()

    @property
    def recall(self):
        return 100.0 * self.matched / self.gold_brackets if self.gold_brackets else 0.0

    @property
    def precision(self):
        return 100.0 * self.matched / self.test_brackets if self.test_brackets else 0.0

    @property
    def f1(self):
        return f1_score(self.precision, self.recall)


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
        return f1_score(self.precision, self.recall)

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
