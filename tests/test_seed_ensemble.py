"""t2t-repro-trainer --ensemble_seeds: one command trains runs that differ in the seed alone, each the run its
seed trains alone, then decodes the test split and exports with them as one ensemble, as t2t-repro-decoder and
t2t-repro-exporter --ensemble do; what cannot be one is refused in one line before anything trains."""

import json

import numpy as np
import pytest

from conftest import TINY_RUN_FLAGS, run_cli_in_process
from test_trainer import _weights
from t2t_repro.run.config import RunConfig
from t2t_repro.run.seed_ensemble import ensemble_runs
from t2t_repro.serve.export_files import SAVED_MODEL_METADATA
from t2t_repro.train.options import TrainingOptions

# serving_run's flags (conftest) less its skipped test and export: the ensemble's end decodes and exports.
FLAGS = [*TINY_RUN_FLAGS, "--train_steps=1", "--eval_steps=1000", "--eval_decode_sentences=0", "--skip_average"]


@pytest.fixture(scope="module")
def seed_ensemble(tmp_path_factory, tiny_data_dir):
    """The output_dir of a two-run seed ensemble of seeds 0 and 1: the second is trained after the first in one
    process, and must still be serving_run (seed 1, the same flags)."""
    output_dir = tmp_path_factory.mktemp("seed_ensemble") / "out"
    result = run_cli_in_process("trainer", *FLAGS, "--seed=0", "--ensemble_seeds=2", f"--data_dir={tiny_data_dir}",
                                f"--output_dir={output_dir}")
    assert result.returncode == 0, result.stdout + result.stderr
    return output_dir


def test_each_run_of_the_ensemble_is_the_run_its_seed_trains_alone(seed_ensemble, serving_run):
    runs = json.loads((seed_ensemble / "ensemble.json").read_text())
    assert runs == {"runs": ["seed_0", "seed_1"], "seeds": [0, 1]}
    assert [json.loads((seed_ensemble / name / "run.json").read_text())["seed"] for name in runs["runs"]] == [0, 1]
    second = _weights(str(seed_ensemble / "seed_1/checkpoints/ckpt-1"))
    alone = _weights(str(serving_run / "checkpoints/ckpt-1"))
    assert second and second.keys() == alone.keys()
    assert all(np.array_equal(second[name], alone[name]) for name in alone)
    first = _weights(str(seed_ensemble / "seed_0/checkpoints/ckpt-1"))
    differing = [name for name in alone if not np.array_equal(first[name], alone[name])]
    assert len(differing) > len(alone) / 2  # another seed: other weights


def test_the_ensembles_test_decode_and_export_are_the_decoder_and_exporters_ensemble(seed_ensemble, parallel_text_dir):
    report = json.loads((seed_ensemble / "report.json").read_text())
    runs = [seed_ensemble / "seed_0", seed_ensemble / "seed_1"]
    assert report["steps"] == [1, 1]
    assert [(entry["output_dir"], entry["seed"]) for entry in report["ensemble"]] == [(str(run), seed) for seed, run
                                                                                       in enumerate(runs)]
    assert report["test_sentences"] == 20 and "bleu" in report
    decoded = seed_ensemble / "decoded.de"
    result = run_cli_in_process("decoder", f"--output_dir={runs[0]}", f"--ensemble={runs[1]}", "--quiet",
                                f"--decode_from_file={parallel_text_dir / 'test.en'}", f"--decode_to_file={decoded}")
    assert result.returncode == 0, result.stderr
    assert decoded.read_text() == (seed_ensemble / "test_decoded.txt").read_text()
    assert len(set(decoded.read_text().splitlines())) > 5  # varied outputs, not a comparison of empty ones
    assert not (runs[0] / "test_decoded.txt").exists()  # the runs' own test decodes and exports are skipped
    metadata = json.loads((seed_ensemble / "export/1" / SAVED_MODEL_METADATA).read_text())
    assert metadata["checkpoint"] == str(runs[0] / "checkpoints/ckpt-1")
    assert [member["output_dir"] for member in metadata["ensemble"]] == [str(runs[1])]


def test_the_time_budget_is_shared_equally_and_the_seeds_follow_seed(tmp_path):
    config = RunConfig(problem="toy_ende", hparams="transformer_tiny", output_dir=str(tmp_path), ensemble_seeds=3)
    runs = ensemble_runs(config, TrainingOptions(seed=5, max_train_minutes=60))
    assert [seed for seed, _, _ in runs] == [5, 6, 7]
    assert [run_config.output_dir for _, run_config, _ in runs] == [str(tmp_path / f"seed_{s}") for s in (5, 6, 7)]
    assert [(options.seed, options.max_train_minutes) for _, _, options in runs] == [(5, 20), (6, 20), (7, 20)]
    assert all(run_config.skip_test and run_config.skip_export for _, run_config, _ in runs)


@pytest.mark.parametrize("tool, flags, message", [
    ("trainer", ["{trainer}", "--output_dir={ensemble}"], "{ensemble} holds a seed ensemble (ensemble.json): resume "
                                                           "it with its --ensemble_seeds"),
    ("trainer", ["{trainer}", "--output_dir={single}", "--ensemble_seeds=2"], "{single} holds a single run, not a "
                                                                              "seed ensemble"),
    ("trainer", ["{trainer}", "--output_dir={ensemble}", "--ensemble_seeds=2", "--hparams_overrides=dropout=0.3"],
     "{ensemble}/seed_0 holds a run with different hparams ("),
    ("trainer", ["{trainer}", "--output_dir={new}", "--ensemble_seeds=2", "--strategy=multi_worker"],
     "--ensemble_seeds trains its models one after another in one process"),
    ("trainer", ["{trainer}", "--output_dir={new}", "--ensemble_seeds=0"], "ensemble_seeds=0: must be at least 1"),
    ("decoder", ["--output_dir={ensemble}", "--decode_from_file={sources}", "--decode_to_file={new}.txt"],
     "{ensemble} holds a seed ensemble, not one run: give one of its runs ({ensemble}/seed_0, {ensemble}/seed_1), "
     "or decode or export them together with --output_dir={ensemble}/seed_0 --ensemble={ensemble}/seed_1"),
])
def test_what_cannot_be_a_seed_ensemble_is_refused_in_one_line(seed_ensemble, serving_run, tiny_data_dir,
                                                               parallel_text_dir, tmp_path, tool, flags, message):
    names = {"ensemble": seed_ensemble, "single": serving_run, "new": tmp_path / "new",
             "sources": parallel_text_dir / "test.en"}
    before = sorted(path.relative_to(seed_ensemble) for path in seed_ensemble.rglob("*"))
    trainer = [*FLAGS, "--seed=0", f"--data_dir={tiny_data_dir}"]
    argv = [arg for flag in flags for arg in (trainer if flag == "{trainer}" else [flag.format(**names)])]
    result = run_cli_in_process(tool, *argv)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert message.format(**names) in result.stderr
    assert sorted(path.relative_to(seed_ensemble) for path in seed_ensemble.rglob("*")) == before
    assert not (tmp_path / "new").exists()
