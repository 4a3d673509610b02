"""A WMT14-shaped synthetic parallel corpus, for measuring datagen and the input pipeline at the paper's scale.

    python tools/synthetic_wmt.py --pairs 4500000 --out /tmp/wmt_synthetic            # EN-DE sized
    python tools/synthetic_wmt.py --pairs 36000000 --out /tmp/wmt_enfr --target fr     # EN-FR sized

It writes the line-aligned files `--manual_dir` reads: `{train,dev,test}.en` and `{train,dev,test}.<target>`,
train of --pairs pairs, dev 3,000 and test 3,003 (newstest2013 and newstest2014's sizes). The text is not
language, only shaped like WMT14's:

- lengths: words per line drawn from a log-normal of mean about 23 (the paper's corpora average 23 to 25
  words a side), so about 0.5% of lines pass 100 words; the target's length follows the source's
  (German about 0.95 as many words, French 1.1 as many). About 3 in 10,000 train pairs have an empty side and
  2 in 100,000 are over-long (1,500 to 4,000 words a side), as the crawled parts of WMT have;
- words: a Zipf-Mandelbrot distribution (exponent 1.1) over 1,000,000 word types per language: function words
  first, then made-up words of the language's letters (German umlauts and sharp s, French accents), names,
  hyphenated compounds, numbers ("1,500", "3.5", "12%"), words with punctuation attached, a few in other
  scripts (Cyrillic, Greek, CJK). Sentences start with a capital and mostly end in a full stop.

Both sides are drawn independently (same lengths, not translations). Output depends only on --seed, --pairs and
--target; train is written in chunks of 100,000 pairs, each from its own seed, so a corpus of a multiple of
100,000 pairs is a prefix of a larger one of the same seed, and memory stays flat (under 500 MB, mostly the
two lexicons) whatever --pairs is: 4.5M pairs (1.5 GB) take about 3 minutes on a busy 2-core machine.
"""

import argparse
import os
import sys
import time

import numpy as np

CHUNK_PAIRS = 100_000
WORD_TYPES = 1_000_000
ZIPF_SHIFT = 2.7  # Zipf-Mandelbrot: p(rank r) ~ (r + shift)^-exponent, 1-based ranks
ZIPF_EXPONENT = 1.1  # every one of the million types turns up in a corpus of a few million pairs
MEAN_WORDS = 23.0
LENGTH_SIGMA = 0.65  # log-normal spread: about 0.5% of lines above 100 words
EMPTY_RATE = 3e-4
OVERLONG_RATE = 2e-5
OVERLONG_WORDS = (1_500, 4_000)
DEV_PAIRS, TEST_PAIRS = 3_000, 3_003
SPLIT_CODES = {"train": 0, "dev": 1, "test": 2}

_LANGUAGES = {
    "en": {
        "function": "the , . of and to in a is that for it as was with be by on not he I this are or his from at "
                    "which but have an they you were her she there been one all we their has would when if so no "
                    "will more can who its than into them only other new some could these two may first any",
        "onsets": "b bl br c ch cl cr d dr f fl fr g gl gr h j k l m n p pl pr qu r s sh sl sm sn sp st str t th "
                  "tr v w wh y",
        "vowels": "a e i o u ea ee oo ou ai ie",
        "codas": "- - - b ck d ff g l ll m n nd ng nt p r rd rt s ss st t x",
        "accented": "é ï",
        "ratio": 1.0,
    },
    "de": {
        "function": "die , . der und in den von zu das mit sich des auf für ist im dem nicht ein Die eine als auch "
                    "es an werden aus er hat daß sie nach wird bei einer um am sind noch wie einem über einen so "
                    "zum war haben nur oder aber vor zur bis mehr durch man sein wurde",
        "onsets": "b bl br d dr f fl fr g gl gr h k kl kr l m n p pf pl pr r s sch schl schm schn schw sp st str t "
                  "tr w z zw",
        "vowels": "a e i o u au ei ie eu ä ö ü",
        "codas": "- - - b ch cht d f g k l ll m n nd ng nk nn r rt s ß st t tz",
        "accented": "ä ö ü ß",
        "ratio": 0.95,
    },
    "fr": {
        "function": "de , . la le et les des à l' en du un une que est pour qui dans par pas au sur ne plus il se "
                    "ce a sont avec nous son ou elle mais comme on été d' sa aux y tout leur ses ont cette fait",
        "onsets": "b bl br c ch cl cr d dr f fl fr g gr j l m n p pl pr qu r s t tr v",
        "vowels": "a e i o u ai au eau eu ou oi é è ê",
        "codas": "- - - c l m n nt r rs s t x",
        "accented": "é è à ç ê ô",
        "ratio": 1.1,
    },
}
_FOREIGN = ("москва", "россия", "πόλη", "ελλάδα", "北京", "東京", "서울", "istanbul", "kraków", "søren")
_ATTACHED = ("{},", "{}:", "{};", "({})", '"{}"', "'{}'", "{})", "({}")


