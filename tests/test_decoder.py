"""Decoding text: input order, the bad-line cases (empty, over-long, invalid UTF-8, failing postprocess),
the n-best format, and the t2t-repro-decoder command line."""

import logging

import keras
import pytest
import tensorflow as tf

from t2t_repro.cli import decoder as decoder_cli
from t2t_repro.data.problem import Problem
from t2t_repro.data.vocabulary import Vocabularies
from t2t_repro.decode.decode_text import (
    decode_file, decode_texts, decode_texts_nbest, length_sorted_batches, read_source_lines, tensorflow_search,
)
from t2t_repro.decode_settings import DecodeSettings
from t2t_repro.errors import UserError
from t2t_repro.hparams_type import HParams
from t2t_repro.model import build_transformer
from t2t_repro.registry import register_problem
from t2t_repro.special_tokens import EOS_ID, PAD_ID, UNK_ID
from t2t_repro.run.layout import RunInfo, RunLayout

HPARAMS = HParams(num_layers=1, d_model=16, d_ff=32, num_heads=2, d_k=8, d_v=8, dropout=0.0)
SETTINGS = DecodeSettings(beam_size=3, alpha=0.6, extra_length=4)


class CharVocabulary:
    """One id per character of a small alphabet, after the reserved PAD, EOS and UNK."""

    alphabet = "abcdefgh "

    @property
    def vocab_size(self):
        return 3 + len(self.alphabet)

    def encode(self, text):
        return [3 + self.alphabet.index(c) if c in self.alphabet else UNK_ID for c in text]

    def decode(self, ids):
        chars = []
        for token in ids:
            if token == EOS_ID:
                break
            if token == UNK_ID:
                chars.append("?")
            elif token != PAD_ID:
                chars.append(self.alphabet[token - 3])
        return "".join(chars)


CHARS = Vocabularies.shared_one(CharVocabulary())


@register_problem
class DecoderTestChars(Problem):
    """Characters to characters, for the decoding tests (no data: the vocabulary is fixed)."""

    name = "decoder_test_chars"
    decode_settings = SETTINGS
    postprocess_note = "outputs in angle brackets"
    vocab_size = 12

    def generate_data(self, data_dir, tmp_dir=None, manual_dir=None):
        return {}

    def data_ready(self, data_dir):
        return True

    def vocabularies(self, data_dir):
        return CHARS

    def dataset(self, split, data_dir):
        return tf.data.Dataset.from_tensors({"inputs": [3, EOS_ID], "targets": [4, EOS_ID]})

    def text_pairs(self, split, data_dir):
        return [("a", "b")]

    def postprocess(self, decoded_text, source_text):
        if "boom" in source_text:
            raise ValueError("cannot postprocess this one")
        return f"<{decoded_text}>"

    def evaluate(self, hypotheses, references, sources):
        return {}


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(7)
    return build_transformer(HPARAMS, CharVocabulary().vocab_size)


def decode(texts, model, batch_size=None, batch_tokens=None, **settings):
    return decode_texts(texts, model, CHARS, SETTINGS.override(**settings), DecoderTestChars().postprocess,
                        batch_size=batch_size, batch_tokens=batch_tokens, progress=False)


def test_outputs_come_back_in_input_order_whatever_the_batching(model):
    sources = ["abc", "a", "hgfedcba", "bad cafe", "e", "ddd"]
    one_by_one = [decode([s], model, batch_size=1)[0] for s in sources]
    assert decode(sources, model, batch_size=4) == one_by_one
    assert decode(sources, model, batch_tokens=10) == one_by_one
    assert decode(sources, model) == one_by_one
    assert all(out.startswith("<") and out.endswith(">") for out in one_by_one), "postprocess must be applied"


def test_token_batches_fill_a_budget_of_padded_tokens_longest_first():
    lengths = [3, None, 10, 5, 5, 2, 2, 2]
    # 10 alone (two would pad to 20 > 12), then 5 + 5, then 3 with the 2s while 4 x 3 <= 12.
    assert length_sorted_batches(lengths, batch_tokens=12) == [[2], [3, 4], [0, 5, 6, 7]]
    assert length_sorted_batches(lengths, batch_tokens=4) == [[2], [3], [4], [0], [5, 6], [7]]  # too long alone
    assert length_sorted_batches(lengths, batch_size=3) == [[2, 3, 4], [0, 5, 6], [7]]
    assert length_sorted_batches([16] * 130) == [list(range(64)), list(range(64, 128)), [128, 129]]


@pytest.mark.parametrize("flags, error", [
    (["--batch_size=4", "--batch_tokens=100"], "not both"),
    (["--batch_tokens=0"], "--batch_tokens=0: must be at least 1"),
    (["--batch_size=-1"], "--batch_size=-1: must be at least 1"),
])
def test_decoder_refuses_bad_batching_in_one_line(flags, error, tmp_path, capsys):
    assert run_cli([f"--output_dir={tmp_path}", *flags]) == 2
    assert error in capsys.readouterr().err


def test_empty_lines_give_empty_outputs(model):
    outputs = decode(["abc", "", "   ", "de"], model)
    assert outputs[1] == "" and outputs[2] == ""
    assert outputs[0] == decode(["abc"], model)[0]
    assert outputs[3] == decode(["de"], model)[0]


def test_sources_are_stripped_like_the_training_data(model):
    assert decode(["  abc \t"], model) == decode(["abc"], model)


def test_over_long_line_is_truncated_with_a_warning_naming_it(model, caplog):
    long_line = "abcdefgh" * 4
    with caplog.at_level(logging.WARNING):
        outputs = decode(["ab", long_line], model, max_input_length=6)
    assert "line 2" in caplog.text and "truncated" in caplog.text
    # Truncated to 5 characters + EOS.
    assert outputs[1] == decode([long_line[:5]], model)[0]


