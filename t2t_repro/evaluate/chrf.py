"""chrF (Popovic, 2015), the character n-gram F-score the field reports beside BLEU where words are long
compounds or not separated by spaces: sacreBLEU's chrF2 (character n-grams up to 6, no word n-grams, recall
weighted by beta = 2), the figure `sacrebleu REFERENCE -i HYPOTHESES -m chrf` prints.

    scores = corpus_chrf(hypotheses, references)    # {"chrf": 56.9, "signature": "nrefs:1|case:mixed|...", ...}

Not one of the paper's figures (it reports BLEU, section 6.1); it needs no tokenizer, so it means the same in
every language.
"""

from sacrebleu.metrics import CHRF


def corpus_chrf(hypotheses, references):
    """sacreBLEU's corpus chrF2 of detokenized `hypotheses` against one reference each: the score, its text and
    the signature that says how it was computed."""
    metric = CHRF()
    score = metric.corpus_score(list(hypotheses), [list(references)])
    signature = str(metric.get_signature())
    return {"chrf": score.score, "signature": signature, "text": f"chrF2|{signature} = {score.score:.2f}"}