def _syllables(parts):
    """Every onset + vowel + coda of a language: the pieces its made-up words are joined from."""
    return [onset + vowel + ("" if coda == "-" else coda)
            for onset in parts["onsets"] for vowel in parts["vowels"] for coda in parts["codas"]]


def _numbers(rng, count):
    """`count` number tokens as news text has them: years, thousands, decimals, percentages, prices."""
    values = rng.integers(0, 10_000, size=(count, 2)).tolist()
    forms = ("{0}", "{0},{1:03d}", "{0}.{1}", "{0}%", "€{0}", "19{1:02d}")
    kinds = rng.integers(len(forms), size=count).tolist()
    return [forms[kind].format(a % 1000 if kind else a, b % (100 if kind == 5 else 1000))
            for kind, (a, b) in zip(kinds, values)]


def build_lexicon(language, seed, types=WORD_TYPES):
    """The word types of `language`, most frequent first: its function words, then made-up words of its letters
    (longer the rarer), names, compounds, numbers, words with punctuation attached and a few foreign words."""
    parts = {key: value.split() for key, value in _LANGUAGES[language].items() if isinstance(value, str)}
    rng = np.random.default_rng([seed, 7, sum(map(ord, language))])
    syllables = _syllables(parts)
    ranks = np.arange(types)
    counts = 1 + (rng.random(types) < np.clip(np.log10(ranks + 10) / 6, 0.3, 0.95)).astype(np.int64)
    counts += rng.random(types) < np.clip((np.log10(ranks + 10) - 3) / 6, 0, 0.6)
    pieces = rng.integers(len(syllables), size=int(counts.sum())).tolist()
    plain = []
    start = 0
    for count in counts.tolist():
        plain.append("".join(syllables[piece] for piece in pieces[start:start + count]))
        start += count
    words = np.array(plain, dtype=object)
    kinds = rng.choice(7, size=types, p=[0.70, 0.10, 0.05, 0.05, 0.05, 0.04, 0.01])
    kinds[: len(parts["function"])] = 0
    chosen = {kind: np.flatnonzero(kinds == kind) for kind in range(1, 7)}
    words[chosen[1]] = [word.capitalize() for word in words[chosen[1]]]
    partners = words[rng.integers(types, size=len(chosen[2]))]
    words[chosen[2]] = [f"{a}-{b}" for a, b in zip(words[chosen[2]], partners)]
    words[chosen[3]] = _numbers(rng, len(chosen[3]))
    accents = rng.integers(len(parts["accented"]), size=len(chosen[4])).tolist()
    words[chosen[4]] = [word[:-1] + parts["accented"][a] + word[-1:] for word, a in zip(words[chosen[4]], accents)]
    forms = rng.integers(len(_ATTACHED), size=len(chosen[5])).tolist()
    words[chosen[5]] = [_ATTACHED[form].format(word) for word, form in zip(words[chosen[5]], forms)]
    foreign = rng.integers(len(_FOREIGN), size=len(chosen[6])).tolist()
    words[chosen[6]] = [_FOREIGN[f] + word[:2] for word, f in zip(words[chosen[6]], foreign)]
    words[: len(parts["function"])] = parts["function"]
    return words


def zipf_cdf(types=WORD_TYPES, shift=ZIPF_SHIFT, exponent=ZIPF_EXPONENT):
    """The cumulative Zipf-Mandelbrot distribution over `types` ranks: p(r) ~ (r + shift)^-exponent."""
    weights = (np.arange(1, types + 1, dtype=np.float64) + shift) ** -exponent
    cdf = np.cumsum(weights)
    return cdf / cdf[-1]


def _source_lengths(rng, count, tails):
    mu = np.log(MEAN_WORDS) - LENGTH_SIGMA**2 / 2
    lengths = np.maximum(1, np.rint(rng.lognormal(mu, LENGTH_SIGMA, count))).astype(np.int64)
    if tails:
        overlong = rng.random(count) < OVERLONG_RATE
        lengths[overlong] = rng.integers(*OVERLONG_WORDS, size=int(overlong.sum()))
    return lengths


