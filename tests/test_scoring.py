"""Scoring given translations (t2t-repro-decoder --score_file): the scores of the beam search's own outputs are
the scores it reported for them, the perplexity follows from the lines, and bad input is one line or one
warning as in decoding."""

import math

import keras
import numpy as np
import pytest
from conftest import run_cli_in_process

from t2t_repro.decode.decode_text import encode_sources, tensorflow_search
from t2t_repro.decode.scoring import tensorflow_scorer
from t2t_repro.decode_settings import DecodeSettings
from t2t_repro.hparams_type import HParams
from t2t_repro.model import build_transformer
from t2t_repro.run import jobs
from t2t_repro.special_tokens import EOS_ID, PAD_ID

EXTRA_LENGTH = 4
NBEST = 4


def _unpadded(ids):
    return [token for token in ids if token != PAD_ID]


def test_scores_of_the_beam_searchs_hypotheses_are_the_scores_it_reported():
    """Ids straight from the search, so no text re-encoding is involved: hypotheses that ended with EOS and
    hypotheses cut at the maximum length without it, every n-best rank, scored in one padded batch."""
    keras.utils.set_random_seed(1)
    model = build_transformer(HParams(num_layers=2, d_model=16, d_ff=32, num_heads=2, d_k=8, d_v=8, dropout=0.0), 10)
    settings = DecodeSettings(beam_size=NBEST, nbest=NBEST, alpha=0.6, extra_length=EXTRA_LENGTH)
    rng = np.random.default_rng(0)
    sources = [[*rng.integers(3, 10, size=rng.integers(1, 7)).tolist(), EOS_ID] for _ in range(16)]
    results = tensorflow_search(model, settings)(sources)
    pairs = [(source, _unpadded(ids), score) for source, per_source in zip(sources, results)
             for ids, score in per_source]
    scored = tensorflow_scorer(model, settings.alpha)([p[0] for p in pairs], [p[1] for p in pairs])
    ended = [target[-1] == EOS_ID for _, target, _ in pairs]
    assert 5 <= sum(ended) <= len(pairs) - 5  # both kinds of hypothesis are compared
    assert [tokens for _, tokens, _ in scored] == [len(target) for _, target, _ in pairs]
    assert max(abs(got - reported) for (_, _, got), (_, _, reported) in zip(scored, pairs)) < 1e-5
    # One pair alone scores as in its batch: padding either side changes nothing.
    alone = tensorflow_scorer(model, settings.alpha)([pairs[5][0]], [pairs[5][1]])[0]
    assert alone == pytest.approx(scored[5], abs=1e-5)


@pytest.fixture(scope="module")
def sources_file(parallel_text_dir, tmp_path_factory):
    """The corpus' test sources and two lines the decoder answers with nothing: empty, and blank."""
    lines = (parallel_text_dir / "test.en").read_text(encoding="utf-8").splitlines()[:12]
    path = tmp_path_factory.mktemp("scoring") / "sources.en"
    path.write_text("\n".join([*lines[:6], "", *lines[6:], "   "]) + "\n", encoding="utf-8")
    return path


def test_scoring_the_nbest_file_gives_the_scores_the_beam_search_reported(trained_run, sources_file, tmp_path):
    """The decoder's n-best texts scored given their sources: the third column equals each hypothesis' reported
    score wherever the text stands for the hypothesis' tokens, i.e. the hypothesis ended with EOS (scoring adds
    the EOS a sentence ends with) and its text encodes back to its ids (decoding, then encoding, may segment a
    text into other pieces, which the model gives another probability). The search's ids, to tell which, come
    from the same decoder in this process."""
    nbest_file = tmp_path / "nbest.de"
    decoded = run_cli_in_process("decoder", f"--output_dir={trained_run}", f"--decode_from_file={sources_file}",
                                 f"--decode_to_file={nbest_file}", f"--nbest={NBEST}",
                                 f"--extra_length={EXTRA_LENGTH}", "--quiet")
    assert decoded.returncode == 0, decoded.stderr
    rows = [line.split("\t", 1) for line in nbest_file.read_text(encoding="utf-8").split("\n")[:-1]]
    source_lines = sources_file.read_text(encoding="utf-8").splitlines()
    repeated, targets = tmp_path / "repeated.en", tmp_path / "targets.de"
    repeated.write_text("".join(line + "\n" for line in source_lines for _ in range(NBEST)), encoding="utf-8")
    targets.write_text("".join(text + "\n" for _, text in rows), encoding="utf-8")

    scored = run_cli_in_process("decoder", f"--output_dir={trained_run}", f"--decode_from_file={repeated}",
                                f"--score_file={targets}", "--quiet")
    assert scored.returncode == 0, scored.stderr
    columns = [line.split("\t") for line in scored.stdout.splitlines()]
    assert len(columns) == len(rows) == NBEST * len(source_lines)

    decoder = jobs.run_decoder(str(trained_run), nbest=NBEST, extra_length=EXTRA_LENGTH)
    _, encoded = encode_sources(source_lines, decoder.settings, decoder.vocabularies.source)
    hypotheses = [ids for source in encoded for ids, _ in
                  (decoder.search([source])[0] if source else [(None, 0.0)] * NBEST)]
    compared = 0
    for ids, (reported, text), (log_prob, tokens, score) in zip(hypotheses, rows, columns):
        if ids is None:  # an empty source: not decoded, not scored
            assert (reported, text, log_prob, tokens, score) == ("0.000000", "", "0.000000", "0", "0.000000")
            continue
        ids = _unpadded(ids)
        if ids[-1] == EOS_ID and list(decoder.vocabularies.source.encode(text)) == ids[:-1]:
            compared += 1
            assert int(tokens) == len(ids)
            assert abs(float(score) - float(reported)) < 1e-5, (text, score, reported)
    assert compared >= 0.75 * NBEST * (len(source_lines) - 2)

    # The perplexity on stderr is that of the lines; written to a file, the lines are the same bytes.
    log_prob, tokens = sum(float(c[0]) for c in columns), sum(int(c[1]) for c in columns)
    (summary,) = [line for line in scored.stderr.splitlines() if "perplexity" in line]
    assert float(summary.rsplit(" ", 1)[1]) == pytest.approx(math.exp(-log_prob / tokens), rel=1e-4)
    assert f"scored {len(columns) - 2 * NBEST} of {len(columns)} pairs: {tokens} target tokens" in summary
    written = tmp_path / "scores.txt"
    assert run_cli_in_process("decoder", f"--output_dir={trained_run}", f"--decode_from_file={repeated}",
                              f"--score_file={targets}", f"--decode_to_file={written}", "--quiet").returncode == 0
    assert written.read_text(encoding="utf-8") == scored.stdout


