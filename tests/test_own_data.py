"""Your own data with no Python: translate_files (any corpus, any language pair) and parse_files (any treebank),
their settings given as --problem_overrides, end to end through the real command lines, and every bad input
refused in one line with exit 2 and nothing written."""

import json
import random
import subprocess
import sys
import urllib.request

import pytest

from conftest import TINY_RUN_FLAGS, decode_with_cli, run_cli_in_process, write_parallel_corpus
from t2t_repro import catalog
from t2t_repro.data.toy.grammar import Grammar, iter_sentences
from t2t_repro.errors import UserError

PAIR = "source_language=en,target_language=pt"
VOCAB = "vocab_size=400"
TINY_TRAINING = [flag for flag in TINY_RUN_FLAGS if not flag.startswith(("--problem=", "--hparams="))] + [
    "--hparams=transformer_tiny", "--train_steps=8", "--checkpoint_steps=4", "--eval_steps=8",
]


def _one_error_line(result):
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    return lines[-1]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_parallel_corpus(tmp_path_factory.mktemp("corpus"), languages=("en", "pt"))


@pytest.fixture(scope="module")
def translate_run(tmp_path_factory, corpus):
    """A tiny translate_files run, en->pt, 400-piece vocabulary: datagen, training, averaging, test, export."""
    root = tmp_path_factory.mktemp("translate_files")
    result = run_cli_in_process("trainer", "--problem=translate_files", f"--problem_overrides={PAIR},{VOCAB}",
                                f"--manual_dir={corpus}", f"--data_dir={root / 'data'}",
                                f"--output_dir={root / 'run'}", *TINY_TRAINING)
    assert result.returncode == 0, result.stdout + result.stderr
    return root


def test_translate_files_runs_end_to_end_and_records_its_settings(translate_run, corpus):
    report = json.loads((translate_run / "run" / "report.json").read_text())
    assert report["bleu"]["lang"] == "pt" and report["bleu"]["tokenize"] == "13a"
    assert report["bleu"]["tokenized_compound_split"] is None  # compound splitting is German's only
    assert report["vocabulary"]["size"] == 400 and 0 <= report["vocabulary"]["unused_share"] < 1
    info = json.loads((translate_run / "run" / "run.json").read_text())
    assert info["problem_overrides"] == f"{PAIR},{VOCAB}"
    assert info["problem_settings"]["target_language"] == "pt" and info["problem_settings"]["vocab_size"] == 400
    metadata = json.loads((translate_run / "data" / "translate_files" / "metadata.json").read_text())
    assert metadata["problem_settings"]["vocab_size"] == 400 and metadata["manual_dir"] == str(corpus)
    assert (translate_run / "run" / "export" / "1" / "saved_model.pb").exists()


def test_the_decoder_finds_the_problem_settings_in_the_run(translate_run, corpus, tmp_path):
    assert len(decode_with_cli(translate_run / "run", corpus / "dev.en", tmp_path / "out.pt")) == 20


def test_a_restart_with_other_problem_settings_is_refused_naming_the_keys(translate_run, corpus):
    result = run_cli_in_process("trainer", "--problem=translate_files", f"--problem_overrides={PAIR},vocab_size=500",
                                f"--manual_dir={corpus}", f"--data_dir={translate_run / 'data'}",
                                f"--output_dir={translate_run / 'run'}", *TINY_TRAINING)
    line = _one_error_line(result)
    assert "different problem settings (vocab_size: saved 400, now 500)" in line


def test_data_made_with_other_settings_or_from_another_directory_is_never_reused(translate_run, tmp_path):
    data = translate_run / "data"
    before = (data / "translate_files" / "metadata.json").read_text()
    other = run_cli_in_process("datagen", "--problem=translate_files", f"--problem_overrides={PAIR},vocab_size=450",
                               f"--manual_dir={translate_run}", f"--data_dir={data}")
    assert "made with other problem settings (vocab_size: data 400, now 450)" in _one_error_line(other)
    moved = write_parallel_corpus(tmp_path / "other", languages=("en", "pt"), seed=1)
    elsewhere = run_cli_in_process("datagen", "--problem=translate_files", f"--problem_overrides={PAIR},{VOCAB}",
                                   f"--manual_dir={moved}", f"--data_dir={data}")
    assert "made from --manual_dir=" in _one_error_line(elsewhere) and str(moved) in elsewhere.stderr
    assert (data / "translate_files" / "metadata.json").read_text() == before


