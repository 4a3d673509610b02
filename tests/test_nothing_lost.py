"""Nothing lost, nothing silent: no tool writes over a file it reads, a re-run keeps what a finished run recorded,
every refusal comes before anything is written or regenerated, and mistakes in a user's code, data or flags are
one line (exit 2) with the files unchanged (checksums before and after)."""

import hashlib
import json
import os
import shutil

import pytest
from conftest import TINY_RUN_FLAGS, copy_run, run_cli, run_cli_in_process

USER_PROBLEM = '''
from t2t_repro.data.translation import TranslationProblem
from t2t_repro.evaluate.scorers import BleuScorer
from t2t_repro.registry import register_problem


@register_problem
class MyEnDe(TranslationProblem):
    name = "nothing_lost_ende"
    source_language = "en"
    target_language = "de"
    vocab_size = {vocab_size}
    scorer = BleuScorer("de")

    def raw_pairs(self, split, tmp_dir, manual_dir):
        for number, pair in enumerate(super().raw_pairs(split, tmp_dir, manual_dir)):
            if "{fail}" and number == 5:
                raise ValueError("{fail}")
            yield pair
'''
SHORT_RUN = ["--train_steps=1", "--eval_steps=1000", "--eval_decode_sentences=0", "--skip_average", "--skip_test",
             "--skip_export"]


def checksums(directory):
    """{relative path: sha256} of every file under `directory`."""
    found = {}
    for parent, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(parent, name)
            with open(path, "rb") as f:
                found[os.path.relpath(path, directory)] = hashlib.sha256(f.read()).hexdigest()
    return found


def error_line(result):
    """The one error line of a refused command (exit 2, no traceback)."""
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and result.stderr.count(": error: ") == 1, result.stderr
    return result.stderr.strip().splitlines()[-1]


def write_user_dir(directory, vocab_size=400, fail=""):
    directory.mkdir(exist_ok=True)
    (directory / "__init__.py").write_text("from . import my_problem  # noqa\n", encoding="utf-8")
    (directory / "my_problem.py").write_text(USER_PROBLEM.format(vocab_size=vocab_size, fail=fail), encoding="utf-8")
    return directory


@pytest.fixture(scope="module")
def user_run(tmp_path_factory, parallel_text_dir):
    """A one-step run of a user's problem (a 400-piece vocabulary: another than the shared runs') and its dirs."""
    root = tmp_path_factory.mktemp("user_run")
    usr_dir = write_user_dir(root / "usr")
    data_dir, output_dir = root / "data", root / "run"
    result = run_cli("trainer", *TINY_RUN_FLAGS, *SHORT_RUN, f"--t2t_usr_dir={usr_dir}",
                     "--problem=nothing_lost_ende", f"--manual_dir={parallel_text_dir}", f"--data_dir={data_dir}",
                     f"--output_dir={output_dir}")
    assert result.returncode == 0, result.stdout + result.stderr
    return usr_dir, data_dir, output_dir


# Data loss --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("flags", [
    ["--decode_from_file={source}", "--decode_to_file={source}"],
    ["--decode_from_file={source}", "--decode_to_file={link}"],
    ["--decode_from_file={source}", "--score_file={reference}", "--decode_to_file={reference}"],
])
def test_the_decoder_never_writes_over_a_file_it_reads(trained_run, parallel_text_dir, tmp_path, flags):
    source, reference = tmp_path / "test.en", tmp_path / "test.de"
    shutil.copy(parallel_text_dir / "test.en", source)
    shutil.copy(parallel_text_dir / "test.de", reference)
    (tmp_path / "link.en").symlink_to(source)
    before = checksums(tmp_path)
    argv = [flag.format(source=source, reference=reference, link=tmp_path / "link.en") for flag in flags]
    line = error_line(run_cli_in_process("decoder", f"--output_dir={trained_run}", *argv))
    assert "writing it would replace what is read" in line
    assert checksums(tmp_path) == before