def test_empty_lines_are_handled_as_decoding_handles_them_and_invalid_utf8_is_refused(trained_run, tmp_path):
    source, target = tmp_path / "source.en", tmp_path / "target.de"
    source.write_bytes(b"the cat runs\n\nthe dog\nthe man sees\n")
    target.write_bytes(b"die Katze rennt\ndie Katze\n\nder Mann sieht\n")
    result = run_cli_in_process("decoder", f"--output_dir={trained_run}", f"--decode_from_file={source}",
                                f"--score_file={target}", "--quiet")
    assert result.returncode == 0, result.stderr
    columns = [line.split("\t") for line in result.stdout.splitlines()]
    assert len(columns) == 4
    assert columns[1] == ["0.000000", "0", "0.000000"]  # an empty source is not scored
    assert columns[2][1] == "1" and float(columns[2][0]) < 0  # an empty target is the empty sentence: EOS
    assert int(columns[3][1]) > 1
    target.write_bytes(b"die Katze rennt\ndie Katze\n\nder Mann\xff sieht\n")
    result = run_cli_in_process("decoder", f"--output_dir={trained_run}", f"--decode_from_file={source}",
                                f"--score_file={target}", "--quiet")
    assert result.returncode == 2 and result.stdout == "" and f"{target}:4: not UTF-8 text" in result.stderr


@pytest.mark.parametrize("flags, message", [
    (["--score_file={target_short}"], "source.en has 4 lines but {tmp}/short.de has 3"),
    (["--score_file={target}", "--engine=ctranslate2"], "--score_file needs --engine=tensorflow"),
    (["--score_file={target}", "--nbest=2"], "--nbest does not apply to --score_file"),
    (["--score_file={target}", "--sampling=topk:2"], "--sampling does not apply to --score_file"),
    (["--score_file={tmp}/missing.de"], "missing.de: no such file"),
    (["--score_file={target}", "--decode_to_file={tmp}/no/scores.txt"], "does not exist"),
])
def test_scoring_errors_are_one_line_and_write_nothing(trained_run, tmp_path, flags, message):
    source, target, target_short = tmp_path / "source.en", tmp_path / "target.de", tmp_path / "short.de"
    source.write_text("a\nb\nc\nd\n", encoding="utf-8")
    target.write_text("a\nb\nc\nd\n", encoding="utf-8")
    target_short.write_text("a\nb\nc\n", encoding="utf-8")
    flags = [flag.format(target=target, target_short=target_short, tmp=tmp_path) for flag in flags]
    result = run_cli_in_process("decoder", f"--output_dir={trained_run}", f"--decode_from_file={source}", *flags)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and message.format(tmp=tmp_path) in result.stderr, result.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["short.de", "source.en", "target.de"]


def test_score_file_needs_the_sources(trained_run, tmp_path):
    target = tmp_path / "target.de"
    target.write_text("a\n", encoding="utf-8")
    result = run_cli_in_process("decoder", f"--output_dir={trained_run}", f"--score_file={target}")
    assert result.returncode == 2 and "--score_file needs --decode_from_file" in result.stderr
