"""Bad input through the command lines: one line on stderr and exit status 2, never a traceback, never a
silent wrong result, and nothing already written changed."""

import hashlib
import json
import os
import shutil

import pytest
from conftest import TINY_RUN_FLAGS, copy_run, run_cli_in_process

from t2t_repro.cli import datagen, decoder, exporter, serve, trainer
from t2t_repro.cli.common import run_main
from t2t_repro.errors import UserError
from t2t_repro.run.layout import RunLayout


def _one_line_error(capsys, *fragments):
    """The error line of a refused command (its last line on stderr, after any progress bar), checked to hold
    every fragment."""
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    lines = captured.err.strip().splitlines()
    assert ": error: " in lines[-1] and captured.err.count(": error: ") == 1, captured.err
    for fragment in fragments:
        assert fragment in lines[-1], lines[-1]
    return lines[-1]


# Datagen ---------------------------------------------------------------------------------------------------------


@pytest.fixture
def manual_dir(tmp_path, parallel_text_dir):
    copy = tmp_path / "manual"
    shutil.copytree(parallel_text_dir, copy)
    return copy


# Each damage is one line, so the files stay aligned (a misalignment is refused first, naming both counts).
@pytest.mark.parametrize("damage", [b"caf\xe9 au lait\n", b"\x00\x9f\x92\x96\xff binary\n", b"\xff\xfeU\x00T\x00F\x00\n"])
def test_manual_text_that_is_not_utf8_names_file_and_line(tmp_path, manual_dir, capsys, damage):
    dev = manual_dir / "dev.de"
    dev.write_bytes(dev.read_bytes().replace(b"\n", b"\n" + damage, 1))
    (manual_dir / "dev.en").write_bytes((manual_dir / "dev.en").read_bytes().replace(b"\n", b"\nextra\n", 1))
    argv = ["--problem=wmt_ende", f"--data_dir={tmp_path / 'data'}", f"--manual_dir={manual_dir}"]
    assert run_main(datagen._main, argv) == 2
    _one_line_error(capsys, f"{dev}:2: not UTF-8 text")
    assert not (tmp_path / "data").exists()  # nor the work directory, nor the data_dir the command created


@pytest.mark.parametrize("split", ["dev", "test"])
def test_empty_split_files_are_refused_before_any_work(tmp_path, manual_dir, capsys, split):
    for language in ("en", "de"):
        (manual_dir / f"{split}.{language}").write_bytes(b"")
    argv = ["--problem=wmt_ende", f"--data_dir={tmp_path / 'data'}", f"--manual_dir={manual_dir}"]
    assert run_main(datagen._main, argv) == 2
    _one_line_error(capsys, f"{split}.en", "empty")
    assert not (tmp_path / "data" / "wmt_ende").exists()


def test_a_split_left_without_examples_is_refused(tmp_path, manual_dir, capsys):
    # Every train pair has an empty side: the vocabulary pass refuses it. Every pair over the token limit: the
    # train split itself ends up empty, which training would read as an endless wait for a batch.
    too_long = " ".join("abcdefgh"[i % 8] for i in range(1100)) + "\n"  # 1,100 one-letter words, 2,200 bytes
    (manual_dir / "train.en").write_text(too_long * 3, encoding="utf-8")
    (manual_dir / "train.de").write_text(too_long.upper() * 3, encoding="utf-8")
    argv = ["--problem=wmt_ende", f"--data_dir={tmp_path / 'data'}", f"--manual_dir={manual_dir}"]
    assert run_main(datagen._main, argv) == 2
    _one_line_error(capsys, "the train split holds no example", "3 pairs dropped")
    assert not (tmp_path / "data").exists()  # nor the data_dir the command created


