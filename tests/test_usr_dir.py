"""--t2t_usr_dir: a user's own problems and hparams sets, imported from outside the package, recorded in the run so
that every later tool finds them, and every mistake in them reported in one line."""

import json
import os
import shutil
import textwrap

import pytest

from conftest import decode_with_cli, run_cli, run_cli_in_process, write_parallel_corpus
from t2t_repro.errors import UserError
from t2t_repro.registry import HPARAMS
from t2t_repro.usr_dir import import_usr_dir

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "usr_dir")
TINY = ("--hparams_overrides=max_length=32,warmup_steps=20,num_layers=1,d_model=32,d_ff=64,num_heads=2,d_k=16,"
        "d_v=16,batch_tokens=256")


def _package(directory, **modules):
    """A user package: __init__.py importing every module given as name=source."""
    directory.mkdir(parents=True)
    imports = "".join(f"from . import {name}  # noqa: F401\n" for name in modules)
    (directory / "__init__.py").write_text(imports)
    for name, source in modules.items():
        (directory / f"{name}.py").write_text(textwrap.dedent(source))
    return directory


def test_a_package_and_a_file_register_their_names_once(tmp_path):
    package = _package(tmp_path / "pkg", sets="""
        import dataclasses
        from t2t_repro.hparams.transformer import transformer_tiny
        from t2t_repro.registry import register_hparams

        @register_hparams
        def usr_test_package_set():
            '''A set of a package.'''
            return dataclasses.replace(transformer_tiny(), num_layers=1)
        """)
    assert import_usr_dir(package) == {"problems": [], "hparams": ["usr_test_package_set"]}
    assert import_usr_dir(str(package) + "/") == {"problems": [], "hparams": ["usr_test_package_set"]}  # once
    single = tmp_path / "single.py"
    single.write_text("from t2t_repro.registry import register_hparams\n"
                      "from t2t_repro.hparams.transformer import transformer_tiny\n"
                      "@register_hparams\ndef usr_test_file_set():\n    \"A set of a file.\"\n"
                      "    return transformer_tiny()\n")
    assert import_usr_dir(single)["hparams"] == ["usr_test_file_set"]
    assert HPARAMS.get("usr_test_file_set")().num_layers == 2


def test_mistakes_are_one_line_naming_the_users_file_and_line(tmp_path):
    with pytest.raises(UserError, match="no such file or directory"):
        import_usr_dir(tmp_path / "missing")
    (tmp_path / "plain").mkdir()
    with pytest.raises(UserError, match="is not a Python package: it has no __init__.py"):
        import_usr_dir(tmp_path / "plain")
    broken = _package(tmp_path / "broken", bad="x = 1\nundefined_name + 1\n")
    with pytest.raises(UserError) as error:
        import_usr_dir(broken)
    assert f"importing it failed at {broken / 'bad.py'}:2: NameError: name 'undefined_name' is not defined" in str(
        error.value)
    syntax = _package(tmp_path / "syntax", bad="def f(:\n")
    with pytest.raises(UserError, match=rf"{syntax / 'bad.py'}:1: SyntaxError"):
        import_usr_dir(syntax)
    twice = _package(tmp_path / "twice", again="""
        from t2t_repro.problems.wmt import WmtEnde
        from t2t_repro.registry import register_problem

        @register_problem
        class Again(WmtEnde):
            name = "wmt_ende"
        """)
    with pytest.raises(UserError, match=r"problem 'wmt_ende' is registered twice: by .*problems/wmt.py:\d+ \(WmtEnde\)"
                                        rf" and by {twice / 'again.py'}:\d+ \(Again\)"):
        import_usr_dir(twice)


def test_the_cli_says_it_in_one_line_and_shows_the_traceback_when_asked(tmp_path):
    broken = _package(tmp_path / "broken", bad="raise ValueError('bad value in my code')\n")
    quiet = run_cli("trainer", f"--t2t_usr_dir={broken}", "--registry_help")
    assert quiet.returncode == 2 and len(quiet.stderr.strip().splitlines()) == 1, quiet.stderr
    assert "bad.py:1: ValueError: bad value in my code (set T2T_REPRO_VERBOSE=1" in quiet.stderr
    verbose = run_cli("trainer", f"--t2t_usr_dir={broken}", "--registry_help",
                      env=dict(os.environ, T2T_REPRO_VERBOSE="1"))
    assert verbose.returncode == 2 and "Traceback (most recent call last)" in verbose.stderr