def test_a_rerun_keeps_the_report_and_exports_nothing_new_and_keeps_its_user_dir(trained_run, tmp_path, tiny_data_dir):
    run = copy_run(trained_run, tmp_path)
    report = json.loads((run / "report.json").read_text())
    unrelated = tmp_path / "unrelated"
    unrelated.mkdir()
    (unrelated / "__init__.py").write_text("", encoding="utf-8")
    result = run_cli_in_process("trainer", *TINY_RUN_FLAGS, "--train_steps=12", "--skip_test",
                                f"--t2t_usr_dir={unrelated}", f"--data_dir={tiny_data_dir}", f"--output_dir={run}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "already holds this model" in result.stdout
    rerun = json.loads((run / "report.json").read_text())
    for key in ("bleu", "decode", "test_sentences", "checkpoint", "target_tokens_per_s"):
        assert rerun[key] == report[key], key
    assert rerun["export"] == str(run / "export" / "1")
    assert rerun["best"].keys() == report["best"].keys()
    assert sorted(os.listdir(run / "export")) == ["1"]
    # The run was not made with the unrelated directory, so run.json does not say it was.
    assert json.loads((run / "run.json").read_text())["t2t_usr_dir"] == ""


def test_a_rerun_after_more_training_keeps_the_earlier_report_whole(trained_run, tmp_path, tiny_data_dir):
    run = copy_run(trained_run, tmp_path)
    earlier = (run / "report.json").read_text()
    result = run_cli_in_process("trainer", *TINY_RUN_FLAGS, "--train_steps=13", "--skip_test", "--skip_export",
                                f"--data_dir={tiny_data_dir}", f"--output_dir={run}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (run / "report_step_12.json").read_text() == earlier
    assert json.loads((run / "report.json").read_text())["steps"] == 13


def test_a_restart_refused_for_another_vocabulary_regenerates_nothing(user_run, tmp_path, parallel_text_dir):
    usr_dir, data_dir, output_dir = user_run
    changed = write_user_dir(tmp_path / "usr", vocab_size=350)  # the same problem, another vocabulary size
    before = checksums(data_dir), checksums(output_dir)
    line = error_line(run_cli("trainer", *TINY_RUN_FLAGS, *SHORT_RUN, "--train_steps=2", f"--t2t_usr_dir={changed}",
                              "--problem=nothing_lost_ende", f"--manual_dir={parallel_text_dir}",
                              f"--data_dir={data_dir}", f"--output_dir={output_dir}"))
    assert "now trains another vocabulary" in line and "nothing was regenerated" in line
    assert (checksums(data_dir), checksums(output_dir)) == before


# Silent wrong results ---------------------------------------------------------------------------------------------


def test_a_checkpoint_of_a_run_with_another_vocabulary_is_refused(trained_run, user_run, tmp_path, parallel_text_dir):
    files = [f"--decode_from_file={parallel_text_dir / 'test.en'}", f"--decode_to_file={tmp_path / 'out'}"]
    other = user_run[2] / "checkpoints" / "ckpt-1"
    line = error_line(run_cli_in_process("decoder", f"--output_dir={trained_run}", f"--checkpoint={other}", *files))
    assert f"is of the run {user_run[2]}, which trained with another vocabulary" in line
    loose = tmp_path / "loose"
    loose.mkdir()
    for name in os.listdir(other.parent):
        if name.startswith("ckpt-1."):
            shutil.copy(other.parent / name, loose)
    line = error_line(run_cli_in_process("decoder", f"--output_dir={trained_run}",
                                         f"--checkpoint={loose / 'ckpt-1'}", *files))
    assert "is not in a t2t-repro run directory" in line
    assert "argument --checkpoint: empty" in error_line(
        run_cli_in_process("decoder", f"--output_dir={trained_run}", "--checkpoint=", *files))
    assert not (tmp_path / "out").exists()


def test_corpus_files_changed_after_datagen_are_refused_not_reused(parallel_text_dir, tmp_path):
    manual = tmp_path / "manual"
    shutil.copytree(parallel_text_dir, manual)
    argv = ["--problem=wmt_ende", f"--data_dir={tmp_path / 'data'}", f"--manual_dir={manual}"]
    assert run_cli_in_process("datagen", *argv).returncode == 0
    os.utime(manual / "train.en")  # a new time, the same content: reused
    assert "reused" in run_cli_in_process("datagen", *argv).stdout
    before = checksums(tmp_path / "data")
    text = (manual / "train.en").read_text(encoding="utf-8")
    (manual / "train.en").write_text("X" + text[1:], encoding="utf-8")  # edited in place, the same size
    line = error_line(run_cli_in_process("datagen", *argv))
    assert f"{manual / 'train.en'} changed (its content differs) after the data of problem wmt_ende" in line
    assert checksums(tmp_path / "data") == before


# Tracebacks and the user-code boundary -----------------------------------------------------------------------------


def test_user_code_that_exits_or_raises_or_returns_wrongly_is_one_line_naming_its_place(tmp_path, trained_run,
                                                                                       parallel_text_dir):
    exits = tmp_path / "exits"
    exits.mkdir()
    (exits / "__init__.py").write_text("import sys\nsys.exit(0)\n", encoding="utf-8")
    for module, flags in (("trainer", ["--problem=toy_ende", "--hparams=transformer_tiny"]),
                          ("decoder", ["--decode_from_file=x", "--decode_to_file=y"])):
        line = error_line(run_cli_in_process(module, f"--t2t_usr_dir={exits}", f"--output_dir={tmp_path / 'out'}",
                                             *flags))
        assert f"called sys.exit(0) at {exits / '__init__.py'}:2" in line
    assert not (tmp_path / "out").exists()

    hparams = tmp_path / "hparams"
    hparams.mkdir()
    (hparams / "__init__.py").write_text("from t2t_repro.registry import register_hparams\n\n\n@register_hparams\n"
                                         "def dict_set():\n    return {'d_model': 3}\n", encoding="utf-8")
    # A subprocess: the set must not stay registered in this process, whose other tests check every set.
    line = error_line(run_cli("trainer", f"--t2t_usr_dir={hparams}", "--problem=toy_ende", "--hparams=dict_set",
                              f"--output_dir={tmp_path / 'out'}"))
    assert "hparams set dict_set" in line and "returned dict, not HParams" in line

    raising = write_user_dir(tmp_path / "raising", fail="a bad line in my corpus")
    line = error_line(run_cli("datagen", f"--t2t_usr_dir={raising}", "--problem=nothing_lost_ende",
                              f"--manual_dir={parallel_text_dir}", f"--data_dir={tmp_path / 'data'}"))
    assert f"failed at {raising / 'my_problem.py'}:" in line and "ValueError: a bad line in my corpus" in line
    assert not (tmp_path / "data").exists() and not (tmp_path / "out").exists()


@pytest.mark.parametrize("vocab_size, message", [(1, "is too small"), (2, "is too small"),
                                                 (2**31, "is over 1,000,000")])
def test_a_vocab_size_sentencepiece_cannot_take_is_one_line(parallel_text_dir, tmp_path, vocab_size, message):
    overrides = f"source_language=en,target_language=de,vocab_size={vocab_size}"
    line = error_line(run_cli_in_process("datagen", "--problem=translate_files", f"--problem_overrides={overrides}",
                                         f"--manual_dir={parallel_text_dir}", f"--data_dir={tmp_path / 'data'}"))
    assert line.split(": error: ")[1].startswith("vocab_size=") and message in line
    assert not (tmp_path / "data").exists()


def test_a_runaway_target_line_is_not_scored_and_the_others_are(trained_run, parallel_text_dir, tmp_path):
    sources = (parallel_text_dir / "test.en").read_text(encoding="utf-8").splitlines()[:3]
    targets = (parallel_text_dir / "test.de").read_text(encoding="utf-8").splitlines()[:2] + [" ".join(["Haus"] * 3000)]
    (tmp_path / "s.en").write_text("\n".join(sources) + "\n", encoding="utf-8")
    (tmp_path / "t.de").write_text("\n".join(targets) + "\n", encoding="utf-8")
    result = run_cli_in_process("decoder", f"--output_dir={trained_run}", f"--decode_from_file={tmp_path / 's.en'}",
                                f"--score_file={tmp_path / 't.de'}", "--quiet")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 3 and lines[2] == "0.000000\t0\t0.000000" and lines[0] != lines[2]
    assert "scored 2 of 3 pairs" in result.stderr


# Smaller ----------------------------------------------------------------------------------------------------------


def test_decoder_input_that_is_not_utf8_and_bad_settings_are_refused_before_the_model_loads(trained_run, tmp_path):
    source = tmp_path / "in.en"
    source.write_bytes(b"the cat\ncaf\xe9\n")
    line = error_line(run_cli_in_process("decoder", f"--output_dir={trained_run}", f"--decode_from_file={source}",
                                         f"--decode_to_file={tmp_path / 'out'}"))
    assert f"{source}:2: not UTF-8 text" in line
    source.write_text("the cat\n", encoding="utf-8")
    result = run_cli_in_process("decoder", f"--output_dir={trained_run}", f"--decode_from_file={source}",
                                f"--decode_to_file={tmp_path / 'out'}", "--nbest=8")
    assert "nbest=8 is larger than the beam size 4" in error_line(result)
    assert "using checkpoint" not in result.stderr  # refused from the run's records, no model restored
    assert not (tmp_path / "out").exists()


def test_failed_commands_leave_no_empty_directory_and_a_directory_is_not_called_missing(trained_run, tmp_path,
                                                                                        parallel_text_dir):
    out = tmp_path / "figures" / "attention"
    error_line(run_cli_in_process("visualize", f"--output_dir={trained_run}", f"--out={out}", "--sentence=the cat",
                                  "--layer=9"))
    assert not (tmp_path / "figures").exists()
    manual = tmp_path / "manual"
    shutil.copytree(parallel_text_dir, manual)
    (manual / "dev.en").unlink()
    (manual / "dev.en").mkdir()
    line = error_line(run_cli_in_process("datagen", "--problem=wmt_ende", f"--manual_dir={manual}",
                                         f"--data_dir={tmp_path / 'data' / 'nested'}"))
    assert f"{manual / 'dev.en'} is a directory, not a text file" in line
    assert not (tmp_path / "data").exists()