def _sentences(rng, lexicon, cdf, lengths):
    """Lines of `lengths` words drawn from the lexicon; a capital first letter, mostly a final full stop."""
    ids = np.searchsorted(cdf, rng.random(int(lengths.sum())), side="right")
    words = lexicon[np.minimum(ids, len(lexicon) - 1)].tolist()
    endings = rng.choice(4, size=len(lengths), p=[0.85, 0.05, 0.02, 0.08]).tolist()
    marks = (".", "?", "!", "")
    lines = []
    start = 0
    for length, ending in zip(lengths.tolist(), endings):
        line = " ".join(words[start:start + length])
        start += length
        lines.append(line[:1].upper() + line[1:] + marks[ending])
    return lines


def chunk_lines(seed, split, index, count, lexicons, cdf, target):
    """(source lines, target lines) of one chunk of a split: seeded by (seed, split, chunk index) alone."""
    rng = np.random.default_rng([seed, SPLIT_CODES[split], index])
    tails = split == "train"
    source_lengths = _source_lengths(rng, count, tails)
    noise = np.exp(rng.normal(0.0, 0.15, count))
    ratio = _LANGUAGES[target]["ratio"]
    target_lengths = np.maximum(1, np.rint(source_lengths * ratio * noise)).astype(np.int64)
    sources = _sentences(rng, lexicons["en"], cdf, source_lengths)
    targets = _sentences(rng, lexicons[target], cdf, target_lengths)
    if tails:
        empty = np.flatnonzero(rng.random(count) < EMPTY_RATE).tolist()
        sides = rng.integers(0, 3, size=len(empty)).tolist()  # 0: source, 1: target, 2: both
        for row, side in zip(empty, sides):
            if side != 1:
                sources[row] = ""
            if side != 0:
                targets[row] = ""
    return sources, targets


def write_corpus(out, pairs, seed=1, target="de", progress=None, types=WORD_TYPES):
    """Writes out/{train,dev,test}.{en,<target>} from lexicons of `types` words; returns {file name: lines}."""
    if target not in ("de", "fr"):
        raise ValueError(f"target language {target!r}: must be de or fr")
    os.makedirs(out, exist_ok=True)
    lexicons = {language: build_lexicon(language, seed, types) for language in ("en", target)}
    cdf = zipf_cdf(types)
    written = {}
    for split, total in (("train", pairs), ("dev", DEV_PAIRS), ("test", TEST_PAIRS)):
        names = (f"{split}.en", f"{split}.{target}")
        paths = [os.path.join(out, name) for name in names]
        temporaries = [f"{path}.tmp-{os.getpid()}" for path in paths]
        with open(temporaries[0], "wb") as source_file, open(temporaries[1], "wb") as target_file:
            for index, start in enumerate(range(0, total, CHUNK_PAIRS)):
                count = min(CHUNK_PAIRS, total - start)
                sources, targets = chunk_lines(seed, split, index, count, lexicons, cdf, target)
                source_file.write(("\n".join(sources) + "\n").encode("utf-8"))
                target_file.write(("\n".join(targets) + "\n").encode("utf-8"))
                if progress:
                    progress(split, start + count, total)
        for temporary, path in zip(temporaries, paths):
            os.replace(temporary, path)
        written.update({name: total for name in names})
    return written


def main(argv=None):
    parser = argparse.ArgumentParser(prog="synthetic_wmt.py", description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, required=True, help="train sentence pairs (WMT14 EN-DE: 4,500,000)")
    parser.add_argument("--out", required=True, help="directory for {train,dev,test}.{en,<target>}")
    parser.add_argument("--seed", type=int, default=1, help="seed of the lexicons and the text")
    parser.add_argument("--target", choices=("de", "fr"), default="de", help="target language of the file names")
    args = parser.parse_args(argv)
    if args.pairs < 1:
        parser.error("--pairs must be at least 1")
    start = time.perf_counter()

    def progress(split, done, total):
        seconds = time.perf_counter() - start
        print(f"\r{split}: {done:,}/{total:,} pairs, {seconds:.0f} s", end="", file=sys.stderr, flush=True)

    written = write_corpus(args.out, args.pairs, args.seed, args.target, progress)
    print(file=sys.stderr)
    print(f"wrote {', '.join(f'{name} ({lines:,} lines)' for name, lines in written.items())} to {args.out} "
          f"in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
