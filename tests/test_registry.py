import subprocess
import sys

import pytest

from t2t_repro import catalog, registry
from t2t_repro.errors import UserError
from t2t_repro.hparams.table3 import TABLE3_ROWS


def test_unknown_hparams_name_lists_closest():
    with pytest.raises(UserError, match="transformer_base"):
        catalog.get_hparams("transformer_bsae")


def _first():
    pass


def _second():
    pass


def test_registry_rejects_duplicates_naming_both_definitions_and_bad_names():
    table = registry.Registry("thing")
    table.register("a_thing", _first)
    with pytest.raises(UserError, match=r"'a_thing' is registered twice: by .*test_registry.py:\d+ \(_first\) and "
                                        r"by .*test_registry.py:\d+ \(_second\)"):
        table.register("a_thing", _second)
    with pytest.raises(UserError, match="not snake_case"):
        table.register("CamelCase", _second)


def test_registry_help_lists_every_set_with_a_description():
    text = catalog.registry_help()
    for name in registry.HPARAMS.names():
        line = next(line for line in text.splitlines() if line.split()[:1] == [name])
        assert len(line.split()) > 1, f"{name} has no description"


def test_table3_has_a_set_per_row():
    counts = {}
    for row in TABLE3_ROWS:
        counts[row.row] = counts.get(row.row, 0) + 1
        catalog.get_hparams(row.hparams)
    assert counts == {"base": 1, "A": 4, "B": 2, "C": 7, "D": 4, "E": 1, "big": 1}


def test_trainer_registry_help_cli():
    result = subprocess.run(
        [sys.executable, "-m", "t2t_repro.cli.trainer", "--registry_help"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert "transformer_big_enfr" in result.stdout
