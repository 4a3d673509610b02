"""Sampling (t2t-repro-decoder --sampling=topk:K|topp:P --temperature=T --seed=S): top-k with K = 1 is greedy
decoding, a command gives the same bytes every time and whatever the batching, samples are drawn from the
restricted, tempered distribution and scored by their log-probability, and bad values are one line."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from conftest import run_cli_in_process

from t2t_repro.decode.log_probs import next_token_log_probs
from t2t_repro.decode.sampling import sampling_search
from t2t_repro.decode.scoring import tensorflow_scorer
from t2t_repro.decode_settings import DecodeSettings, SamplingSettings
from t2t_repro.hparams_type import HParams
from t2t_repro.model import build_transformer
from t2t_repro.special_tokens import EOS_ID, PAD_ID

EXTRA_LENGTH = 6


@pytest.fixture(scope="module")
def sources_file(parallel_text_dir, tmp_path_factory):
    lines = (parallel_text_dir / "test.en").read_text(encoding="utf-8").splitlines()
    path = tmp_path_factory.mktemp("sampling") / "sources.en"
    path.write_text("\n".join([*lines[:8], "", *lines[8:]]) + "\n", encoding="utf-8")
    return path


def decode(run, sources_file, target, *flags):
    """The text the decoder writes for `sources_file` with `flags`. (Its lines end with "\\n"; str.splitlines
    would also split at characters such as U+001C, which byte pieces of a barely trained model decode to.)"""
    result = run_cli_in_process("decoder", f"--output_dir={run}", f"--decode_from_file={sources_file}",
                                f"--decode_to_file={target}", f"--extra_length={EXTRA_LENGTH}", "--quiet", *flags)
    assert result.returncode == 0, result.stderr
    return target.read_text(encoding="utf-8")


def test_topk_1_gives_the_outputs_of_greedy_search_at_any_temperature(serving_run, sources_file, tmp_path):
    greedy = decode(serving_run, sources_file, tmp_path / "greedy.de", "--beam_size=1")
    sampled = decode(serving_run, sources_file, tmp_path / "topk1.de", "--sampling=topk:1", "--temperature=3",
                     "--seed=7")
    assert sampled == greedy
    # The barely trained model's outputs run to their maximum length: not a comparison of empty strings.
    assert len(set(greedy.split("\n"))) > 10 and len(greedy) > 250


def test_the_same_command_gives_the_same_bytes_whatever_the_batch_and_another_seed_others(serving_run, sources_file,
                                                                                          tmp_path):
    flags = ("--sampling=topp:0.9", "--temperature=1.5", "--nbest=3", "--seed=3")
    first = decode(serving_run, sources_file, tmp_path / "first.de", *flags)
    assert decode(serving_run, sources_file, tmp_path / "again.de", *flags) == first
    rows = [line.split("\t", 1) for line in first.split("\n")[:-1]]
    # Decoded one by one, the same samples; their log-probabilities round differently in other batch shapes.
    one_by_one = decode(serving_run, sources_file, tmp_path / "one_by_one.de", *flags, "--batch_size=1")
    alone = [line.split("\t", 1) for line in one_by_one.split("\n")[:-1]]
    assert [text for _, text in alone] == [text for _, text in rows]
    assert max(abs(float(a) - float(b)) for (a, _), (b, _) in zip(alone, rows)) < 1e-4
    other_seed = decode(serving_run, sources_file, tmp_path / "other.de", *flags[:-1], "--seed=4")
    assert len(rows) == 3 * 21 and rows[24:27] == [["0.000000", ""]] * 3  # the empty line: nothing to sample
    assert sum(a != b for a, b in zip(first.split("\n"), other_seed.split("\n"))) > 30
    # Three different samples per input (a barely trained model, a flat distribution), most likely first.
    per_input = [rows[i : i + 3] for i in range(0, len(rows), 3) if rows[i][1]]
    assert all(len({text for _, text in samples}) == 3 for samples in per_input)
    assert all([float(score) for score, _ in samples] == sorted((float(s) for s, _ in samples), reverse=True)
               for samples in per_input)


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(1)
    return build_transformer(HParams(num_layers=2, d_model=16, d_ff=32, num_heads=2, d_k=8, d_v=8, dropout=0.0), 10)


def _sample(model, sources, spec, samples, temperature=1.0, extra_length=EXTRA_LENGTH):
    settings = DecodeSettings(beam_size=samples, nbest=samples, extra_length=extra_length)
    search = sampling_search(model, settings, SamplingSettings(spec, temperature=temperature, seed=2))
    return [[([t for t in ids if t != PAD_ID], score) for ids, score in per_source] for per_source in search(sources)]


def _step_log_probs(model, source, target):
    """log P(y_t = . | y_<t, source) [len(target), vocab], teacher-forced."""
    logits = model({"inputs": tf.constant([source]), "targets": tf.constant([target])})
    return next_token_log_probs(logits, model.vocab_size)[0].numpy()


SOURCES = [[3, 4, 5, EOS_ID], [9, 8, 7, 6, 5, 4, EOS_ID], [6, EOS_ID]]


def test_sample_scores_are_their_log_probabilities_as_scoring_gives_them(model):
    results = _sample(model, SOURCES, "topk:3", samples=4, temperature=0.8)
    pairs = [(source, ids, score) for source, per_source in zip(SOURCES, results) for ids, score in per_source]
    scored = tensorflow_scorer(model, 0.6)([p[0] for p in pairs], [p[1] for p in pairs])
    assert max(abs(log_prob - score) for (log_prob, _, _), (_, _, score) in zip(scored, pairs)) < 1e-5
    assert any(ids[-1] == EOS_ID for _, ids, _ in pairs) and any(ids[-1] != EOS_ID for _, ids, _ in pairs)


@pytest.mark.parametrize("spec, temperature", [("topk:2", 1.0), ("topp:0.5", 0.7)])
def test_every_token_is_drawn_from_the_top_k_or_the_nucleus(model, spec, temperature):
    method, value = SamplingSettings(spec).parsed
    drawn = 0
    for source, per_source in zip(SOURCES, _sample(model, SOURCES, spec, samples=8, temperature=temperature)):
        for ids, _ in per_source:
            for log_probs, token in zip(_step_log_probs(model, source, ids), ids):
                order = np.argsort(-log_probs, kind="stable")
                rank = int(np.flatnonzero(order == token)[0])
                if method == "topk":
                    assert rank < value
                else:
                    tempered = np.exp(log_probs[order] / temperature)
                    assert tempered[:rank].sum() / tempered.sum() < value
                drawn += 1
    assert drawn > 100


def test_one_steps_samples_follow_the_tempered_top_k_distribution(model):
    """1,000 samples of one token (a one-token source: the maximum length is 1) against softmax(log P / T)
    over the 3 most likely tokens (probabilities 0.31, 0.25 and 0.18 at temperature 1: about 0.59, 0.30 and
    0.11 at 0.3). The frequencies' standard deviations are below 0.016."""
    temperature, k, samples = 0.3, 3, 1000
    (per_source,) = _sample(model, [[EOS_ID]], f"topk:{k}", samples, temperature=temperature, extra_length=0)
    frequencies = np.bincount([ids[0] for ids, _ in per_source], minlength=model.vocab_size) / samples
    log_probs = _step_log_probs(model, [EOS_ID], [PAD_ID])[0]
    top = np.argsort(-log_probs)[:k]
    expected = np.zeros(model.vocab_size)
    expected[top] = np.exp(log_probs[top] / temperature) / np.exp(log_probs[top] / temperature).sum()
    assert np.abs(frequencies - expected).max() < 0.05, (frequencies, expected)
    assert np.sort(expected)[-3] > 0.05  # three tokens are likely: the check compares shapes


