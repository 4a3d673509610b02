"""Scores two trivial baselines on toy_ende's test set, to show what a trained model must beat.

    python tools/toy_baselines.py --data_dir=D [--tmp_dir=T] [--json]

- copy: the English source itself, as the German output;
- word_by_word: each English word replaced by one German form from the lexicon (`word_by_word_dictionary`),
  in English order, without agreement, inflection, compounding or reordering.

Both are scored with sacreBLEU's default BLEU (13a tokenization, mixed case), as every translation problem is.
The test pairs are those of the generated toy_ende data in D when it is there, else the raw generated test
text (written under T, by default D, through the toy_ende problem). With --json each baseline is one line
{"baseline": "copy" | "word_by_word", "bleu": ..., "signature": ...}.
"""

import argparse
import json
import os
import re
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from t2t_repro import catalog  # noqa: E402
from t2t_repro.cli.common import run_main  # noqa: E402
from t2t_repro.data.toy.language import detokenize, word_by_word_dictionary  # noqa: E402

_TOKEN = re.compile(r"[^\s.,?]+|[.,?]")


def translate_word_by_word(sentence, dictionary):
    """The sentence with every word looked up in `dictionary` (unknown words kept, empty translations
    dropped), the first word capitalised, punctuation kept."""
    words = []
    for token in _TOKEN.findall(sentence):
        german = dictionary.get(token, dictionary.get(token.lower(), token))
        if german:
            words.append(german)
    if not words:
        return ""
    words[0] = words[0][:1].upper() + words[0][1:]
    return detokenize(words)


def baseline_outputs(sources, seed=1):
    """{"copy": [...], "word_by_word": [...]}: each baseline's output for every source sentence."""
    dictionary = word_by_word_dictionary(seed)
    return {"copy": list(sources), "word_by_word": [translate_word_by_word(s, dictionary) for s in sources]}


def score_baselines(problem, sources, references):
    """One dict per baseline: {"baseline", "bleu", "signature"} (sacreBLEU, default settings)."""
    rows = []
    for name, hypotheses in baseline_outputs(sources, problem.seed).items():
        bleu = problem.evaluate(hypotheses, references, sources)["bleu"]
        rows.append({"baseline": name, "bleu": round(bleu["sacrebleu"], 2), "signature": bleu["signature"]})
    return rows


def load_test_pairs(problem, data_dir, tmp_dir):
    """The test (source, reference) pairs: from the generated data in `data_dir`, else from the raw text."""
    if problem.data_ready(data_dir):
        return problem.text_pairs("test", data_dir)
    return [(s.strip(), r.strip()) for s, r in problem.raw_pairs("test", tmp_dir or data_dir, None)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data_dir", required=True, help="data directory of the toy_ende problem")
    parser.add_argument("--tmp_dir", default=None, help="where the raw corpus is generated (default: data_dir)")
    parser.add_argument("--json", action="store_true", help="one JSON line per baseline")
    args = parser.parse_args(argv)
    problem = catalog.get_problem("toy_ende")
    pairs = load_test_pairs(problem, args.data_dir, args.tmp_dir)
    rows = score_baselines(problem, [s for s, _ in pairs], [r for _, r in pairs])
    for row in rows:
        if args.json:
            print(json.dumps(row))
        else:
            print(f"{row['baseline']:<14} BLEU {row['bleu']:6.2f}   ({row['signature']})")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
