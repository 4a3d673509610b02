"""SavedModel export: loads without this project, answers as t2t-repro-decoder does, runs under
saved_model_cli, and is versioned atomically (TensorFlow Serving's layout)."""

import base64
import json
import os
import shutil
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import tensorflow as tf

from t2t_repro.cli import decoder, exporter
from t2t_repro.cli.common import run_main
from t2t_repro.errors import UserError
from t2t_repro.run import jobs
from t2t_repro.serve import versions
from t2t_repro.serve.export_files import read_export_metadata

# Loads a SavedModel in a fresh interpreter (-I: no user site, no PYTHONPATH, no current directory) where
# importing t2t_repro fails, runs both signatures and prints their outputs as JSON.
_ISOLATED_LOADER = r"""
import base64, importlib.abc, json, sys

class RefuseProject(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "t2t_repro":
            raise ImportError("this process must not use t2t_repro: " + name)

sys.meta_path.insert(0, RefuseProject())
import tensorflow as tf
import tensorflow_text  # registers the SentencePiece ops

request = json.load(sys.stdin)
loaded = tf.saved_model.load(request["path"])
texts = [base64.b64decode(text) for text in request["texts"]]
text = loaded.signatures["serving_default"](inputs=tf.constant(texts))
ids = loaded.signatures["ids"](inputs=tf.constant(request["ids"], tf.int32))
print(json.dumps({
    "outputs": [o.decode("utf-8") for o in text["outputs"].numpy()],
    "scores": text["scores"].numpy().tolist(),
    "ids": ids["outputs"].numpy().tolist(),
    "id_scores": ids["scores"].numpy().tolist(),
    "signatures": sorted(loaded.signatures),
    "project_modules": sorted(m for m in sys.modules if m.split(".")[0] == "t2t_repro"),
}))
"""

# What saved_model_cli is, with the tensorflow-text ops registered first (the graph needs them).
_SAVED_MODEL_CLI = "import sys, tensorflow_text; from tensorflow.python.tools import saved_model_cli as c; " \
                   "sys.argv[0] = 'saved_model_cli'; c.main()"


def _isolated_run(version_dir, texts, ids):
    """Runs both signatures of the SavedModel in an interpreter where t2t_repro cannot be imported; `texts`
    are str or bytes (any bytes, even invalid UTF-8)."""
    texts = [base64.b64encode(t if isinstance(t, bytes) else t.encode("utf-8")).decode("ascii") for t in texts]
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    completed = subprocess.run(
        [sys.executable, "-I", "-c", _ISOLATED_LOADER], input=json.dumps({"path": str(version_dir), "texts": texts,
                                                                           "ids": ids}),
        capture_output=True, text=True, timeout=300, cwd="/", env=env,
    )
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout.strip().splitlines()[-1])


def _sources(parallel_text_dir):
    lines = (parallel_text_dir / "test.en").read_text(encoding="utf-8").splitlines()[:8]
    long_line = " ".join(["the big red car sees the small old tree"] * 5)  # > max_length 32: truncated by both
    return lines + ["", "   ", "Grüße aus Köln, 漢字 ✓ — “quoted”", long_line]


def test_exporter_writes_version_1_with_its_settings(exported_model, serving_run):
    assert exported_model.name == "1" and versions.list_versions(exported_model.parent) == [1]
    assert (exported_model / "saved_model.pb").is_file() and (exported_model / "variables").is_dir()
    metadata = read_export_metadata(exported_model)
    assert metadata["problem"] == "wmt_ende"
    # max_input_length defaults to the run's hparams.max_length, as in t2t-repro-decoder.
    assert metadata["decode"] == {"beam_size": 4, "alpha": 0.6, "extra_length": 6, "max_input_length": 32,
                                  "unfinished_compete": False}
    assert metadata["checkpoint"] == str(serving_run / "checkpoints" / "ckpt-1") and metadata["step"] == 1
    data_dir = json.loads((serving_run / "run.json").read_text())["data_dir"]
    vocab_model = os.path.join(data_dir, "wmt_ende", "vocab.model")
    assert (exported_model / "assets.extra" / "vocab.model").read_bytes() == open(vocab_model, "rb").read()
    assert not [name for name in os.listdir(exported_model.parent) if name.startswith(".")]