def test_failing_postprocess_keeps_the_raw_output_and_the_other_lines(model, caplog):
    with caplog.at_level(logging.WARNING):
        outputs = decode(["abc", "boom", "de"], model)
    assert "line 2" in caplog.text
    assert not outputs[1].startswith("<")
    assert outputs[0] == decode(["abc"], model)[0]


def test_decode_file_keeps_line_count_and_refuses_text_that_is_not_utf8(model, tmp_path):
    source = tmp_path / "source.txt"
    source.write_bytes(b"abc\n\nde\r\nbad\n")
    lines = read_source_lines(source)
    assert lines == ["abc", "", "de", "bad"]
    target = tmp_path / "out.txt"
    count = decode_file(source, target, tensorflow_search(model, SETTINGS), CHARS, SETTINGS,
                        DecoderTestChars().postprocess, progress=False)
    written = target.read_text(encoding="utf-8").split("\n")
    assert count == 4 and written[-1] == "" and len(written) == 5
    assert written[:4] == decode(lines, model)
    # Bytes that are not UTF-8 are refused, naming the file and line, as datagen refuses them.
    source.write_bytes(b"abc\n\nd\xff\xfee\r\nbad\n")
    with pytest.raises(UserError, match=rf"{source}:3: not UTF-8 text \(byte 0xff at byte 2 of the line\)"):
        read_source_lines(source)


def test_nbest_file_has_n_scored_lines_per_input_best_first(model, tmp_path):
    source = tmp_path / "source.txt"
    source.write_text("abc\nhead\n", encoding="utf-8")
    target = tmp_path / "out.txt"
    postprocess = DecoderTestChars().postprocess
    settings = SETTINGS.override(nbest=3)
    decode_file(source, target, tensorflow_search(model, settings), CHARS, settings, postprocess,
                progress=False)
    rows = [line.split("\t", 1) for line in target.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 6
    for first in (0, 3):
        scores = [float(score) for score, _ in rows[first : first + 3]]
        assert scores == sorted(scores, reverse=True)
    nbest = decode_texts_nbest(["abc"], model, CHARS, SETTINGS.override(nbest=3), postprocess,
                               progress=False)
    assert [h.text for h in nbest[0]] == [text for _, text in rows[:3]]
    assert rows[0][1] == decode(["abc"], model)[0]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, model):
    output_dir = tmp_path_factory.mktemp("run")
    layout = RunLayout(output_dir)
    layout.record(HPARAMS, RunInfo("decoder_test_chars", "test", "", str(output_dir)))
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model), layout.checkpoint_dir, 2)
    manager.save(checkpoint_number=10)
    return output_dir


def run_cli(argv):
    with pytest.raises(SystemExit) as exit_info:
        decoder_cli.main(argv)
    return exit_info.value.code


def test_decoder_cli_decodes_a_file_with_the_run(run_dir, model, tmp_path):
    source = tmp_path / "source.txt"
    source.write_text("abc\n\nhead\n", encoding="utf-8")
    target = tmp_path / "out.txt"
    argv = [f"--output_dir={run_dir}", f"--decode_from_file={source}", f"--decode_to_file={target}", "--quiet"]
    assert run_cli(argv) == 0
    assert target.read_text(encoding="utf-8").splitlines() == decode(["abc", "", "head"], model)
    assert run_cli(argv + ["--nbest=2"]) == 0
    assert len(target.read_text(encoding="utf-8").splitlines()) == 6
    assert run_cli(argv + ["--jit_compile"]) == 0  # the search loop compiled by XLA: the same best outputs
    assert target.read_text(encoding="utf-8").splitlines() == decode(["abc", "", "head"], model)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--nbest=5"], "larger than the beam size"),
        (["--beam_size=0"], "beam_size"),
        (["--decode_from_file=/nonexistent/source.txt"], "no such file"),
        (["--checkpoint=/nonexistent/ckpt-3"], "not found"),
        (["--output_dir=/nonexistent/run"], "not found"),
        (["--decode_to_file=", "--output_dir=/nonexistent/run"], "go together"),
        (["--engine=tensorflow_lite"], "invalid choice"),
        (["--jit_compile", "--sampling=topk:2"], "does not apply"),
        (["--jit_compile", "--engine=ctranslate2"], "is for the tensorflow engine"),
    ],
)
def test_decoder_cli_errors_are_one_line(run_dir, tmp_path, capsys, extra, message):
    source = tmp_path / "source.txt"
    source.write_text("abc\n", encoding="utf-8")
    argv = [f"--output_dir={run_dir}", f"--decode_from_file={source}", f"--decode_to_file={tmp_path / 'o.txt'}"]
    argv = [a for a in argv if a.split("=")[0] not in {e.split("=")[0] for e in extra}] + extra
    assert run_cli(argv) == 2
    stderr = capsys.readouterr().err
    assert "Traceback" not in stderr
    error = stderr.strip().splitlines()[-1]
    assert "error:" in error and message in error
    assert not (tmp_path / "o.txt").exists()


def test_a_search_keeps_its_model_alive_after_every_other_reference_is_gone():
    """The compiled searches hold their model weakly; the search `tensorflow_search` returns must not."""
    import gc

    keras.utils.set_random_seed(2)
    search = tensorflow_search(build_transformer(HPARAMS, len(CharVocabulary.alphabet) + 3), SETTINGS)
    gc.collect()
    [[(ids, score)]] = search([[4, 5, EOS_ID]])
    assert ids and score <= 0.0
