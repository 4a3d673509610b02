"""t2t-repro-visualize: attention heat maps of a trained run (the paper's Figures 3-5) and its training curves."""

import numpy as np
import pytest

from t2t_repro.cli import visualize
from t2t_repro.cli.common import run_main
from t2t_repro.run import jobs
from t2t_repro.run.layout import RunLayout
from t2t_repro.visualize import attention_maps, curves

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SENTENCE = "the big cat sees a red car"


def _visualize(*args):
    return run_main(visualize._main, [str(arg) for arg in args])


def _assert_png(path):
    with open(path, "rb") as f:
        assert f.read(8) == PNG_SIGNATURE, path


@pytest.fixture(scope="module")
def maps(trained_run):
    return jobs.attention_maps(trained_run, SENTENCE, beam_size=1)


def test_maps_are_distributions_over_the_tokens_on_their_axes(maps, trained_run):
    hparams = RunLayout(trained_run).load_hparams()
    assert maps.source_tokens[-1] == "</s>" and len(maps.source_tokens) >= len(SENTENCE.split()) + 1
    assert maps.decoder_input_tokens[0] == "<pad>"
    assert maps.decoder_input_tokens[1:] == maps.output_tokens[:-1]
    for kind in attention_maps.KINDS:
        rows, columns = maps.axis_tokens(kind)
        assert len(maps.weights[kind]) == hparams.num_layers
        for weights in maps.weights[kind]:
            assert weights.shape == (hparams.num_heads, len(rows), len(columns))
            np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-5)
    # The decoder cannot look ahead (section 3.2.3): the masked future has no weight.
    for weights in maps.weights[attention_maps.DECODER_SELF]:
        assert np.all(np.triu(weights, k=1) < 1e-6)


def test_attention_png_per_kind_layer_and_head(trained_run, tmp_path, maps):
    out = tmp_path / "figures"
    assert _visualize(f"--output_dir={trained_run}", f"--sentence={SENTENCE}", f"--out={out}", "--beam_size=1") == 0
    hparams = RunLayout(trained_run).load_hparams()
    expected = {
        f"{kind}_layer{layer}_{suffix}.png"
        for kind in attention_maps.KINDS
        for layer in range(1, hparams.num_layers + 1)
        for suffix in [f"head{head}" for head in range(1, hparams.num_heads + 1)] + ["heads"]
    }
    written = {path.name for path in out.glob("*.png")}
    assert written == expected
    for name in written:
        _assert_png(out / name)


def test_layer_flag_restricts_the_maps_and_checks_its_range(trained_run, tmp_path, capsys):
    out = tmp_path / "one_layer"
    assert _visualize(f"--output_dir={trained_run}", f"--sentence={SENTENCE}", f"--out={out}", "--layer=1",
                      "--beam_size=1") == 0
    assert all("_layer1_" in path.name for path in out.glob("*.png"))
    capsys.readouterr()
    assert _visualize(f"--output_dir={trained_run}", f"--sentence={SENTENCE}", f"--out={out}", "--layer=7") == 2
    assert "numbered 1 to" in capsys.readouterr().err


def test_curves_come_from_the_runs_logs(trained_run, tmp_path):
    scalars = curves.run_scalars(str(trained_run))
    # The tiny run trains 12 steps, logs every 5 (and at the end) and evaluates every 6.
    assert [step for step, _ in scalars["loss"]] == [5, 10, 12]
    assert [step for step, _ in scalars["dev_loss"]] == [6, 12]
    assert all(value > 0 for _, value in scalars["learning_rate"])
    out = tmp_path / "curves"
    assert _visualize(f"--output_dir={trained_run}", "--curves", f"--out={out}") == 0
    written = sorted(path.name for path in out.glob("*.png"))
    assert written == ["dev_bleu.png", "dev_perplexity.png", "learning_rate.png", "loss.png", "throughput.png"]
    for name in written:
        _assert_png(out / name)


@pytest.mark.parametrize("case", ["no_run", "empty_sentence", "unwritable_out", "nothing_asked", "no_logs"])
def test_bad_input_is_one_line_and_exit_2(case, trained_run, tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    args = {
        "no_run": [f"--output_dir={tmp_path / 'missing'}", f"--sentence={SENTENCE}", f"--out={tmp_path / 'o'}"],
        "empty_sentence": [f"--output_dir={trained_run}", "--sentence=   ", f"--out={tmp_path / 'o'}"],
        "unwritable_out": [f"--output_dir={trained_run}", f"--sentence={SENTENCE}", f"--out={blocker / 'sub'}"],
        "nothing_asked": [f"--output_dir={trained_run}", f"--out={tmp_path / 'o'}"],
        "no_logs": [f"--output_dir={tmp_path}", "--curves", f"--out={tmp_path / 'o'}"],
    }[case]
    assert _visualize(*args) == 2
    captured = capsys.readouterr()
    assert len(captured.err.strip().splitlines()) == 1, captured.err
    assert "error:" in captured.err