def test_export_runs_without_the_project_and_matches_the_decoder(exported_model, serving_run, parallel_text_dir,
                                                                 tmp_path):
    from t2t_repro.decode.transformer_search import beam_decode
    from t2t_repro.decode_settings import DecodeSettings
    from t2t_repro.special_tokens import EOS_ID
    from t2t_repro.run.restore import restore_run

    sources = _sources(parallel_text_dir)
    run = restore_run(serving_run)
    source_ids = [run.vocabularies.source.encode(text) + [EOS_ID] for text in sources[:3]]
    padded = np.zeros([3, max(map(len, source_ids))], np.int32)
    for row, ids in enumerate(source_ids):
        padded[row, : len(ids)] = ids
    invalid_utf8 = sources[1].encode("utf-8") + b" \xff\xfe caf\xc3"  # the graph replaces these bytes
    padded_with_space = "  " + sources[0] + " \u3000"
    isolated = _isolated_run(exported_model, sources + [invalid_utf8, padded_with_space], padded.tolist())
    assert isolated["project_modules"] == []
    assert isolated["signatures"] == ["attention", "ids", "serving_default"]

    # The decoder refuses a file that is not UTF-8 (naming the line); it decodes the other lines as the graph.
    source_file, target_file = tmp_path / "sources.en", tmp_path / "decoded.de"
    lines = [s.encode("utf-8") for s in sources] + [invalid_utf8, padded_with_space.encode("utf-8")]
    source_file.write_bytes(b"\n".join(lines) + b"\n")
    flags = [f"--output_dir={serving_run}", f"--decode_from_file={source_file}", f"--decode_to_file={target_file}",
             "--extra_length=6", "--quiet"]
    assert run_main(decoder._main, flags) == 2 and not target_file.exists()
    del lines[len(sources)]
    source_file.write_bytes(b"\n".join(lines) + b"\n")
    assert run_main(decoder._main, flags) == 0
    decoded = target_file.read_text(encoding="utf-8").split("\n")[:-1]
    assert isolated["outputs"][:len(sources)] + isolated["outputs"][len(sources) + 1:] == decoded
    assert all(decoded[i] for i in range(8)) and len(set(decoded)) > 4  # not a comparison of empty strings
    # Empty sources give "" and 0.0, as the decoder; surrounding whitespace is removed, as in the training data.
    assert isolated["outputs"][8:10] == ["", ""] and isolated["scores"][8:10] == [0.0, 0.0]
    assert isolated["outputs"][-1] == isolated["outputs"][0]

    ids, scores = beam_decode(run.model, padded, DecodeSettings(beam_size=4, alpha=0.6, extra_length=6))
    expected = ids.numpy()[:, 0]
    got = np.array(isolated["ids"])
    assert got.shape == expected.shape and (got == expected).all()
    np.testing.assert_allclose(isolated["id_scores"], scores.numpy()[:, 0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(isolated["scores"][:3], isolated["id_scores"], rtol=1e-5, atol=1e-5)


def test_saved_model_cli_shows_and_runs_the_export(exported_model, parallel_text_dir, tmp_path):
    shown = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "saved_model_cli"), "show", "--dir", str(exported_model),
         "--all"], capture_output=True, text=True, timeout=300,
    )
    assert shown.returncode == 0, shown.stderr
    assert "signature_def['serving_default']" in shown.stdout and "signature_def['ids']" in shown.stdout

    sentences = (parallel_text_dir / "test.en").read_text(encoding="utf-8").splitlines()[:2]
    ran = subprocess.run(
        [sys.executable, "-c", _SAVED_MODEL_CLI, "run", "--dir", str(exported_model), "--tag_set", "serve",
         "--signature_def", "serving_default", "--input_exprs", f"inputs={sentences!r}", "--outdir", str(tmp_path)],
        capture_output=True, text=True, timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
    )
    assert ran.returncode == 0, ran.stderr
    import tensorflow_text  # noqa: F401 - the graph's SentencePiece ops

    direct = tf.saved_model.load(str(exported_model)).signatures["serving_default"](inputs=tf.constant(sentences))
    assert np.load(tmp_path / "outputs.npy", allow_pickle=True).tolist() == direct["outputs"].numpy().tolist()
    np.testing.assert_allclose(np.load(tmp_path / "scores.npy"), direct["scores"].numpy(), rtol=1e-5)