def test_registry_help_lists_the_users_names_beside_the_built_in_ones():
    result = run_cli_in_process("trainer", f"--t2t_usr_dir={EXAMPLE}", "--registry_help")
    assert result.returncode == 0, result.stderr
    lines = {line.split()[0]: line for line in result.stdout.splitlines() if line.startswith("  ")}
    assert "[t2t_usr_dir]" in lines["translate_en_es_local"] and "[t2t_usr_dir]" in lines["transformer_en_es_small"]
    assert "[t2t_usr_dir]" not in lines["wmt_ende"]


@pytest.fixture(scope="module")
def example_run(tmp_path_factory):
    """The example user directory, copied, trained for a few steps through the real trainer (datagen, training,
    averaging, test decoding, report, export)."""
    root = tmp_path_factory.mktemp("usr_run")
    usr_dir = shutil.copytree(EXAMPLE, root / "my_usr_dir", ignore=shutil.ignore_patterns("__pycache__"))
    corpus = write_parallel_corpus(root / "corpus", languages=("en", "es"))
    result = run_cli("trainer", f"--t2t_usr_dir={usr_dir}", "--problem=translate_en_es_local",
                     "--hparams=transformer_en_es_small", TINY, "--train_steps=8", "--checkpoint_steps=4",
                     "--eval_steps=8", "--eval_decode_sentences=2", f"--manual_dir={corpus}",
                     f"--data_dir={root / 'data'}", f"--output_dir={root / 'run'}")
    assert result.returncode == 0, result.stdout + result.stderr
    return root


def test_the_example_runs_from_datagen_to_decoding_and_later_tools_need_no_flag(example_run):
    info = json.loads((example_run / "run" / "run.json").read_text())
    assert info["t2t_usr_dir"] == str(example_run / "my_usr_dir")
    assert info["usr_names"] == {"problems": ["translate_en_es_local"], "hparams": ["transformer_en_es_small"]}
    report = json.loads((example_run / "run" / "report.json").read_text())
    assert report["bleu"]["lang"] == "es" and report["problem"] == "translate_en_es_local"
    decoded = decode_with_cli(example_run / "run", example_run / "corpus" / "test.en", example_run / "decoded.es")
    assert len(decoded) == 20


def test_a_moved_or_changed_user_directory_is_named_in_one_line(example_run, tmp_path):
    run = shutil.copytree(example_run / "run", tmp_path / "run")
    usr_dir = example_run / "my_usr_dir"
    moved = tmp_path / "moved_usr_dir"
    shutil.copytree(usr_dir, moved)
    shutil.rmtree(usr_dir)
    try:
        gone = run_cli_in_process("exporter", f"--output_dir={run}", f"--export_dir={tmp_path / 'export'}")
        assert gone.returncode == 2 and f"--t2t_usr_dir={usr_dir}, which no longer exists" in gone.stderr
        (moved / "my_problems.py").write_text((moved / "my_problems.py").read_text().replace(
            '"translate_en_es_local"', '"translate_en_es_renamed"'))
        changed = run_cli("exporter", f"--output_dir={run}", f"--t2t_usr_dir={moved}",
                          f"--export_dir={tmp_path / 'export'}")
        assert changed.returncode == 2, changed.stderr
        assert "no longer defines the problem translate_en_es_local" in changed.stderr
        assert not (tmp_path / "export").exists()
    finally:
        shutil.copytree(EXAMPLE, usr_dir, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))


def test_a_restart_records_where_the_runs_code_moved_and_nothing_else(example_run, tmp_path):
    run = shutil.copytree(example_run / "run", tmp_path / "run")
    moved = shutil.copytree(example_run / "my_usr_dir", tmp_path / "moved", ignore=shutil.ignore_patterns("__pycache__"))
    unrelated = tmp_path / "unrelated"
    unrelated.mkdir()
    (unrelated / "__init__.py").write_text("", encoding="utf-8")
    common = ["--problem=translate_en_es_local", "--hparams=transformer_en_es_small", TINY, "--train_steps=8",
              "--skip_average", "--skip_test", "--skip_export", f"--data_dir={example_run / 'data'}",
              f"--output_dir={run}"]
    refused = run_cli("trainer", f"--t2t_usr_dir={unrelated}", *common)
    assert refused.returncode == 2 and "no longer defines the problem translate_en_es_local" in refused.stderr
    assert json.loads((run / "run.json").read_text())["t2t_usr_dir"] == str(example_run / "my_usr_dir")
    result = run_cli("trainer", f"--t2t_usr_dir={moved}", *common)
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads((run / "run.json").read_text())["t2t_usr_dir"] == str(moved)
