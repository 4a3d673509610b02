"""Golden values: a fixed-seed 50-step transformer_tiny run on toy_ende, through the real command line.

The losses and weights of the run and the decoder's outputs on 200 toy test sentences were recorded once and
must not change when the code is reorganised (float32 rounding aside: 1e-6 relative). A change that is meant
to alter them (a new default of the paper's, say) re-records them on purpose:

    T2T_REPRO_RECORD_GOLDEN=1 pytest tests/test_golden.py
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
from conftest import run_cli

GOLDEN_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden", "toy_ende_tiny_50_steps.json")
RECORD = os.environ.get("T2T_REPRO_RECORD_GOLDEN") == "1"
DECODED_SENTENCES = 200
RELATIVE_TOLERANCE = 1e-6


def _losses(summary_dir):
    losses = {}
    for name in sorted(os.listdir(summary_dir)):
        for event in tf.compat.v1.train.summary_iterator(os.path.join(summary_dir, name)):
            for value in event.summary.value:
                if value.tag == "loss":
                    losses[event.step] = float(tf.make_ndarray(value.tensor))
    return [losses[step] for step in sorted(losses)]


def _weight_digest(checkpoint_prefix):
    """Per model variable: shape, sum, sum of squares and the first values (float64 arithmetic)."""
    reader = tf.train.load_checkpoint(checkpoint_prefix)
    digest = {}
    for name in sorted(reader.get_variable_to_shape_map()):
        # Model variables are stored under the first path that reaches them: the model's or the optimizer's.
        if not name.startswith(("model/", "optimizer/_trainable_variables/")) or "OPTIMIZER_SLOT" in name:
            continue
        value = reader.get_tensor(name)
        if value.dtype.kind != "f":
            continue
        flat = value.astype(np.float64).ravel()
        digest[name] = {
            "shape": list(value.shape),
            "sum": float(flat.sum()),
            "sum_of_squares": float((flat**2).sum()),
            "first": [float(v) for v in flat[:4]],
        }
    return digest


@pytest.fixture(scope="module")
def golden_run(tmp_path_factory):
    """Trains 50 steps of transformer_tiny on toy_ende (seed 1), then decodes 200 toy test sentences (best and
    4-best with scores)."""
    base = tmp_path_factory.mktemp("golden")
    output_dir, tmp_dir = base / "run", base / "tmp"
    result = run_cli(
        "trainer", "--problem=toy_ende", "--hparams=transformer_tiny", "--train_steps=50", "--seed=1",
        "--log_steps=1", "--checkpoint_steps=50", "--eval_steps=1000", "--eval_decode_sentences=0",
        "--skip_average", "--skip_test", "--skip_export",
        f"--data_dir={base / 'data'}", f"--tmp_dir={tmp_dir}", f"--output_dir={output_dir}",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    sources = (tmp_dir / "toy_ende_seed1" / "test.en").read_text(encoding="utf-8").splitlines()[:DECODED_SENTENCES]
    source_file, decoded_file = base / "test200.en", base / "test200.decoded"
    source_file.write_text("\n".join(sources) + "\n", encoding="utf-8")
    decoded = {}
    # The best outputs of so short a training are mostly empty: the 4-best lists with their scores show more.
    for nbest in (1, 4):
        result = run_cli(
            "decoder", f"--output_dir={output_dir}", f"--decode_from_file={source_file}",
            f"--decode_to_file={decoded_file}", f"--nbest={nbest}", "--quiet",
        )
        assert result.returncode == 0, result.stderr
        decoded[nbest] = decoded_file.read_text(encoding="utf-8").splitlines()
    return {
        "losses": _losses(output_dir / "train"),
        "weights": _weight_digest(str(output_dir / "checkpoints" / "ckpt-50")),
        "decoded": decoded[1],
        "decoded_4best": decoded[4],
    }


@pytest.fixture(scope="module")
def golden(golden_run):
    if RECORD:
        os.makedirs(os.path.dirname(GOLDEN_FILE), exist_ok=True)
        with open(GOLDEN_FILE, "w", encoding="utf-8") as f:
            json.dump(golden_run, f, indent=1, sort_keys=True, ensure_ascii=False)
            f.write("\n")
    with open(GOLDEN_FILE, encoding="utf-8") as f:
        return json.load(f)


def test_training_losses_are_the_golden_ones(golden_run, golden):
    assert len(golden["losses"]) == 50
    np.testing.assert_allclose(golden_run["losses"], golden["losses"], rtol=RELATIVE_TOLERANCE)


def test_trained_weights_are_the_golden_ones(golden_run, golden):
    actual, expected = golden_run["weights"], golden["weights"]
    assert sorted(actual) == sorted(expected) and len(expected) > 20
    for name, want in expected.items():
        got = actual[name]
        assert got["shape"] == want["shape"], name
        n = max(1, int(np.prod(want["shape"])))
        # A sum of n float32 terms is compared against the size of its terms: sqrt(n * sum of squares) >= sum |x|.
        np.testing.assert_allclose(got["sum"], want["sum"], rtol=RELATIVE_TOLERANCE,
                                   atol=RELATIVE_TOLERANCE * (n * want["sum_of_squares"]) ** 0.5, err_msg=name)
        np.testing.assert_allclose(got["sum_of_squares"], want["sum_of_squares"], rtol=RELATIVE_TOLERANCE, err_msg=name)
        np.testing.assert_allclose(got["first"], want["first"], rtol=RELATIVE_TOLERANCE, atol=1e-9, err_msg=name)


def test_decoded_toy_test_sentences_are_the_golden_ones(golden_run, golden):
    assert len(golden["decoded"]) == DECODED_SENTENCES
    assert golden_run["decoded"] == golden["decoded"]
    assert len(golden["decoded_4best"]) == 4 * DECODED_SENTENCES
    assert golden_run["decoded_4best"] == golden["decoded_4best"]