# The trainer -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("override, message", [
    ("max_length=1", "max_length=1: must be at least 2"),
    ("learning_rate_scale=-1", "learning_rate_scale=-1.0: must be greater than 0"),
    ("layer_norm_epsilon=-1e-6", "layer_norm_epsilon=-1e-06: must be greater than 0"),
    ("adam_beta1=2", "adam_beta1=2.0: must be in [0, 1)"),
    ("dropout=nan", "dropout=nan: must be a finite number"),
    ("num_layers=2,num_layers=3", "num_layers is given twice"),
])
def test_trainer_refuses_bad_overrides(tmp_path, capsys, override, message):
    # Refused before anything else: the (missing) --manual_dir is never looked at.
    argv = ["--problem=wmt_ende", "--hparams=transformer_tiny", f"--hparams_overrides={override}",
            f"--output_dir={tmp_path / 'out'}", f"--data_dir={tmp_path / 'data'}", f"--manual_dir={tmp_path / 'm'}"]
    assert run_main(trainer._main, argv) == 2
    _one_line_error(capsys, message)
    assert not os.path.exists(tmp_path / "out") and not os.path.exists(tmp_path / "data")


def test_max_length_that_no_train_pair_fits_is_refused(tiny_data_dir, tmp_path):
    flags = [f.replace("max_length=32", "max_length=3") for f in TINY_RUN_FLAGS]
    result = run_cli_in_process("trainer", *flags, "--train_steps=2", f"--data_dir={tiny_data_dir}",
                                f"--output_dir={tmp_path / 'out'}")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.endswith(": error: max_length=3: no train pair of problem wmt_ende fits; the shortest has 4 tokens "
                         "on its longer side (EOS included): raise hparams max_length")
    assert not (tmp_path / "out").exists()


def test_output_dir_naming_a_file_is_refused_and_the_file_kept(tiny_data_dir, tmp_path):
    taken = tmp_path / "notes.txt"
    taken.write_text("mine\n")
    result = run_cli_in_process("trainer", *TINY_RUN_FLAGS, "--train_steps=2", f"--data_dir={tiny_data_dir}",
                                f"--output_dir={taken}")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "is a file, not a directory" in result.stderr
    assert taken.read_text() == "mine\n"


def test_restart_with_another_problem_is_refused_before_its_data_is_generated(serving_run, tmp_path):
    run = copy_run(serving_run, tmp_path)
    saved = {name: (run / name).read_text() for name in ("run.json", "hparams.json")}
    result = run_cli_in_process("trainer", "--problem=toy_ende", *TINY_RUN_FLAGS[1:], "--train_steps=2",
                                f"--data_dir={tmp_path / 'data'}", f"--tmp_dir={tmp_path / 'tmp'}",
                                f"--output_dir={run}")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "holds a run of problem 'wmt_ende', not 'toy_ende'" in result.stderr
    assert "generating data" not in result.stdout
    assert not (tmp_path / "data").exists() and not (tmp_path / "tmp").exists()
    assert {name: (run / name).read_text() for name in saved} == saved


# A run's records -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, message", [
    ("{}", "run.json is not a t2t-repro run description: it lacks problem, hparams_set, hparams_overrides, data_dir"),
    ('{"problem": 3, "hparams_set": "t", "hparams_overrides": "", "data_dir": "d"}', "problem must be text"),
    ('{"problem": "wmt_ende", "hparams_set": "t", "hparams_overrides": "", "data_dir": "d", "x": 1}',
     "has unknown keys x"),
    ("[]", "run.json holds an array, not a JSON object"),
    ("[" * 5000 + "]" * 5000, "nested too deeply"),
])
@pytest.mark.parametrize("tool", ["decoder", "exporter"])
def test_a_damaged_run_json_is_one_line_for_the_decoder_and_the_exporter(serving_run, tmp_path, capsys, text,
                                                                            message, tool):
    run = copy_run(serving_run, tmp_path)
    (run / "run.json").write_text(text)
    source = tmp_path / "source.txt"
    source.write_text("the cat\n")
    if tool == "decoder":
        status = run_main(decoder._main, [f"--output_dir={run}", f"--decode_from_file={source}",
                                          f"--decode_to_file={tmp_path / 'out.txt'}", "--quiet"])
    else:
        status = run_main(exporter._main, [f"--output_dir={run}", f"--export_dir={tmp_path / 'export'}"])
    assert status == 2
    _one_line_error(capsys, message)
    assert not (tmp_path / "out.txt").exists() and not (tmp_path / "export").exists()


