"""The WMT14 problems end to end: offline through TFDS mock data, and from local parallel text files."""

import os

import numpy as np
import pytest
import tensorflow_datasets as tfds

from t2t_repro.decode_settings import TRANSLATION_DECODE_SETTINGS
from t2t_repro.evaluate.scorers import BleuScorer
from t2t_repro.errors import UserError
from t2t_repro.catalog import get_problem
from t2t_repro.registry import description
from t2t_repro.special_tokens import EOS_ID

MOCK_EXAMPLES = 12


@pytest.mark.parametrize(
    "name, source, target, model_type, requested",
    [("wmt_ende", "en", "de", "bpe", 37_000), ("wmt_enfr", "en", "fr", "unigram", 32_000)],
)
def test_wmt_problem_through_tfds_mock_data(tmp_path, name, source, target, model_type, requested):
    problem = get_problem(name)
    assert (problem.source_language, problem.target_language) == (source, target)
    assert (problem.vocab_model_type, problem.vocab_size) == (model_type, requested)
    assert problem.decode_settings == TRANSLATION_DECODE_SETTINGS
    assert isinstance(problem.scorer, BleuScorer) and problem.scorer.lang == problem.target_language
    assert description(type(problem)).startswith("WMT14 English->")
    data_dir = tmp_path / "data"
    with tfds.testing.mock_data(num_examples=MOCK_EXAMPLES):
        summary = problem.generate_data(data_dir, tmp_dir=tmp_path / "tfds")
    assert summary["reused"] is False
    assert problem.data_ready(data_dir)
    vocab = problem.vocabularies(data_dir).target
    assert summary["vocab_size"] == vocab.vocab_size < requested  # the mock corpus is tiny
    kept = {split: counts["examples"] for split, counts in summary["splits"].items()}
    dropped = sum(c["dropped_empty"] + c["dropped_too_long"] for c in summary["splits"].values())
    assert kept["train"] + dropped == MOCK_EXAMPLES and kept["dev"] == kept["test"] == MOCK_EXAMPLES

    pairs = problem.text_pairs("test", data_dir)
    examples = list(problem.dataset("test", data_dir).as_numpy_iterator())
    assert len(pairs) == len(examples) == MOCK_EXAMPLES
    for (source_text, target_text), example in zip(pairs, examples):
        assert example["inputs"].dtype == np.int32 and example["inputs"][-1] == EOS_ID
        assert example["targets"][-1] == EOS_ID
        assert vocab.decode(example["inputs"]) == source_text
        assert vocab.decode(example["targets"]) == target_text


def _write_parallel(directory, source_lang, target_lang, train, dev, test):
    directory.mkdir(parents=True, exist_ok=True)
    for split, pairs in (("train", train), ("dev", dev), ("test", test)):
        (directory / f"{split}.{source_lang}").write_text("".join(s + "\n" for s, _ in pairs), encoding="utf-8")
        (directory / f"{split}.{target_lang}").write_text("".join(t + "\n" for _, t in pairs), encoding="utf-8")


TRAIN = [
    ("The house is small.", "Das Haus ist klein."),
    ("  ", "Leer auf der Quelle."),
    ("The street is long.", "Die Straße ist lang."),
    ("Target side is empty.", ""),
    ("Good morning!", "Guten Morgen!"),
    ("word " * 1500, "Wort " * 1500),
    ("Thank you very much.", "Vielen Dank."),
] * 3
DEV = [("I like tea.", "Ich mag Tee."), ("Where is the station?", "Wo ist der Bahnhof?")]
TEST = [
    ("The weather is nice.", "Das Wetter ist schön."),
    ("", ""),
    ("Zürich is über-expensive.", "Zürich ist sehr teuer."),
]