def test_second_export_is_version_2_and_a_failed_one_leaves_nothing(exported_model, serving_run, tmp_path,
                                                                    monkeypatch, capfd):
    base = tmp_path / "export"
    shutil.copytree(exported_model, base / "1")
    stale = base / ".tmp-export-999999999-dead"  # left by an export whose process no longer exists
    stale.mkdir()
    capfd.readouterr()
    path = jobs.export(str(serving_run), export_dir=str(base), extra_length=2, beam_size=1)
    printed = capfd.readouterr()
    # SentencePiece's "normalizer.cc(51) LOG(INFO) ..." line, printed when the graph's tokenizer is made, is hidden.
    assert "LOG(INFO)" not in printed.err + printed.out, printed.err
    assert path == str(base / "2") and versions.list_versions(base) == [1, 2]
    assert read_export_metadata(path)["decode"]["beam_size"] == 1
    assert versions.latest_version_dir(base) == str(base / "2")
    assert sorted(os.listdir(base)) == ["1", "2"]

    def save_then_fail(module, directory, signatures=None):
        with open(os.path.join(directory, "saved_model.pb"), "wb") as f:
            f.write(b"half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tf.saved_model, "save", save_then_fail)
    with pytest.raises(UserError, match="No space left"):
        jobs.export(str(serving_run), export_dir=str(base), extra_length=2)
    assert sorted(os.listdir(base)) == ["1", "2"]


def test_a_full_disk_is_a_one_line_error_of_the_exporter(serving_run, tmp_path, monkeypatch, capsys):
    def save_then_fail(module, directory, signatures=None):
        with open(os.path.join(directory, "saved_model.pb"), "wb") as f:
            f.write(b"half")
        raise tf.errors.ResourceExhaustedError(None, None, "saved_model.pb; No space left on device")

    monkeypatch.setattr(tf.saved_model, "save", save_then_fail)
    base = tmp_path / "export"
    status = run_main(exporter._main, [f"--output_dir={serving_run}", f"--export_dir={base}", "--extra_length=2"])
    assert status == 2
    stderr = capsys.readouterr().err
    assert "Traceback" not in stderr and "No space left on device" in stderr.strip().splitlines()[-1]
    assert os.listdir(base) == []


def test_interrupted_or_failing_writes_publish_no_version(tmp_path):
    base = tmp_path / "models"

    def interrupted(path):
        (open(os.path.join(path, "saved_model.pb"), "wb")).close()
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        versions.write_new_version(str(base), interrupted)
    assert os.listdir(base) == []
    with pytest.raises(UserError, match="holds no version"):
        versions.latest_version_dir(str(base))


def test_concurrent_exports_get_distinct_increasing_versions(tmp_path):
    base = str(tmp_path / "models")
    published = []

    def slow_write(path):
        time.sleep(0.05)
        with open(os.path.join(path, "saved_model.pb"), "w") as f:
            f.write(path)

    threads = [threading.Thread(target=lambda: published.append(versions.write_new_version(base, slow_write)))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(published) == [os.path.join(base, str(n)) for n in (1, 2, 3, 4)]
    assert versions.list_versions(base) == [1, 2, 3, 4]


@pytest.mark.parametrize("flags, message", [
    ([], "required: --output_dir"),
    (["--output_dir={missing}"], "not found"),
    (["--output_dir={run}", "--beam_size=0"], "beam_size=0"),
    (["--output_dir={run}", "--checkpoint={run}/checkpoints/ckpt-999"], "ckpt-999 not found"),
])
def test_exporter_errors_are_one_line(serving_run, tmp_path, capsys, flags, message):
    flags = [flag.format(run=serving_run, missing=tmp_path / "nothing") for flag in flags]
    assert run_main(exporter._main, [*flags, f"--export_dir={tmp_path / 'export'}"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()  # the checkpoint restored, when it got that far
    assert ": error: " in lines[-1] and message in lines[-1], lines
    assert len(lines) <= 2 and all(line.startswith("using checkpoint ") for line in lines[:-1]), lines
    assert not (tmp_path / "export").exists() or versions.list_versions(tmp_path / "export") == []
