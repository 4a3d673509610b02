"""report.json's tokenized_uncased, the figure closest to what Multi30K papers publish (fairseq's BLEU, or
multi-bleu.perl -lc, on lowercased Moses-tokenized text), against computations that share none of its code: a
corpus BLEU written here from its definition and the `sacrebleu` command line, on the same tokenized files."""

import collections
import math
import subprocess
import sys

import pytest
from sacremoses import MosesTokenizer

from t2t_repro.evaluate.bleu import corpus_bleu, moses_tokenize

# German with what Moses escapes (& < > ' " [ ] |), capitals outside ASCII, hyphens, and a short hypothesis.
REFERENCES = [
    "Über den Fluss führt eine alte Brücke.",
    'Ein Mann hält ein Schild mit der Aufschrift "Tom & Jerry\'s".',
    "Ärzte in blauen Kitteln stehen an einem Tisch [im Hintergrund].",
    "Zwei Kinder spielen im Sand, während ihre Mutter zusieht.",
    "Ein Hund mit einem <roten> Halsband rennt über die Wiese | Sommer.",
    "Eine Frau im T-Shirt fährt Fahrrad.",
]
HYPOTHESES = [
    "über den Fluss führt eine Brücke.",
    'Ein Mann hält ein Schild mit "Tom & Jerry\'s".',
    "Ärzte in blauen Kitteln stehen am Tisch [im Hintergrund].",
    "Zwei Kinder spielen im Sand.",
    "Ein Hund mit <rotem> Halsband läuft über die Wiese | Sommer.",
    "Eine Frau im T-Shirt fährt ein Fahrrad.",
]


def corpus_bleu_by_definition(hypotheses, references, max_order=4):
    """Corpus BLEU (Papineni et al., 2002) of whitespace-split lines with one reference each, as fairseq's scorer
    and multi-bleu.perl compute it: n-gram matches clipped by the reference's counts and summed over the corpus,
    the geometric mean of the four precisions (0 when one is 0), brevity penalty exp(1 - r/c) when c < r."""
    matches, totals = [0] * max_order, [0] * max_order
    hypothesis_length = reference_length = 0
    for hypothesis, reference in zip(hypotheses, references, strict=True):
        hyp, ref = hypothesis.split(), reference.split()
        hypothesis_length += len(hyp)
        reference_length += len(ref)
        for n in range(1, max_order + 1):
            hyp_ngrams = collections.Counter(tuple(hyp[i:i + n]) for i in range(len(hyp) - n + 1))
            ref_ngrams = collections.Counter(tuple(ref[i:i + n]) for i in range(len(ref) - n + 1))
            matches[n - 1] += sum(min(count, ref_ngrams[gram]) for gram, count in hyp_ngrams.items())
            totals[n - 1] += max(len(hyp) - n + 1, 0)
    if min(matches) == 0:
        return 0.0
    log_precision = sum(math.log(m / t) for m, t in zip(matches, totals)) / max_order
    brevity = 1.0 if hypothesis_length >= reference_length else math.exp(1 - reference_length / hypothesis_length)
    return 100 * brevity * math.exp(log_precision)


@pytest.fixture(scope="module")
def tokenized_files(tmp_path_factory):
    """The hypotheses and references Moses-tokenized (as corpus_bleu tokenizes them) and lowercased, as files."""
    directory = tmp_path_factory.mktemp("tokenized")
    paths = []
    for name, lines in (("hyp", HYPOTHESES), ("ref", REFERENCES)):
        path = directory / f"{name}.tok.lc.de"
        path.write_text("".join(moses_tokenize(line, "de").lower() + "\n" for line in lines), encoding="utf-8")
        paths.append(path)
    return paths


def _lines(path):
    return path.read_text(encoding="utf-8").splitlines()


def test_tokenized_uncased_equals_corpus_bleu_by_definition_on_the_tokenized_files(tokenized_files):
    hypotheses, references = (_lines(path) for path in tokenized_files)
    expected = corpus_bleu_by_definition(hypotheses, references)
    assert 20 < expected < 90  # every n-gram order matches, and the brevity penalty applies
    assert sum(len(line.split()) for line in hypotheses) < sum(len(line.split()) for line in references)
    assert corpus_bleu(HYPOTHESES, REFERENCES, lang="de")["tokenized_uncased"] == pytest.approx(expected, abs=1e-9)


def test_tokenized_uncased_equals_the_sacrebleu_command_on_the_tokenized_files(tokenized_files):
    hypothesis_path, reference_path = tokenized_files
    result = subprocess.run(
        [sys.executable, "-m", "sacrebleu", str(reference_path), "-i", str(hypothesis_path), "--tokenize", "none",
         "--smooth-method", "none", "--lowercase", "--force", "--score-only", "--width", "6"],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    ours = corpus_bleu(HYPOTHESES, REFERENCES, lang="de")["tokenized_uncased"]
    assert ours == pytest.approx(float(result.stdout), abs=1e-6)


def test_tokenized_text_is_escaped_as_tokenizer_perl_escapes_by_default_which_changes_no_score():
    tokenized = " ".join(moses_tokenize(line, "de") for line in REFERENCES)
    for entity in ("&quot;", "&amp;", "&apos;", "&#91;", "&#93;", "&lt;", "&gt;", "&#124;"):
        assert entity in tokenized, entity
    # Escaping maps each character to one entity on both sides alike: the same n-grams match.
    tokenizer = MosesTokenizer(lang="de")
    unescaped = [[tokenizer.tokenize(line, escape=False, return_str=True).lower() for line in lines]
                 for lines in (HYPOTHESES, REFERENCES)]
    assert corpus_bleu(HYPOTHESES, REFERENCES, lang="de")["tokenized_uncased"] == pytest.approx(
        corpus_bleu_by_definition(*unescaped), abs=1e-9)

