"""Settings the library below would refuse, outputs that cannot be written and a user's code ending the tool: each
refused in one line (exit 2) before any work starts and before any model loads, with every file unchanged."""

import pytest
from conftest import run_cli_in_process, write_parallel_corpus
from test_nothing_lost import checksums, error_line

from t2t_repro.run import jobs

TRANSLATE_FILES = "source_language=en,target_language=de,vocab_size=300"

USER_PROBLEM = '''
import sys

from t2t_repro.data.translation import TranslationProblem
from t2t_repro.evaluate.scorers import BleuScorer
from t2t_repro.registry import register_problem


@register_problem
class EndingEnDe(TranslationProblem):
    name = "{name}"
    source_language, target_language = "en", "de"
    vocab_size = 300
    character_coverage = {coverage}
    scorer = BleuScorer("de")

    def raw_pairs(self, split, tmp_dir, manual_dir):
        {body}
        yield from super().raw_pairs(split, tmp_dir, manual_dir)
'''


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_parallel_corpus(tmp_path_factory.mktemp("corpus"), sizes=(("train", 40), ("dev", 4), ("test", 4)))


def _user_dir(directory, name, body="pass", coverage=None):
    """A user directory registering the problem `name` (a name of its own per test: they share one process)."""
    directory.mkdir()
    (directory / "__init__.py").write_text(USER_PROBLEM.format(name=name, body=body, coverage=coverage),
                                           encoding="utf-8")
    return directory


@pytest.mark.parametrize("name, call, said", [
    ("ending_ende", "sys.exit(0)", "called sys.exit(0) at "),
    ("ending_ende_saying_why", "sys.exit('no more data')", "called sys.exit('no more data') at "),
])
def test_a_users_problem_that_calls_sys_exit_is_one_line_naming_its_file(tmp_path, corpus, name, call, said):
    usr_dir = _user_dir(tmp_path / "usr", name, body=call)
    before = checksums(tmp_path)
    result = run_cli_in_process("trainer", f"--t2t_usr_dir={usr_dir}", f"--problem={name}",
                                "--hparams=transformer_tiny", f"--manual_dir={corpus}", f"--data_dir={tmp_path / 'd'}",
                                f"--output_dir={tmp_path / 'run'}")
    line = error_line(result)
    assert f"your code in --t2t_usr_dir={usr_dir}" in line and said in line and "__init__.py:" in line, line
    assert checksums(tmp_path) == before and not (tmp_path / "d").exists() and not (tmp_path / "run").exists()


def test_a_character_coverage_sentencepiece_refuses_is_refused_first(tmp_path, corpus):
    data = tmp_path / "data"
    setting = run_cli_in_process("datagen", "--problem=translate_files", f"--manual_dir={corpus}",
                                 f"--problem_overrides={TRANSLATE_FILES},character_coverage=0.5", f"--data_dir={data}")
    assert "character_coverage=0.5: must be in [0.98, 1]" in error_line(setting)
    usr_dir = _user_dir(tmp_path / "usr", "covering_half_ende", coverage=0.5)
    attribute = run_cli_in_process("datagen", f"--t2t_usr_dir={usr_dir}", "--problem=covering_half_ende",
                                   f"--manual_dir={corpus}", f"--data_dir={data}")
    assert "character_coverage=0.5 is outside [0.98, 1], which SentencePiece accepts" in error_line(attribute)
    assert not data.exists()


@pytest.fixture
def no_model_loads(monkeypatch):
    """Fails the test if the decoder gets as far as loading a model."""
    def load(*args, **kwargs):
        raise AssertionError("a model was loaded before the command was refused")
    monkeypatch.setattr(jobs, "run_decoder", load)


@pytest.mark.parametrize("target, said", [
    ("{tmp}", "--decode_to_file={tmp} is a directory; name a file to write"),
    ("/proc/decoded.txt", "--decode_to_file=/proc/decoded.txt: cannot write in /proc"),
])
def test_an_output_that_cannot_be_written_is_refused_before_the_model_loads(
        tmp_path, trained_run, no_model_loads, target, said):
    source = tmp_path / "in.en"
    source.write_text("the cat\n", encoding="utf-8")
    before = checksums(tmp_path)
    result = run_cli_in_process("decoder", f"--output_dir={trained_run}", f"--decode_from_file={source}",
                                f"--decode_to_file={target.format(tmp=tmp_path)}")
    assert said.format(tmp=tmp_path) in error_line(result)
    assert checksums(tmp_path) == before


def test_a_beam_wider_than_memory_is_refused_before_the_model_loads(tmp_path, trained_run, no_model_loads):
    source = tmp_path / "in.en"
    source.write_text("the cat\n", encoding="utf-8")
    result = run_cli_in_process("decoder", f"--output_dir={trained_run}", f"--decode_from_file={source}",
                                f"--decode_to_file={tmp_path / 'out.de'}", "--beam_size=1000000000")
    line = error_line(result)
    assert "beam_size=1000000000 needs about" in line and "more than this machine's" in line, line
    assert not (tmp_path / "out.de").exists()


def test_the_beam_estimate_grows_with_the_beam_and_admits_the_papers():
    from t2t_repro.decode.beam_memory import check_beam_fits, search_bytes
    from t2t_repro.decode_settings import TRANSLATION_DECODE_SETTINGS
    from t2t_repro.errors import UserError
    from t2t_repro.catalog import get_hparams

    big = get_hparams("transformer_big")
    assert search_bytes(8, 100, 150, big, 37_000) == 2 * search_bytes(4, 100, 150, big, 37_000)
    check_beam_fits(TRANSLATION_DECODE_SETTINGS.override(max_input_length=256), big, 37_000, memory_bytes=2**30)
    with pytest.raises(UserError, match="beam_size=4096 needs about"):
        check_beam_fits(TRANSLATION_DECODE_SETTINGS.override(max_input_length=256, beam_size=4096), big, 37_000,
                        memory_bytes=2**30)
