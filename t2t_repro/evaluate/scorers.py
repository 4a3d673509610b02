"""The scorers a Problem is given: each turns decoded outputs and references into its figures and names the
one number they are summarised by (dev curves, report headlines).

    scorer = BleuScorer("de")
    scores = scorer(hypotheses, references, sources)   # {"bleu": {...}, "chrf": {...}}
    name, value = scorer.headline(scores)              # ("bleu", sacreBLEU): the run's headline figure
    scorer.headlines(scores)                           # {"bleu": sacreBLEU, "chrf": chrF2}: every dev curve

A scorer that computes its figures on a rewritten form of the texts (ParseF1Scorer: trees in one canonical
form) also has `evaluation_files(hypotheses, references, sources)` -> {"decoded": lines, "gold": lines}, the
files on which an external tool (evalb.c) gives the same figures.
"""

from t2t_repro.data import ptb_tree
from t2t_repro.errors import UserError
from t2t_repro.evaluate import evalb
from t2t_repro.evaluate.bleu import check_tokenizer, corpus_bleu
from t2t_repro.evaluate.chrf import corpus_chrf
from t2t_repro.evaluate.evalb_files import evalb_line


class BleuScorer:
    """Translation (section 6.1, Table 2): sacreBLEU and the paper's tokenized BLEU into `lang`, and chrF2 beside
    them (`t2t_repro.evaluate.chrf`; not a figure of the paper).

    `tokenize` is sacreBLEU's tokenizer for the detokenized score, None for the one that suits `lang` (zh,
    ja-mecab, ko-mecab, else 13a). It is checked here (`check_tokenizer`), so that a problem made with a
    tokenizer that cannot run fails when it is made, not at the first evaluation hours into training; the
    figures name it ("tokenize", and the sacreBLEU signature).
    """

    metric_names = ("bleu", "chrf")

    def __init__(self, lang, tokenize=None):
        self.lang = lang
        self.tokenize = check_tokenizer(lang, tokenize)

    def __call__(self, hypotheses, references, sources):
        return {"bleu": corpus_bleu(hypotheses, references, lang=self.lang, tokenize=self.tokenize),
                "chrf": corpus_chrf(hypotheses, references)}

    def headline(self, scores):
        return "bleu", scores["bleu"]["sacrebleu"]

    def headlines(self, scores):
        """Every figure a dev evaluation logs and may choose the best checkpoint by: sacreBLEU and chrF2."""
        return {"bleu": scores["bleu"]["sacrebleu"], "chrf": scores["chrf"]["chrf"]}


class ParseF1Scorer:
    """Constituency parsing (section 6.3, Table 4): labelled bracket F1 exactly as evalb.c with COLLINS.prm
    computes it (`t2t_repro.evaluate.evalb`) on the two files `evaluation_files` gives.

    Hypotheses and references may each be PTB tree strings or linearised trees (the references a parsing
    problem keeps are linearised: de-linearised onto the source words, they give the gold tree back exactly).
    Returns EVALB's figures in percent: {"f1", "precision", "recall", "sentences", ..., "len_le_40": {...}}.
    """

    metric_names = ("f1",)

    def __init__(self, leaf_words=False):
        self.leaf_words = leaf_words  # linearised trees write the words where tags would be (ptb_tree.linearise)

    def __call__(self, hypotheses, references, sources):
        files = self.evaluation_files(hypotheses, references, sources)
        return evalb.evaluate_lines(files["gold"], files["decoded"]).as_dict()

    def evaluation_files(self, hypotheses, references, sources):
        """{"gold": lines, "decoded": lines}: the trees one per line in one canonical form (`evalb_line`: as
        the tree is, no outer pair added or removed, brackets inside words escaped; a blank line where there
        is no hypothesis), which is what the figures are computed on, so evalb.c or t2t-repro-evalb on the
        two files written out gives the same figures."""
        if not len(hypotheses) == len(references) == len(sources):
            raise ValueError(f"{len(hypotheses)} hypotheses, {len(references)} references, {len(sources)} sources")
        gold = [evalb_line(_as_tree(reference, source.split(), self.leaf_words)
                           or ptb_tree.delinearise("", source.split()))
                for reference, source in zip(references, sources)]
        decoded = [evalb_line(_as_tree(hypothesis, source.split(), self.leaf_words))
                   for hypothesis, source in zip(hypotheses, sources)]
        return {"gold": gold, "decoded": decoded}

    def headline(self, scores):
        return "f1", scores["f1"]

    def headlines(self, scores):
        return dict([self.headline(scores)])


def tree_scorer(problem):
    """The ParseF1Scorer of a parsing problem, reading its linearised trees as it writes them (its words_in_target):
    a parsing problem's `scorer = property(tree_scorer)`."""
    return ParseF1Scorer(leaf_words=problem.words_in_target)


def _as_tree(text, words, leaf_words=False):
    """A PTB tree string parsed as it is, or linearised text de-linearised onto `words`; None if empty."""
    if not text.strip():
        return None
    if not ptb_tree.looks_linearised(text):
        try:
            return ptb_tree.parse_tree(text)
        except UserError:
            pass
    return ptb_tree.delinearise(text, words, leaf_words=leaf_words)