@pytest.mark.parametrize("flags, message", [
    (["--sampling=topk:0"], "K must be at least 1"),
    (["--sampling=topk:2.5"], "expected topk:K (an integer K >= 1) or topp:P (0 < P <= 1)"),
    (["--sampling=beam:4"], "expected topk:K"),
    (["--sampling=topp:0"], "P must be in (0, 1]"),
    (["--sampling=topp:1.5"], "P must be in (0, 1]"),
    (["--sampling=topk:3", "--temperature=0"], "temperature=0.0: must be greater than 0"),
    (["--sampling=topk:3", "--temperature=-1"], "must be greater than 0"),
    (["--temperature=0.5"], "--temperature and --seed apply to --sampling only"),
    (["--seed=3"], "--temperature and --seed apply to --sampling only"),
    (["--sampling=topk:3", "--beam_size=4"], "--beam_size does not apply to --sampling"),
    (["--sampling=topk:3", "--alpha=1"], "--alpha does not apply to --sampling"),
    (["--sampling=topk:3", "--engine=ctranslate2", "--model_dir={tmp}", "--beam_size=2"],
     "--beam_size does not apply to --sampling"),
])
def test_sampling_errors_are_one_line_and_write_nothing(serving_run, sources_file, tmp_path, flags, message):
    target = tmp_path / "out.de"
    flags = [flag.format(tmp=tmp_path) for flag in flags]
    if "--engine=ctranslate2" not in flags:
        flags.append(f"--output_dir={serving_run}")
    result = run_cli_in_process("decoder", f"--decode_from_file={sources_file}", f"--decode_to_file={target}",
                                *flags)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and message in result.stderr, result.stderr
    assert not target.exists()
