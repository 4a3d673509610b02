import dataclasses
import json

import pytest

from t2t_repro import catalog
from t2t_repro.cli import trainer
from t2t_repro.cli.common import run_main
from t2t_repro.errors import UserError
from t2t_repro.hparams_type import HParams, apply_overrides, field_names, parse_overrides
from t2t_repro.run.config import RunConfig
from t2t_repro.settings import field_types
from t2t_repro.train.options import TrainingOptions


def test_overrides_are_typed():
    values = parse_overrides("num_layers=4,dropout=0.3,shared_embedding=false,position_encoding=learned")
    assert values == {"num_layers": 4, "dropout": 0.3, "shared_embedding": False, "position_encoding": "learned"}
    assert isinstance(values["num_layers"], int)


def test_apply_overrides_returns_new_frozen_hparams():
    base = catalog.get_hparams("transformer_base")
    changed = apply_overrides(base, "num_layers=4")
    assert changed.num_layers == 4 and base.num_layers == 6
    with pytest.raises(Exception):
        changed.num_layers = 5


def test_unknown_key_names_valid_keys():
    with pytest.raises(UserError, match="num_layres.*valid keys:.*num_layers"):
        parse_overrides("num_layres=4")


@pytest.mark.parametrize(
    "text, pattern",
    [
        ("num_layers=four", "num_layers.*int"),
        ("dropout=high", "dropout.*float"),
        ("shared_embedding=maybe", "shared_embedding.*true or false"),
        ("num_layers", "key=value"),
    ],
)
def test_bad_values_are_clear_errors(text, pattern):
    with pytest.raises(UserError, match=pattern):
        parse_overrides(text)


def test_validation_of_values():
    base = catalog.get_hparams("transformer_base")
    with pytest.raises(UserError, match="position_encoding.*sinusoid, learned"):
        apply_overrides(base, "position_encoding=relative")
    with pytest.raises(UserError, match="dropout"):
        apply_overrides(base, "dropout=1.5")
    with pytest.raises(UserError, match="num_layers"):
        apply_overrides(base, "num_layers=0")


def test_json_round_trip():
    big = catalog.get_hparams("transformer_big")
    assert HParams.from_dict(json.loads(big.to_json())) == big
    assert big.differing_keys(catalog.get_hparams("transformer_big_enfr")) == ["dropout"]


def test_paper_settings():
    base = catalog.get_hparams("transformer_base")
    assert (base.num_layers, base.d_model, base.d_ff, base.num_heads, base.d_k, base.d_v) == (6, 512, 2048, 8, 64, 64)
    assert (base.dropout, base.label_smoothing, base.warmup_steps, base.train_steps) == (0.1, 0.1, 4000, 100_000)
    assert (base.adam_beta1, base.adam_beta2, base.adam_epsilon) == (0.9, 0.98, 1e-9)
    assert base.batch_tokens == 25_000 and base.checkpoint_average_count == 5
    assert base.norm_placement == "post" and base.shared_embedding and base.position_encoding == "sinusoid"
    assert base.attention_dropout == 0.0 and base.relu_dropout == 0.0
    big = catalog.get_hparams("transformer_big")
    assert (big.d_model, big.d_ff, big.num_heads, big.dropout, big.train_steps) == (1024, 4096, 16, 0.3, 300_000)
    assert big.checkpoint_average_count == 20
    assert catalog.get_hparams("transformer_big_enfr").dropout == 0.1
    parsing = catalog.get_hparams("transformer_parsing")
    assert (parsing.num_layers, parsing.d_model) == (4, 1024)


def test_transformer_small_is_the_set_for_small_real_corpora():
    small = catalog.get_hparams("transformer_small")
    assert (small.num_layers, small.d_model, small.d_ff, small.num_heads, small.d_k, small.d_v) == (3, 256, 1024, 4,
                                                                                                    64, 64)
    assert (small.dropout, small.label_smoothing, small.warmup_steps, small.batch_tokens) == (0.2, 0.1, 1000, 2048)
    assert small.checkpoint_average_count == 5 and small.max_length == 128 and small.train_steps == 3500
    base = catalog.get_hparams("transformer_base")
    kept = ("norm_placement", "shared_embedding", "position_encoding", "adam_beta2", "adam_epsilon", "precision")
    assert all(getattr(small, name) == getattr(base, name) for name in kept)


