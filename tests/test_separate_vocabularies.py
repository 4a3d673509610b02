"""Separate source and target vocabularies (shared_vocabulary=false) and scripts without spaces, end to end
through the real command lines: datagen, training, averaging, the test decode, the SavedModel served, the
CTranslate2 export, scoring and ensembles; and the bad settings refused in one line."""

import json
import random
import shutil

import pytest

from conftest import TINY_RUN_FLAGS, decode_with_cli, run_cli, run_cli_in_process
from test_own_data import _served_answer
from t2t_repro import catalog
from t2t_repro.data.vocabulary import Vocabulary
from t2t_repro.decode_settings import DecodeSettings, SamplingSettings
from t2t_repro.special_tokens import EOS_ID
from t2t_repro.visualize.attention_maps import compute_attention_maps
from t2t_repro.train.checkpoints import checkpoint_reader, latest_checkpoint

TRAINING = [flag for flag in TINY_RUN_FLAGS if not flag.startswith(("--problem=", "--hparams="))] + [
    "--hparams=transformer_tiny", "--train_steps=8", "--checkpoint_steps=4", "--eval_steps=8",
]
SEPARATE = "shared_vocabulary=false,source_vocab_size=300,target_vocab_size=290"
_WORDS = "the a cat dog man woman child sees eats likes finds house tree car big small red old new runs".split()
_GREEK = dict(zip("abcdefghijklmnopqrstuvwxyz", "αβψδεφγηιξκλμνοπρστθωςωχυζ"))
# Each word as one or two CJK ideographs (U+4E00 ...), written without spaces as Chinese and Japanese are.
_IDEOGRAPHS = {word: "".join(chr(0x4E00 + 37 * i + j) for j in range(1 + i % 2)) for i, word in enumerate(_WORDS)}


def write_corpus(directory, target_language, translate, joiner, sizes=(("train", 300), ("dev", 20), ("test", 20))):
    """Line-aligned en / `target_language` files: each word translated by `translate`, joined by `joiner`."""
    rng = random.Random(7)
    directory.mkdir(parents=True, exist_ok=True)
    for split, count in sizes:
        sentences = [[rng.choice(_WORDS) for _ in range(rng.randint(3, 8))] for _ in range(count)]
        (directory / f"{split}.en").write_text("".join(" ".join(words) + "\n" for words in sentences), "utf-8")
        (directory / f"{split}.{target_language}").write_text(
            "".join(joiner.join(map(translate, words)) + "\n" for words in sentences), "utf-8")
    return directory


def greek(word):
    return "".join(_GREEK[letter] for letter in word)


def train(root, corpus, overrides):
    result = run_cli_in_process("trainer", "--problem=translate_files", f"--problem_overrides={overrides}",
                                f"--manual_dir={corpus}", f"--data_dir={root / 'data'}",
                                f"--output_dir={root / 'run'}", *TRAINING)
    assert result.returncode == 0, result.stdout + result.stderr
    return root


@pytest.fixture(scope="module")
def greek_corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("en_el"), "el", greek, " ")


@pytest.fixture(scope="module")
def greek_run(tmp_path_factory, greek_corpus):
    """en -> el (Latin to Greek letters: no piece in common), each side its own vocabulary."""
    return train(tmp_path_factory.mktemp("separate"), greek_corpus,
                 f"source_language=en,target_language=el,{SEPARATE}")


def test_each_side_trains_its_own_vocabulary_on_its_own_text(greek_run):
    data = greek_run / "data" / "translate_files"
    metadata = json.loads((data / "metadata.json").read_text())
    sides = metadata["vocabularies"]
    assert metadata["shared_vocabulary"] is False and (sides["source"]["size"], sides["target"]["size"]) == (300, 290)
    source, target = Vocabulary(data / "vocab.source.model"), Vocabulary(data / "vocab.target.model")
    source_pieces = {source.id_to_piece(i) for i in source.ordinary_ids()}
    target_pieces = {target.id_to_piece(i) for i in target.ordinary_ids()}
    assert any("α" in piece for piece in target_pieces) and not any("α" in piece for piece in source_pieces)
    assert any("cat" in piece for piece in source_pieces) and not any("cat" in piece for piece in target_pieces)
    report = json.loads((greek_run / "run" / "report.json").read_text())
    assert report["vocabulary"]["shared"] is False
    assert (report["vocabulary"]["source"]["size"], report["vocabulary"]["target"]["size"]) == (300, 290)


def test_the_source_embedding_has_the_source_rows_and_the_softmax_the_target_rows(greek_run):
    shapes = checkpoint_reader(latest_checkpoint(greek_run / "run" / "checkpoints")).get_variable_to_shape_map()
    rows = {side: shapes[f"model/{side}_embedding/embeddings/.ATTRIBUTES/VARIABLE_VALUE"][0]
            for side in ("source", "target")}
    assert rows == {"source": 300, "target": 290}
    assert not any(key.startswith("model/output_projection/") for key in shapes)  # tied with the target embedding


