import json
import os
import subprocess
import sys

import pytest

TOOL = os.path.join(os.path.dirname(__file__), os.pardir, "tools", "paper_tables.py")


@pytest.fixture(scope="module")
def table3():
    result = subprocess.run([sys.executable, TOOL, "--table", "3", "--json"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_table3_has_every_row(table3):
    assert len(table3) == 20
    keys = {"row", "hparams", "num_layers", "d_model", "d_ff", "num_heads", "d_k", "d_v", "vocab_size", "params"}
    for row in table3:
        assert keys <= set(row) and "paper_params" in row
        assert row["vocab_size"] == 37_000


def test_table3_parameter_counts_match_the_paper(table3):
    for row in table3:
        if row["paper_params"] is None:
            continue
        bound = 0.02 if row["row"] == "big" else 0.07
        ratio = row["params"] / row["paper_params"]
        assert abs(ratio - 1) <= bound, f"{row['hparams']}: {row['params']} vs paper {row['paper_params']}"


def test_table3_rows_differ_from_base_as_the_paper_says(table3):
    by_name = {row["hparams"]: row for row in table3}
    assert by_name["transformer_table3_a_heads1"]["num_heads"] == 1
    assert by_name["transformer_table3_a_heads1"]["d_k"] == 512
    assert by_name["transformer_table3_b_dk16"]["d_v"] == 64
    assert by_name["transformer_table3_c_dmodel256"]["d_k"] == 32
    # Row (A) keeps the amount of computation constant: every variant has base's parameter count.
    base = by_name["transformer_base"]["params"]
    assert all(row["params"] == base for row in table3 if row["row"] == "A")


# --- Tables 1 and 2, run in this process (tools/ on the path) to spare a TensorFlow start-up per test. -------

sys.path.insert(0, os.path.dirname(TOOL))
import paper_tables  # noqa: E402


def _json_rows(capsys, *argv):
    capsys.readouterr()
    assert paper_tables.main(list(argv)) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def _write_report(directory, **fields):
    directory.mkdir(parents=True, exist_ok=True)
    report = {"problem": "wmt_ende", "hparams_set": "transformer_base", "steps": 1000, "train_seconds": 5400.0,
              "devices": 2, "device_kind": "CPU", "bleu": {"sacrebleu": 20.5, "tokenized": 21.0,
                                                           "tokenized_compound_split": 21.4}, **fields}
    (directory / "report.json").write_text(json.dumps(report))
    return directory / "report.json"


def test_table2_recomputes_the_papers_transformer_costs(capsys):
    rows = _json_rows(capsys, "--table", "2", "--json")
    paper = [r for r in rows if r["kind"] == "paper"]
    assert len(paper) == 10 and paper[-1]["model"] == "Transformer (big)" and paper[-1]["bleu_ende"] == 28.4
    estimates = {r["model"]: r for r in rows if r["kind"] == "paper_estimate"}
    base, big = estimates["Transformer (base model)"], estimates["Transformer (big)"]
    # Section 6.1: 12 h x 8 P100 x 9.5 TFLOPS = 3.3e18; 3.5 days x 8 x 9.5 = 2.3e19 (two significant digits).
    assert float(f"{base['cost_flops']:.1e}") == 3.3e18 == base["paper_cost_flops"]
    assert float(f"{big['cost_flops']:.1e}") == 2.3e19 == big["paper_cost_flops"]
    assert base["cost_flops"] == pytest.approx(12 * 3600 * 8 * 9.5e12)
    # From the steps: 100K x 0.4 s is 11.1 h, a little under the stated 12 h; 300K x 1.0 s is 3.47 days.
    assert base["cost_flops_from_steps"] == pytest.approx(100_000 * 0.4 * 8 * 9.5e12)
    assert float(f"{big['cost_flops_from_steps']:.1e}") == 2.3e19


def test_table2_estimates_a_run_from_its_report(tmp_path, capsys):
    report = _write_report(tmp_path / "ours")
    p100 = _write_report(tmp_path / "on_p100", device_kind="P100", devices=8, train_seconds=3600.0)
    rows = _json_rows(capsys, "--table", "2", f"--report={report}", "--device_tflops=0.25", "--json")
    (run,) = [r for r in rows if r["kind"] == "run"]
    assert run["cost_flops"] == pytest.approx(1.5 * 2 * 0.25e12 * 3600)  # hours x devices x TFLOPS
    assert run["train_hours"] == 1.5 and run["tflops_source"] == "--device_tflops"
    assert run["bleu_tokenized"] == 21.4 and run["bleu_sacrebleu"] == 20.5
    # A P100 run takes the Table 2 footnote's figure; an output_dir stands for its report.json.
    rows = _json_rows(capsys, "--table", "2", f"--report={p100.parent}", "--json")
    (run,) = [r for r in rows if r["kind"] == "run"]
    assert run["device_tflops"] == 9.5 and run["cost_flops"] == pytest.approx(1 * 8 * 9.5e12 * 3600)


@pytest.mark.parametrize("recorded,tflops,source", [
    (dict(device_kind="GPU", device_name="NVIDIA H100 80GB HBM3", compute_capability=[9, 0],
          training_precision="mixed_bfloat16"), 989.4, "published bf16 peak of the H100"),
    (dict(device_kind="GPU", device_name="NVIDIA A100-SXM4-80GB", compute_capability=[8, 0],
          training_precision="float32", tf32=True), 156.0, "published tf32 peak of the A100"),
    (dict(device_kind="GPU", device_name="NVIDIA A100-SXM4-80GB", compute_capability=[8, 0],
          training_precision="float32", tf32=False), 19.5, "published fp32 peak of the A100"),
    (dict(device_kind="GPU", device_name="Tesla V100-SXM2-16GB", compute_capability=[7, 0],
          training_precision="mixed_float16"), 125.0, "published fp16 peak of the V100"),
])
def test_table2_takes_the_recorded_devices_published_peak(tmp_path, capsys, recorded, tflops, source):
    report = _write_report(tmp_path / "gpu_run", devices=8, train_seconds=3600.0, **recorded)
    (run,) = [r for r in _json_rows(capsys, "--table", "2", f"--report={report}", "--json") if r["kind"] == "run"]
    assert run["device_tflops"] == tflops and run["tflops_source"] == source
    assert run["cost_flops"] == pytest.approx(8 * tflops * 1e12 * 3600)


def _this_device_kind():
    import tensorflow as tf

    return "GPU" if tf.config.list_logical_devices("GPU") else "CPU"


def _other_device_kind():
    return "CPU" if _this_device_kind() == "GPU" else "GPU"


def test_table2_measures_this_device_when_no_figure_is_given(tmp_path, capsys):
    report = _write_report(tmp_path / "ours", train_seconds=7200.0, devices=1, device_kind=_this_device_kind())
    capsys.readouterr()
    assert paper_tables.main(["--table", "2", f"--report={report}"]) == 0
    out = capsys.readouterr().out
    assert "Transformer (big)" in out and "measured fp32 matmul peak" in out
    (run,) = [r for r in _json_rows(capsys, "--table", "2", f"--report={report}", "--json") if r["kind"] == "run"]
    assert run["device_tflops"] > 0 and run["cost_flops"] == pytest.approx(7200 * run["device_tflops"] * 1e12)


@pytest.mark.parametrize("case", ["missing", "not_a_report", "other_device", "bad_tflops"])
def test_table2_bad_report_is_one_line_and_exit_2(case, tmp_path, capsys):
    (tmp_path / "partial").mkdir()
    (tmp_path / "partial" / "report.json").write_text(json.dumps({"steps": 3}))
    argv = {
        "missing": [f"--report={tmp_path / 'nothing'}"],
        "not_a_report": [f"--report={tmp_path / 'partial'}"],
        # A run on the other kind of device than this machine's cannot be measured here.
        "other_device": [f"--report={_write_report(tmp_path / 'other', device_kind=_other_device_kind())}"],
        "bad_tflops": [f"--report={_write_report(tmp_path / 'ok')}", "--device_tflops=0"],
    }[case]
    capsys.readouterr()
    assert paper_tables.main(["--table", "2", *argv]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "error:" in err


def test_table1_states_the_claims_and_measures_the_growth(capsys):
    rows = _json_rows(capsys, "--table", "1", "--hparams=transformer_tiny", "--min_length=8", "--max_length=32",
                      "--warmup=0", "--repeats=1", "--json")
    claims = {r["layer"]: r for r in rows if r["kind"] == "claim"}
    assert claims["Self-Attention"]["complexity"] == "O(n^2 * d)"
    assert claims["Recurrent"]["complexity"] == "O(n * d^2)" and claims["Recurrent"]["max_path_length"] == "O(n)"
    assert claims["Convolutional"]["max_path_length"] == "O(log_k(n))"
    assert claims["Self-Attention (restricted)"]["complexity"] == "O(r * n * d)"
    measured = [r for r in rows if r["kind"] == "measurement"]
    assert [r["n"] for r in measured] == [8, 16, 32]
    assert all(r["time_ms"] > 0 for r in measured)
    # transformer_tiny: d_model=128, 4 heads of 32: projections 4 x 2 n d^2, products 2 x 2 n^2 d.
    assert [r["flops"] for r in measured] == [8 * 128 * 128 * n + 4 * 128 * n * n for n in (8, 16, 32)]
    assert measured[0]["time_exponent"] is None
    flop_exponents = [r["flops_exponent"] for r in measured[1:]]
    assert 1 < flop_exponents[0] < flop_exponents[1] < 2  # the n^2 d term grows in weight with n
    (summary,) = [r for r in rows if r["kind"] == "summary"]
    assert summary["quadratic_crossover_n"] == 2 * 128 and summary["lengths"] == [8, 16, 32]
    assert summary["last_time_exponent"] == measured[-1]["time_exponent"]
    assert isinstance(summary["approaches_2"], bool) and summary["verdict"]