def _served_answer(export_dir, sentence):
    """What `t2t-repro-serve --model_dir=export_dir` (the real command, on a free port) answers for `sentence`."""
    server = subprocess.Popen([sys.executable, "-m", "t2t_repro.cli.serve", f"--model_dir={export_dir}",
                               "--model_name=mine", "--port=0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    try:
        line = server.stdout.readline()
        assert " at http://" in line, line + server.stderr.read()
        url = line.split(" at ")[1].strip()
        request = urllib.request.Request(f"{url}:predict", data=json.dumps({"instances": [sentence]}).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as response:
            (answer,) = json.loads(response.read())["predictions"]
        return answer
    finally:
        server.terminate()
        server.wait(timeout=60)


def test_serving_the_export_answers_a_request(translate_run):
    assert isinstance(_served_answer(translate_run / "run" / "export", "the cat sees")["outputs"], str)


# parse_files -------------------------------------------------------------------------------------------------


def _write_treebank(directory, counts=(("train", ".mrg", 120), ("dev", ".trees", 10), ("test", ".mrg", 10))):
    """Trees of the toy grammar: train and test as .mrg (a tree over several lines), dev as .trees (one a line)."""
    directory.mkdir(parents=True, exist_ok=True)
    grammar, seen = Grammar(7), set()
    for split, suffix, count in counts:
        trees = [tree.to_ptb() for _, tree in iter_sentences(grammar, random.Random(split), count, seen, 3, 12)]
        if suffix == ".mrg":
            text = "".join(f"( {tree.replace(' (', chr(10) + '    (')} )\n\n" for tree in trees)
        else:
            text = "".join(f"( {tree} )\n" for tree in trees)
        (directory / f"{split}{suffix}").write_text(text, encoding="utf-8")
    return directory


def test_parse_files_runs_end_to_end_and_scores_by_evalb(tmp_path):
    treebank = _write_treebank(tmp_path / "treebank")
    result = run_cli_in_process("trainer", "--problem=parse_files", "--problem_overrides=vocab_size=500",
                                f"--manual_dir={treebank}", f"--data_dir={tmp_path / 'data'}",
                                f"--output_dir={tmp_path / 'run'}", *TINY_TRAINING)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert 0 <= report["f1"] <= 100 and report["test_sentences"] == 10
    decoded = (tmp_path / "run" / "test_decoded.txt").read_text().splitlines()
    assert len(decoded) == 10 and all(line.startswith("(") for line in decoded)
    # The server puts the decoded tree onto the request's words: the problem's post-processing, found through
    # the export's metadata (its settings included).
    answer = _served_answer(tmp_path / "run" / "export", "Kim sees the dog .")
    assert answer["outputs"].startswith("(") and "Kim" in answer["outputs"] and "raw_outputs" in answer


# Bad input: one line, exit 2, nothing written ------------------------------------------------------------------


def _datagen(tmp_path, manual_dir, overrides, problem="translate_files"):
    result = run_cli_in_process("datagen", f"--problem={problem}", f"--problem_overrides={overrides}",
                                f"--manual_dir={manual_dir}", f"--data_dir={tmp_path / 'data'}")
    line = _one_error_line(result)
    assert not (tmp_path / "data" / problem).exists()
    return line


def test_line_count_mismatch_names_both_files_and_both_counts(tmp_path):
    corpus = write_parallel_corpus(tmp_path / "c", languages=("en", "pt"))
    with open(corpus / "train.pt", "a", encoding="utf-8") as extra:
        extra.write("uma linha a mais\n")
    line = _datagen(tmp_path, corpus, PAIR)
    assert f"{corpus / 'train.en'} has 300 lines but {corpus / 'train.pt'} has 301" in line


@pytest.mark.parametrize("overrides, message", [
    ("source_language=en,target_language=en", "source_language and target_language are both 'en'"),
    (f"{PAIR},bleu_tokenizer=moses", "unknown BLEU tokenizer 'moses'"),
    ("source_language=en", "needs target_language"),
    (f"{PAIR},vocab_sise=100", "unknown problem translate_files setting key 'vocab_sise'; closest: vocab_size"),
    (f"{PAIR},vocab_size=-5", "vocab_size=-5: must be at least 1"),
    (f"{PAIR},vocab_size=nan", "vocab_size='nan': expected a value of type int"),
    (f"{PAIR},vocab_size=400,vocab_size=500", "vocab_size is given twice"),
    (f"{PAIR},vocab_size=9000", "vocab_size=9000 cannot be reached: SentencePiece's bpe training on this corpus "
                                "reaches"),
])
def test_bad_settings_are_refused_in_one_line(tmp_path, overrides, message):
    corpus = write_parallel_corpus(tmp_path / "c", languages=("en", "pt"))
    assert message in _datagen(tmp_path, corpus, overrides)


def test_missing_and_empty_split_files_are_refused(tmp_path):
    corpus = write_parallel_corpus(tmp_path / "c", languages=("en", "pt"))
    (corpus / "test.pt").unlink()
    assert "lacks test.pt" in _datagen(tmp_path, corpus, PAIR)
    (corpus / "test.pt").write_text("", encoding="utf-8")
    assert "test.pt is empty" in _datagen(tmp_path, corpus, PAIR)


def test_a_treebank_file_without_a_tree_is_refused(tmp_path):
    treebank = _write_treebank(tmp_path / "t")
    (treebank / "dev.trees").write_text("\n\n", encoding="utf-8")
    assert "dev.trees holds no tree" in _datagen(tmp_path, treebank, "", problem="parse_files")
    (treebank / "dev.trees").write_text("no brackets here\n", encoding="utf-8")
    assert "dev.trees:1: text 'no' outside any tree" in _datagen(tmp_path, treebank, "", problem="parse_files")
    (treebank / "dev.trees").unlink()
    assert "lacks dev.mrg (or dev.trees)" in _datagen(tmp_path, treebank, "", problem="parse_files")


def test_a_problem_without_settings_refuses_overrides():
    with pytest.raises(UserError, match="problem wmt_ende takes no settings"):
        catalog.get_problem("wmt_ende", "vocab_size=8000")


def test_problem_help_lists_every_setting_with_its_value():
    result = run_cli_in_process("trainer", "--problem=translate_files", "--problem_help",
                                "--problem_overrides=vocab_size=16000")
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: line.split()[1] for line in result.stdout.splitlines()[1:]}
    assert rows["vocab_size"] == "16000" and rows["vocab_model_type"] == "'bpe'" and "bleu_tokenizer" in rows