def test_the_decoder_the_export_and_the_server_read_and_write_each_side_with_its_vocabulary(greek_run, greek_corpus,
                                                                                            tmp_path):
    decoded = decode_with_cli(greek_run / "run", greek_corpus / "test.en", tmp_path / "out.el")
    assert len(decoded) == 20 and not any(letter in "".join(decoded) for letter in "abcdefghijklmnopqrstuvwxyz")
    answer = _served_answer(greek_run / "run" / "export", "the cat sees")["outputs"]
    assert isinstance(answer, str) and not any(letter in answer for letter in "abcdefghijklmnopqrstuvwxyz")
    export = greek_run / "run" / "export" / "1" / "assets.extra"
    assert (export / "vocab.source.model").exists() and (export / "vocab.target.model").exists()


def test_the_ctranslate2_export_decodes_as_the_tensorflow_search(greek_run, greek_corpus, tmp_path):
    exported = run_cli_in_process("exporter", f"--output_dir={greek_run / 'run'}", "--format=ctranslate2",
                                  "--extra_length=3")
    assert exported.returncode == 0, exported.stderr
    version = greek_run / "run" / "export_ctranslate2" / "1"
    assert (version / "vocab.source.model").exists() and (version / "vocab.target.model").exists()
    outputs = {}
    engines = (("ctranslate2", f"--model_dir={version}"), ("tensorflow", f"--output_dir={greek_run / 'run'}"))
    for engine, model in engines:
        # Greedy: CTranslate2's beam search ends otherwise (its patience), so only greedy outputs compare exactly.
        result = run_cli("decoder", f"--engine={engine}", model, f"--decode_from_file={greek_corpus / 'test.en'}",
                         f"--decode_to_file={tmp_path / engine}", "--extra_length=3", "--beam_size=1", "--quiet")
        assert result.returncode == 0, result.stderr
        outputs[engine] = (tmp_path / engine).read_text("utf-8").splitlines()
    assert outputs["ctranslate2"] == outputs["tensorflow"] and len(outputs["tensorflow"]) == 20


def test_an_ensemble_with_a_run_of_another_vocabulary_is_refused(greek_run, greek_corpus, tmp_path):
    shared = train(tmp_path, greek_corpus, "source_language=en,target_language=el,vocab_size=400")
    result = run_cli_in_process("decoder", f"--output_dir={greek_run / 'run'}", f"--ensemble={shared / 'run'}",
                                f"--decode_from_file={greek_corpus / 'test.en'}",
                                f"--decode_to_file={tmp_path / 'out'}")
    line = result.stderr.strip().splitlines()[-1]
    assert result.returncode == 2 and "source_vocab_size=None, not 300" in line and "must share" in line
    assert not (tmp_path / "out").exists()
    # The shared run records its settings as runs made before these settings existed did.
    settings = json.loads((shared / "run" / "run.json").read_text())["problem_settings"]
    assert not {"shared_vocabulary", "source_vocab_size", "target_vocab_size", "character_coverage"} & set(settings)


@pytest.mark.parametrize("language, tokenizer", [("zh", "zh"), ("ja", "char")])
def test_a_script_without_spaces_trains_decodes_and_serves(tmp_path, language, tokenizer):
    corpus = write_corpus(tmp_path / "corpus", language, _IDEOGRAPHS.get, "")
    overrides = f"source_language=en,target_language={language},{SEPARATE.replace('290', '300')}"
    if tokenizer != "zh":  # ja-mecab needs sacrebleu[ja]; sacreBLEU's character tokenizer needs nothing
        overrides += f",bleu_tokenizer={tokenizer}"
    root = train(tmp_path, corpus, overrides)
    report = json.loads((root / "run" / "report.json").read_text())
    assert report["bleu"]["tokenize"] == tokenizer and report["vocabulary"]["target"]["size"] == 300
    answer = _served_answer(root / "run" / "export", "the cat sees")["outputs"]
    assert isinstance(answer, str) and " " not in answer.strip()


@pytest.mark.parametrize("overrides, message", [
    ("source_vocab_size=300", "source_vocab_size is for separate vocabularies: add shared_vocabulary=false"),
    ("character_coverage=1.5", "character_coverage=1.5: must be in [0.98, 1]"),
    ("character_coverage=0.5", "character_coverage=0.5: must be in [0.98, 1]"),  # SentencePiece needs 0.98
])
def test_bad_vocabulary_settings_are_refused_in_one_line(tmp_path, overrides, message):
    result = run_cli_in_process("datagen", "--problem=translate_files",
                                f"--problem_overrides=source_language=en,target_language=el,{overrides}",
                                f"--manual_dir={tmp_path}", f"--data_dir={tmp_path / 'data'}")
    assert result.returncode == 2 and message in result.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize("sizes, setting", [("source_vocab_size=300,target_vocab_size=5000", "target_vocab_size"),
                                            ("source_vocab_size=300,vocab_size=5000", "vocab_size")])
