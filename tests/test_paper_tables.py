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