def test_wmt_ende_from_local_files_counts_drops_and_keeps_test_whole(tmp_path):
    problem = get_problem("wmt_ende")
    manual = tmp_path / "manual"
    _write_parallel(manual, "en", "de", TRAIN, DEV, TEST)
    summary = problem.generate_data(tmp_path / "data", manual_dir=manual)
    assert summary["splits"]["train"] == {"examples": 12, "dropped_empty": 6, "dropped_too_long": 3}
    assert summary["splits"]["test"] == {"examples": 3, "dropped_empty": 0, "dropped_too_long": 0}
    assert problem.text_pairs("test", tmp_path / "data") == TEST
    assert problem.text_pairs("dev", tmp_path / "data") == DEV
    vocab = problem.vocabularies(tmp_path / "data").target
    train = problem.dataset("train", tmp_path / "data").as_numpy_iterator()
    train_targets = {vocab.decode(example["targets"]) for example in train}
    assert train_targets == {"Das Haus ist klein.", "Die Straße ist lang.", "Guten Morgen!", "Vielen Dank."}


def test_wmt_enfr_reads_its_own_language_files(tmp_path):
    manual = tmp_path / "manual"
    _write_parallel(manual, "en", "fr", [("Hello.", "Bonjour.")] * 4, [("Yes.", "Oui.")], [("No.", "Non.")])
    problem = get_problem("wmt_enfr")
    problem.generate_data(tmp_path / "data", manual_dir=manual)
    assert problem.text_pairs("test", tmp_path / "data") == [("No.", "Non.")]


def test_missing_local_files_name_what_is_expected_where(tmp_path):
    manual = tmp_path / "manual"
    _write_parallel(manual, "en", "de", TRAIN, DEV, TEST)
    (manual / "dev.de").unlink()
    with pytest.raises(UserError) as error:
        get_problem("wmt_ende").generate_data(tmp_path / "data", manual_dir=manual)
    message = str(error.value)
    assert str(manual) in message and "lacks dev.de" in message
    assert "train.en, train.de, dev.en, dev.de, test.en, test.de" in message
    assert not (tmp_path / "data" / "wmt_ende").exists()


def test_misaligned_local_files_are_a_user_error(tmp_path):
    manual = tmp_path / "manual"
    _write_parallel(manual, "en", "de", TRAIN, DEV, TEST)
    (manual / "test.de").write_text("Nur eine Zeile.\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"test\.en has 3 lines but .*test\.de has 1: parallel files must be "
                                        r"line-aligned"):
        get_problem("wmt_ende").generate_data(tmp_path / "data", manual_dir=manual)
    assert not get_problem("wmt_ende").data_ready(tmp_path / "data")


def test_tfds_download_failure_says_how_to_use_local_files(tmp_path, monkeypatch):
    class OfflineBuilder:
        def download_and_prepare(self):
            raise ConnectionError("Failed to resolve 'statmt.org'")

    monkeypatch.setattr(tfds, "builder", lambda name, data_dir=None: OfflineBuilder())
    with pytest.raises(UserError) as error:
        get_problem("wmt_ende").generate_data(tmp_path / "data", tmp_dir=tmp_path / "tfds")
    message = str(error.value)
    assert "wmt14_translate/de-en" in message and "statmt.org" in message and "--manual_dir" in message


def test_evaluate_reports_bleu_against_the_target_language():
    pytest.importorskip("t2t_repro.evaluate.bleu")
    problem = get_problem("wmt_ende")
    hypotheses = ["Das Haus ist klein .", "Guten Morgen !"]
    scores = problem.evaluate(hypotheses, hypotheses, ["The house is small.", "Good morning!"])
    assert scores["bleu"]["sacrebleu"] == pytest.approx(100.0)
    assert problem.postprocess("Das Haus", "The house") == "Das Haus"


def test_local_files_keep_crlf_lines_and_name_the_line_that_is_not_utf8(tmp_path):
    manual = tmp_path / "manual"
    _write_parallel(manual, "en", "de", TRAIN, DEV, TEST)
    (manual / "dev.en").write_bytes(b"I like tea.\r\nWhere is the station?\r\n")
    problem = get_problem("wmt_ende")
    problem.generate_data(tmp_path / "data", manual_dir=manual)
    assert problem.text_pairs("dev", tmp_path / "data") == DEV
    (manual / "train.de").write_bytes((manual / "train.de").read_bytes().replace(b"Stra\xc3\x9fe", b"Stra\xdfe"))
    with pytest.raises(UserError, match=rf"{manual / 'train.de'}:3: not UTF-8 text \(byte 0xdf"):
        problem.generate_data(tmp_path / "other", manual_dir=manual)
    assert os.listdir(tmp_path / "other") == []