def test_a_side_size_the_corpus_cannot_reach_is_refused_naming_the_side(greek_corpus, tmp_path, sizes, setting):
    result = run_cli_in_process("datagen", "--problem=translate_files",
                                "--problem_overrides=source_language=en,target_language=el,shared_vocabulary=false,"
                                f"{sizes}", f"--manual_dir={greek_corpus}", f"--data_dir={tmp_path / 'data'}")
    line = result.stderr.strip().splitlines()[-1]
    assert result.returncode == 2 and f"{setting}=5000 cannot be reached" in line, result.stderr
    assert "set target_vocab_size=" in line
    assert "translate_files" not in {path.name for path in (tmp_path / "data").glob("*")}


@pytest.mark.parametrize("overrides, sizes, settings", [
    ("shared_vocabulary=false,vocab_size=500", (500, 500), ("vocab_size", "vocab_size")),
    ("shared_vocabulary=false,vocab_size=500,target_vocab_size=700", (500, 700), ("vocab_size", "target_vocab_size")),
    ("shared_vocabulary=false,source_vocab_size=300,target_vocab_size=700", (300, 700),
     ("source_vocab_size", "target_vocab_size")),
])
def test_a_side_without_a_size_of_its_own_gets_vocab_size(overrides, sizes, settings):
    problem = catalog.get_problem("translate_files", f"source_language=en,target_language=el,{overrides}")
    assert tuple(problem.requested_vocab_size(side) for side in ("source", "target")) == sizes
    assert tuple(problem.vocab_size_setting(side) for side in ("source", "target")) == settings


def test_problem_help_lists_the_vocabulary_settings():
    text = catalog.problem_help("translate_files", "source_language=en,target_language=zh")
    for name in ("shared_vocabulary", "source_vocab_size", "target_vocab_size", "character_coverage"):
        assert name in text


def test_scoring_a_file_in_the_wrong_script_is_refused_and_writes_nothing(greek_run, greek_corpus, tmp_path):
    output = tmp_path / "scores"
    for score_file in (greek_corpus / "test.en", greek_corpus / "test.el"):  # the first is the source language
        result = run_cli_in_process("decoder", f"--output_dir={greek_run / 'run'}",
                                    f"--decode_from_file={greek_corpus / 'test.en'}", f"--score_file={score_file}",
                                    f"--decode_to_file={output}")
        if score_file.suffix == ".en":
            line = result.stderr.strip().splitlines()[-1]
            assert result.returncode == 2 and "target vocabulary never saw" in line and "swapped" in line
            assert not output.exists()
        else:
            assert result.returncode == 0, result.stderr
            assert len(output.read_text().splitlines()) == 20


def test_restart_sampling_nbest_and_the_attention_maps_of_a_separate_run(greek_run, greek_corpus, tmp_path):
    from t2t_repro.run import jobs

    copy = tmp_path / "copy"
    shutil.copytree(greek_run, copy)
    restarted = run_cli_in_process(
        "trainer", "--problem=translate_files",
        f"--problem_overrides=source_language=en,target_language=el,{SEPARATE}", f"--manual_dir={greek_corpus}",
        f"--data_dir={copy / 'data'}", f"--output_dir={copy / 'run'}",
        *[flag for flag in TRAINING if not flag.startswith("--train_steps")], "--train_steps=12", "--skip_test",
        "--skip_export")
    assert restarted.returncode == 0, restarted.stderr
    assert json.loads((copy / "run" / "report.json").read_text())["steps"] == 12
    decoder = jobs.run_decoder(str(copy / "run"), sampling=SamplingSettings("topk:5", seed=3), nbest=2)
    samples = decoder.search([decoder.vocabularies.source.encode("the cat sees") + [EOS_ID]])[0]
    assert len(samples) == 2 and all(ids and max(ids) < 290 for ids, _ in samples)  # target ids
    maps = compute_attention_maps(decoder_model(copy), decoder.vocabularies, "the cat sees",
                                  DecodeSettings(max_input_length=32, extra_length=3))
    assert "".join(maps.source_tokens[:-1]).replace("▁", " ").strip() == "the cat sees"  # the source's pieces
    pieces = "".join(token for token in maps.output_tokens if token != "</s>")
    assert not any(letter in pieces for letter in "abcdefghijklmnopqrstuvwxyz")  # the target's pieces


def decoder_model(root):
    from t2t_repro.run.restore import restore_run

    return restore_run(str(root / "run")).model
