"""tools/benchmark.py --suite data: datagen speed and memory, pipeline speed and padding, all reported."""

import importlib.util
import json
import sys
from pathlib import Path

from conftest import write_parallel_corpus

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))


def _dispatcher():
    spec = importlib.util.spec_from_file_location("benchmark_dispatcher_data", REPO / "tools" / "benchmark.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(capsys, *args):
    assert _dispatcher().main(["--suite=data", "--problem=wmt_ende", "--batch_tokens=256", "--json", *args]) == 0
    return {line["metric"]: line for line in map(json.loads, capsys.readouterr().out.splitlines())}


def test_data_suite_reports_datagen_and_pipeline_measurements(tmp_path, capsys):
    manual = write_parallel_corpus(tmp_path / "manual", sizes=(("train", 400), ("dev", 10), ("test", 10)))
    data_dir = f"--data_dir={tmp_path / 'data'}"
    by_metric = _run(capsys, f"--manual_dir={manual}", data_dir, "--workers=2", "--window_batches=3", "--warmup=1",
                     "--repeats=2")
    assert set(by_metric) == {"datagen_pairs_per_s", "datagen_peak_rss_bytes", "pipeline_target_tokens_per_s",
                              "padding_efficiency"}
    datagen = by_metric["datagen_pairs_per_s"]
    assert datagen["value"] > 0 and datagen["config"]["pairs"] == 420 and datagen["config"]["workers"] == 2
    assert datagen["config"]["bytes_written"] > 0 and datagen["config"]["cpu_seconds"] > 0
    assert len(datagen["config"]["load_average_before"]) == 3
    memory = by_metric["datagen_peak_rss_bytes"]
    assert memory["value"] >= memory["config"]["main_process_peak_bytes"] > 100 * 2**20
    pipeline = by_metric["pipeline_target_tokens_per_s"]
    assert pipeline["value"] > 0 and len(pipeline["config"]["window_rates"]) == 2
    assert pipeline["config"]["batch_tokens"] == 256 and pipeline["config"]["iterator_resumes_exactly"] is True
    assert 0.3 < by_metric["padding_efficiency"]["value"] <= 1.0
    # With the data there, datagen is not measured again.
    again = _run(capsys, data_dir, "--window_batches=2", "--warmup=0", "--repeats=1")
    assert list(again) == ["pipeline_target_tokens_per_s", "padding_efficiency"]
