"""tools/benchmark.py: the dispatcher's JSON lines and table, its errors, the attention and train suites.

Speeds are never asserted: only that every measurement is reported, well formed and self-consistent.
"""

import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TOOLS = REPO / "tools"
sys.path.insert(0, str(TOOLS))

from benchmarks import cached_decode_flops, forward_matmul_flops, measurement  # noqa: E402

from t2t_repro import catalog  # noqa: E402


def _load_dispatcher():
    spec = importlib.util.spec_from_file_location("benchmark_dispatcher", TOOLS / "benchmark.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


DISPATCHER = _load_dispatcher()


@pytest.fixture
def run(capsys):
    """Runs the dispatcher in this process (TensorFlow is already loaded); returns (exit code, stdout, stderr)."""

    def run_dispatcher(*args):
        code = DISPATCHER.main(list(args))
        captured = capsys.readouterr()
        return subprocess.CompletedProcess(args, code, captured.out, captured.err)

    return run_dispatcher


def _run_script(script, *args):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=300,
                          env=env, cwd=str(REPO))


def _json_lines(completed):
    assert completed.returncode == 0, completed.stderr
    lines = [json.loads(line) for line in completed.stdout.splitlines()]
    for line in lines:
        assert set(line) >= {"suite", "metric", "value", "unit", "config"}
        assert isinstance(line["config"], dict)
    return {line["metric"]: line for line in lines}, lines


def test_attention_suite_reports_each_length_and_the_growth_exponent(run):
    by_metric, lines = _json_lines(run(
        "--suite=attention", "--hparams=transformer_tiny", "--min_length=8", "--max_length=32",
        "--warmup=1", "--repeats=2", "--json",
    ))
    assert {line["suite"] for line in lines} == {"attention"}
    times = [line for line in lines if line["metric"] == "self_attention_ms"]
    assert [line["config"]["n"] for line in times] == [8, 16, 32]
    assert all(line["value"] > 0 and line["unit"] == "ms" for line in times)
    weights = {line["config"]["n"]: line["value"] for line in lines if line["metric"] == "attention_weights_bytes"}
    # transformer_tiny has 4 heads: batch 1 x 4 heads x n x n float32 weights.
    assert weights == {n: 4 * n * n * 4 for n in (8, 16, 32)}
    assert all(line["value"] >= 0 for line in lines if line["metric"] == "peak_memory_growth_bytes")
    assert by_metric["time_growth_exponent"]["config"]["lengths"] == [8, 16, 32]
    # All three lengths are below d_model=128, so there is no fit restricted to n >= d_model.
    assert "time_growth_exponent_n_ge_d_model" not in by_metric


def test_train_suite_reports_throughput_and_mfu(run):
    by_metric, _ = _json_lines(run(
        "--suite=train", "--hparams=transformer_tiny", "--batch_sentences=2", "--src_len=4", "--tgt_len=5",
        "--jit_compile=false", "--warmup=1", "--repeats=3", "--json",
    ))
    tokens = by_metric["train_target_tokens_per_sec"]
    step = by_metric["train_step_ms"]
    assert tokens["config"]["compiled"] == "graph" and tokens["config"]["vocab_size"] == 37_000
    assert tokens["value"] == pytest.approx(2 * 5 / (step["value"] / 1e3))
    assert step["value"] == pytest.approx(statistics.median(step["config"]["round_step_ms"]))
    mfu = by_metric["mfu"]
    hparams = catalog.get_hparams("transformer_tiny")
    assert mfu["config"]["flops_per_step"] == 3 * forward_matmul_flops(hparams, 37_000, 2, 4, 5)
    # Each round's step against the matmul block of the same round, then the median.
    block_flops = by_metric["matmul_peak"]["config"]["block_flops"]
    rounds = zip(mfu["config"]["round_step_ms"], mfu["config"]["matmul_round_ms"])
    expected = statistics.median(mfu["config"]["flops_per_step"] / s / (block_flops / m) for s, m in rounds)
    assert mfu["value"] == pytest.approx(expected)
    peak = by_metric["matmul_peak"]["value"] * 1e9
    assert peak == pytest.approx(block_flops / statistics.median(mfu["config"]["matmul_round_ms"]) * 1e3)
    assert "peer" not in tokens