def test_a_vocabulary_other_than_the_recorded_one_is_refused_by_every_tool(serving_run, tiny_data_dir, tmp_path,
                                                                          capsys):
    recorded = RunLayout(serving_run).load_info().vocabulary_sha256
    vocabulary_file = tiny_data_dir / "wmt_ende" / "vocab.model"
    assert recorded == hashlib.sha256(vocabulary_file.read_bytes()).hexdigest()
    run = copy_run(serving_run, tmp_path)
    info = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**info, "vocabulary_sha256": "0" * 64}))  # as if the data changed
    checkpoints = sorted(os.listdir(run / "checkpoints"))
    source = tmp_path / "source.txt"
    source.write_text("the cat\n")
    message = "vocabulary in"
    assert run_main(decoder._main, [f"--output_dir={run}", f"--decode_from_file={source}",
                                    f"--decode_to_file={tmp_path / 'out.txt'}", "--quiet"]) == 2
    _one_line_error(capsys, message, "is not the one this run trained with")
    assert run_main(exporter._main, [f"--output_dir={run}", f"--export_dir={tmp_path / 'export'}"]) == 2
    _one_line_error(capsys, message)
    restart = run_cli_in_process("trainer", *TINY_RUN_FLAGS, "--train_steps=2", f"--data_dir={tiny_data_dir}",
                                 f"--output_dir={run}")
    assert restart.returncode == 2 and message in restart.stderr.strip().splitlines()[-1], restart.stderr
    assert sorted(os.listdir(run / "checkpoints")) == checkpoints
    assert not (tmp_path / "out.txt").exists() and not (tmp_path / "export").exists()


@pytest.mark.parametrize("text, message", [
    ('{"num_layers": "six"}', "hparams.json: hparams num_layers='six': expected a value of type int"),
    ('{"dropout": true}', "hparams dropout=True: expected a value of type float"),
    ('{"layer_norm_epsilon": -1}', "hparams layer_norm_epsilon=-1: must be greater than 0"),
    ('"transformer_base"', "hparams.json holds a string, not a JSON object"),
])
def test_a_damaged_hparams_json_is_a_user_error(serving_run, tmp_path, text, message):
    run = copy_run(serving_run, tmp_path)
    (run / "hparams.json").write_text(text)
    with pytest.raises(UserError) as error:
        RunLayout(run).load_hparams()
    assert message in str(error.value) and "\n" not in str(error.value)


def test_decoder_refuses_max_input_length_0(serving_run, tmp_path, capsys):
    source = tmp_path / "source.txt"
    source.write_text("the cat\n")
    argv = [f"--output_dir={serving_run}", f"--decode_from_file={source}", f"--decode_to_file={tmp_path / 'o.txt'}",
            "--max_input_length=0", "--quiet"]
    assert run_main(decoder._main, argv) == 2
    _one_line_error(capsys, "max_input_length=0: must be at least 2")
    assert not (tmp_path / "o.txt").exists()


def test_serve_refuses_a_model_dir_that_is_a_file(tmp_path, capsys):
    model_file = tmp_path / "saved_model.pb"
    model_file.write_bytes(b"not a directory")
    assert run_main(serve._main, [f"--model_dir={model_file}"]) == 2
    _one_line_error(capsys, f"{model_file} is a file, not an export directory")


def test_hparams_help_refuses_out_of_range_overrides(capsys):
    assert run_main(trainer._main, ["--hparams=transformer_tiny", "--hparams_overrides=adam_beta2=1",
                                    "--hparams_help"]) == 2
    _one_line_error(capsys, "adam_beta2=1.0: must be in [0, 1)")
    assert run_main(trainer._main, ["--hparams=transformer_tiny", "--hparams_overrides=adam_beta2=0.5",
                                    "--hparams_help"]) == 0
    assert json.dumps(0.5) in capsys.readouterr().out