def test_trainer_hparams_help_lists_every_field_with_its_help_and_value(capsys):

    assert run_main(trainer._main, ["--hparams=transformer_big", "--hparams_overrides=dropout=0.2",
                                    "--hparams_help"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert sorted(lines) == sorted(field_names())
    assert lines["d_model"].split()[1] == "1024" and "section 3.1" in lines["d_model"]
    assert lines["dropout"].split()[1] == "0.2"


def test_trainer_flags_come_from_the_settings_fields(capsys):

    parser = trainer.build_parser()
    text = parser.format_help()
    for settings_class in (RunConfig, TrainingOptions):
        for field in dataclasses.fields(settings_class):
            if field.metadata:
                assert f"--{field.name}" in text
    assert run_main(trainer._main, ["--problem=toy_ende", "--hparams=transformer_tiny", "--output_dir=x",
                                    "--checkpoint_steps=0"]) == 2
    error = capsys.readouterr().err.strip()
    assert "checkpoint_steps=0" in error and "at least 1" in error and "\n" not in error


NUMBERS = [name for name, kind in field_types(HParams).items() if kind in (int, float)]


@pytest.mark.parametrize("name", NUMBERS)
def test_every_number_has_a_range_and_must_be_finite(name):
    base = catalog.get_hparams("transformer_base")
    kind = field_types(HParams)[name]
    bad = [-1, 0] if kind is int else [-1.0, float("nan"), float("inf"), -float("inf")]
    for value in bad:
        with pytest.raises(UserError, match=f"hparams {name}="):
            dataclasses.replace(base, **{name: value})


@pytest.mark.parametrize("override, message", [
    ("adam_beta1=2", r"adam_beta1=2.0: must be in \[0, 1\)"),
    ("adam_beta2=1", r"adam_beta2=1.0: must be in \[0, 1\)"),
    ("label_smoothing=1", r"label_smoothing=1.0: must be in \[0, 1\)"),
    ("learning_rate_scale=0", "learning_rate_scale=0.0: must be greater than 0"),
    ("layer_norm_epsilon=-1e-6", "layer_norm_epsilon=-1e-06: must be greater than 0"),
    ("adam_epsilon=0", "adam_epsilon=0.0: must be greater than 0"),
    ("max_length=1", "max_length=1: must be at least 2"),
    ("warmup_steps=0", "warmup_steps=0: must be at least 1"),
    ("dropout=nan", "dropout=nan: must be a finite number"),
    ("position_encoding=learned,max_position=100", "max_position=100 is below max_length=256"),
])
def test_out_of_range_overrides_are_refused(override, message):
    with pytest.raises(UserError, match=message):
        apply_overrides(catalog.get_hparams("transformer_base"), override)


def test_a_key_given_twice_is_refused():
    with pytest.raises(UserError, match="num_layers is given twice"):
        parse_overrides("num_layers=2,dropout=0.2,num_layers=3")


def test_saved_values_of_the_wrong_type_are_refused():
    with pytest.raises(UserError, match="num_layers='six': expected a value of type int"):
        HParams.from_dict({"num_layers": "six"})
    with pytest.raises(UserError, match="shared_embedding='yes': expected a value of type bool"):
        HParams.from_dict({"shared_embedding": "yes"})
    with pytest.raises(UserError, match="num_layers=True: expected a value of type int"):
        HParams.from_dict({"num_layers": True})
    assert HParams.from_dict({"dropout": 0}).dropout == 0  # an integer is a float


def test_every_registered_set_is_in_range():
    for name in catalog.HPARAMS.names():
        assert dataclasses.replace(catalog.get_hparams(name)) == catalog.get_hparams(name)