def test_keras_hub_peer_does_equal_work(run):
    pytest.importorskip("keras_hub")
    by_metric, _ = _json_lines(run(
        "--suite=train", "--hparams=transformer_tiny", "--batch_sentences=2", "--src_len=4", "--tgt_len=5",
        "--jit_compile=false", "--warmup=1", "--repeats=1", "--peer=keras_hub", "--json",
    ))
    tokens = by_metric["train_target_tokens_per_sec"]
    assert tokens["peer"] == "keras_hub"
    assert tokens["ratio"] == pytest.approx(tokens["value"] / tokens["peer_value"])
    # Same sizes, tied embeddings, same vocabulary: the same number of weights.
    assert tokens["config"]["peer_params"] == tokens["config"]["params"]
    assert by_metric["mfu"]["peer"] == "keras_hub"
    assert "peer" not in by_metric["matmul_peak"]


def test_float32_peer_has_the_measured_models_vocabularies(run):
    flags = ("--suite=train", "--hparams=transformer_tiny", "--batch_sentences=2", "--src_len=4", "--tgt_len=5",
             "--jit_compile=false", "--warmup=1", "--repeats=1", "--source_vocab_size=300", "--json")
    by_metric, _ = _json_lines(run(*flags, "--precision=mixed_bfloat16", "--peer=float32"))
    config = by_metric["train_target_tokens_per_sec"]["config"]
    # Separate vocabularies on both sides of the comparison: only the policy differs.
    assert config["source_vocab_size"] == 300 and config["peer_params"] == config["params"]
    refused = run(*flags, "--peer=keras_hub")  # one vocabulary only: refused before any model is built
    assert refused.returncode == 2 and "leave out --source_vocab_size" in refused.stderr.strip().splitlines()[-1]


TINY_DECODE_FLAGS = ("--suite=decode", "--hparams=transformer_tiny", "--decode_batch=2", "--src_len=4",
                     "--output_length=6", "--beam_size=2", "--repeats=2", "--json")


def test_decode_suite_compares_mixed_precision_with_float32_in_the_same_rounds(run):
    flags = TINY_DECODE_FLAGS
    by_metric, _ = _json_lines(run(*flags, "--precision=mixed_bfloat16", "--peer=float32"))
    cached = by_metric["decode_tokens_per_s_cached"]
    assert cached["peer"] == "float32" and cached["config"]["precision"] == "mixed_bfloat16"
    assert cached["peer_value"] == pytest.approx(2 * 6 / (cached["config"]["peer_batch_ms"] / 1e3))
    assert cached["ratio"] == pytest.approx(cached["value"] / cached["peer_value"])
    # MFU: each round's search against the bf16 matmul block of the same round, then the median.
    mfu, peak = by_metric["decode_mfu"], by_metric["matmul_peak"]
    flops = cached_decode_flops(catalog.get_hparams("transformer_tiny"), 37_000, 2, 2, 4, 6)
    assert mfu["config"]["flops_per_batch"] == flops and peak["config"]["dtype"] == "bfloat16"
    rounds = zip(mfu["config"]["round_batch_ms"], mfu["config"]["matmul_round_ms"])
    assert mfu["value"] == pytest.approx(statistics.median(flops / s / (peak["config"]["block_flops"] / m)
                                                           for s, m in rounds))
    assert mfu["peer"] == "float32" and mfu["peer_value"] > 0
    refused = run(*flags, "--peer=float32")
    assert refused.returncode == 2 and "give --precision" in refused.stderr.strip().splitlines()[-1]


def test_decode_suite_compares_the_xla_compiled_search_in_the_same_rounds(run):
    by_metric, _ = _json_lines(run(*TINY_DECODE_FLAGS, "--peer=xla"))
    cached = by_metric["decode_tokens_per_s_cached"]
    assert cached["peer"] == "xla"
    assert cached["peer_value"] == pytest.approx(2 * 6 / (cached["config"]["peer_batch_ms"] / 1e3))
    assert cached["ratio"] == pytest.approx(cached["value"] / cached["peer_value"])
    assert by_metric["decode_mfu"]["peer"] == "xla"


def test_human_table_is_aligned(run):
    completed = run("--suite=attention", "--hparams=transformer_tiny", "--min_length=16", "--max_length=32",
                     "--warmup=0", "--repeats=1")
    assert completed.returncode == 0, completed.stderr
    header, rule, *rows = completed.stdout.splitlines()
    assert header.split()[:4] == ["suite", "metric", "value", "unit"]
    assert set(rule) == {"-"}
    assert len(rows) == 3 * 2 + 1
    unit_column = header.index("unit")
    assert all(row[unit_column - 2] == " " and row[unit_column:].split()[0] in ("ms", "bytes", "exponent")
               for row in rows)


