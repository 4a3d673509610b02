"""tools/synthetic_wmt.py: a seeded WMT-shaped corpus in the --manual_dir layout, with WMT's length profile."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

import synthetic_wmt  # noqa: E402

TYPES = 20_000  # a small lexicon keeps the test fast; the tool's default is a million


def _lines(path):
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def test_corpus_has_the_manual_dir_layout_and_the_wmt_length_profile(tmp_path):
    written = synthetic_wmt.write_corpus(tmp_path, 40_000, seed=3, types=TYPES)
    names = {f"{split}.{language}" for split in ("train", "dev", "test") for language in ("en", "de")}
    assert set(written) == names and {path.name for path in tmp_path.iterdir()} == names
    assert written["train.en"] == 40_000 and written["dev.de"] == 3_000 and written["test.en"] == 3_003
    source, target = _lines(tmp_path / "train.en"), _lines(tmp_path / "train.de")
    assert len(source) == len(target) == 40_000
    lengths = np.array([len(line.split()) for line in source])
    assert 21 <= lengths[lengths > 0].mean() <= 25
    assert 0.002 < (lengths > 100).mean() < 0.01
    assert (lengths == 0).sum() + sum(1 for line in target if not line) > 0  # a few empty sides
    text = " ".join(source + target)
    assert any(ch in text for ch in "äöüß") and "-" in text and any(ch.isdigit() for ch in text)
    assert all(line for line in _lines(tmp_path / "test.en"))  # test sets have no empty line
    ratio = np.array([len(t.split()) for t in target]) / np.maximum(lengths, 1)
    assert 0.85 < np.median(ratio) < 1.05  # German lines follow the English ones' lengths


def test_same_seed_same_bytes_and_smaller_corpora_are_prefixes(tmp_path, monkeypatch):
    monkeypatch.setattr(synthetic_wmt, "CHUNK_PAIRS", 500)
    synthetic_wmt.write_corpus(tmp_path / "a", 1_000, seed=1, types=TYPES)
    synthetic_wmt.write_corpus(tmp_path / "b", 1_000, seed=1, types=TYPES)
    synthetic_wmt.write_corpus(tmp_path / "c", 1_500, seed=1, types=TYPES)
    synthetic_wmt.write_corpus(tmp_path / "d", 1_000, seed=2, types=TYPES)
    first = (tmp_path / "a" / "train.de").read_bytes()
    assert first == (tmp_path / "b" / "train.de").read_bytes()
    assert (tmp_path / "c" / "train.de").read_bytes().startswith(first)
    assert first != (tmp_path / "d" / "train.de").read_bytes()
    assert (tmp_path / "a" / "test.en").read_bytes() == (tmp_path / "c" / "test.en").read_bytes()


def test_lexicon_is_zipfian_over_distinct_types():
    lexicon = synthetic_wmt.build_lexicon("fr", seed=1, types=TYPES)
    assert len(lexicon) == TYPES and len(set(lexicon)) > 0.9 * TYPES
    assert lexicon[0] == "de"  # function words first
    cdf = synthetic_wmt.zipf_cdf(TYPES)
    assert cdf[-1] == pytest.approx(1.0) and np.all(np.diff(cdf) > 0)
    assert cdf[99] > 0.4  # the hundred most frequent words make almost half of the text


def test_french_target_names_its_files_fr(tmp_path):
    written = synthetic_wmt.write_corpus(tmp_path, 200, target="fr", types=TYPES)
    assert sorted(written) == sorted(f"{s}.{lang}" for s in ("train", "dev", "test") for lang in ("en", "fr"))
    assert any(ch in (tmp_path / "dev.fr").read_text(encoding="utf-8") for ch in "éèàçêô")


def test_command_line_refuses_a_bad_count(tmp_path):
    script = REPO / "tools" / "synthetic_wmt.py"
    bad = subprocess.run([sys.executable, str(script), "--pairs", "0", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--pairs must be at least 1" in bad.stderr
    assert list(tmp_path.iterdir()) == []