def test_missing_suite_is_one_line_and_exit_2(tmp_path):
    # A copy of the dispatcher whose benchmarks package has no suites, so the test does not depend on which
    # suites exist in the repository.
    (tmp_path / "benchmarks").mkdir()
    shutil.copy(TOOLS / "benchmark.py", tmp_path / "benchmark.py")
    shutil.copy(TOOLS / "benchmarks" / "__init__.py", tmp_path / "benchmarks" / "__init__.py")
    completed = _run_script(tmp_path / "benchmark.py", "--suite=decode", "--json")
    assert completed.returncode == 2
    assert completed.stdout == ""
    assert completed.stderr.strip().splitlines() == [
        f"benchmark.py: error: suite 'decode' is not available: {tmp_path / 'benchmarks' / 'decode.py'} "
        "does not exist"
    ]


def test_user_errors_are_one_line_and_exit_2(run):
    unknown_peer = run("--suite=attention", "--hparams=transformer_tiny", "--peer=nobody", "--max_length=64")
    assert unknown_peer.returncode == 2
    assert unknown_peer.stderr.strip().splitlines() == [
        f"{os.path.basename(sys.argv[0])}: error: suite 'attention' has no peer 'nobody' (peers it can run: none)"
    ]
    unknown_hparams = run("--suite=attention", "--hparams=transformer_tinyy", "--max_length=64")
    assert unknown_hparams.returncode == 2
    assert len(unknown_hparams.stderr.strip().splitlines()) == 1
    assert "unknown hparams set 'transformer_tinyy'" in unknown_hparams.stderr
    bad_lengths = run("--suite=attention", "--hparams=transformer_tiny", "--min_length=64", "--max_length=32")
    assert bad_lengths.returncode == 2 and "min_length <= max_length" in bad_lengths.stderr


def test_measurement_adds_the_ratio_to_a_comparison():
    assert measurement("m", 3.0, "ms", {"a": 1}) == {"metric": "m", "value": 3.0, "unit": "ms", "config": {"a": 1}}
    compared = measurement("m", 3.0, "ms", {}, peer="other", peer_value=2.0)
    assert (compared["peer"], compared["peer_value"], compared["ratio"]) == ("other", 2.0, 1.5)


def test_forward_flops_by_hand():
    # One layer, d_model=2, one head of width 2, d_ff=4, vocabulary 10, batch 1, source 3, target 2 tokens.
    hparams = catalog.get_hparams("transformer_tiny")
    tiny = type(hparams)(num_layers=1, d_model=2, d_ff=4, num_heads=1, d_k=2, d_v=2)
    self_projections = 2 * 2 * 6 + 2 * 2 * 2  # Q, K, V: 2 -> 6; output: 2 -> 2
    ffn = 2 * (2 * 2 * 4)
    encoder = 3 * (self_projections + 2 * 4 * 3 + ffn)  # products over 3 keys
    memory_kv = 3 * (2 * 2 * 4)  # K, V of the 3 source positions: 2 -> 4
    decoder = 2 * (self_projections + 2 * 4 * 2 + 2 * 2 * 2 + 2 * 4 * 3 + 2 * 2 * 2 + ffn)
    vocabulary = 2 * (2 * 2 * 10)
    assert forward_matmul_flops(tiny, 10, 1, 3, 2) == encoder + memory_kv + decoder + vocabulary


def test_cached_decode_flops_by_hand():
    # The layer of test_forward_flops_by_hand; 2 sentences of 3 source tokens, beam 2, 2 steps: step t's
    # self-attention has t keys, and each sentence is encoded once for both of its hypotheses.
    hparams = catalog.get_hparams("transformer_tiny")
    tiny = type(hparams)(num_layers=1, d_model=2, d_ff=4, num_heads=1, d_k=2, d_v=2)
    self_projections, ffn = 2 * 2 * 6 + 2 * 2 * 2, 2 * (2 * 2 * 4)
    encoding = 3 * (self_projections + 2 * 4 * 3 + ffn) + 3 * (2 * 2 * 4)
    step = [self_projections + 2 * 4 * keys + 2 * 2 * 2 + 2 * 4 * 3 + 2 * 2 * 2 + ffn + 2 * 2 * 10 for keys in (1, 2)]
    assert cached_decode_flops(tiny, 10, 2, 2, 3, 2) == 2 * (encoding + 2 * sum(step))
