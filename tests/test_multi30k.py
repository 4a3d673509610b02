"""The multi30k_* problems on files in the Multi30K release's layout (made here, plain and gzipped): the splits,
the test_set choice and its record, the settings listing, a short transformer_small run through the real
command line, and every bad release refused in one line with exit 2 and nothing written."""

import gzip
import json
import re

import pytest

from conftest import run_cli, run_cli_in_process, write_parallel_corpus

SIZES = (("train", 200), ("val", 12), ("test_2016_flickr", 10), ("test_2018_flickr", 6))
VOCAB = "vocab_size=350"


def _gzip(path):
    """Replaces `path` by `path.gz`, the same text gzipped."""
    gzipped = path.with_name(path.name + ".gz")
    gzipped.write_bytes(gzip.compress(path.read_bytes()))
    path.unlink()
    return gzipped


def _release(directory):
    """A small release: train and test_2016_flickr gzipped as distributed, val and test_2018_flickr plain, and one
    set with only its German side gzipped."""
    write_parallel_corpus(directory, sizes=SIZES)
    for name in ("train.en", "train.de", "test_2016_flickr.en", "test_2016_flickr.de", "test_2018_flickr.de"):
        _gzip(directory / name)
    return directory


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return _release(tmp_path_factory.mktemp("release"))


def _summary_counts(output):
    match = re.search(r"multi30k_ende: generated train ([\d,]+), dev ([\d,]+), test ([\d,]+) examples", output)
    assert match, output
    return tuple(int(count.replace(",", "")) for count in match.groups())


@pytest.fixture(scope="module")
def small_run(tmp_path_factory, release):
    """The recipe's command on the small release, two steps: datagen, training, averaging, test2016 scored."""
    root = tmp_path_factory.mktemp("multi30k_run")
    result = run_cli_in_process("trainer", "--problem=multi30k_ende", "--hparams=transformer_small",
                                f"--problem_overrides={VOCAB}", f"--manual_dir={release}",
                                f"--data_dir={root / 'data'}", f"--output_dir={root / 'run'}", "--train_steps=2",
                                "--batch_tokens=512", "--eval_decode_sentences=2", "--skip_export")
    assert result.returncode == 0, result.stdout + result.stderr
    return root, result


def test_datagen_reads_train_val_as_dev_and_test_2016_flickr(release, small_run):
    root, result = small_run
    assert _summary_counts(result.stdout) == (200, 12, 10)
    metadata = json.loads((root / "data" / "multi30k_ende" / "metadata.json").read_text())
    assert metadata["problem_settings"] == {"test_set": "test_2016_flickr", "vocab_size": 350,
                                            "shared_vocabulary": False, "vocab_model_type": "bpe",
                                            "vocab_sample_sentences": 2_000_000, "vocab_from": None}
    assert {side: figures["size"] for side, figures in metadata["vocabularies"].items()} == {"source": 350,
                                                                                             "target": 350}
    dev = [json.loads(line) for line in (root / "data" / "multi30k_ende" / "dev.pairs.jsonl").read_text().splitlines()]
    val = [(release / f"val.{language}").read_text(encoding="utf-8").splitlines() for language in ("en", "de")]
    assert dev == [list(pair) for pair in zip(*val)]


def test_transformer_small_trains_on_the_release_and_scores_bleu_into_german(small_run):
    root, _ = small_run
    report = json.loads((root / "run" / "report.json").read_text())
    assert report["bleu"]["lang"] == "de" and report["bleu"]["tokenize"] == "13a" and report["bleu"]["lines"] == 10
    assert report["bleu"]["tokenized_compound_split"] is not None  # German: the paper's Table 2 figure too
    hparams = json.loads((root / "run" / "hparams.json").read_text())
    assert (hparams["d_model"], hparams["num_layers"], hparams["dropout"]) == (256, 3, 0.2)


def test_the_test_set_setting_picks_the_test_split_and_is_recorded(release, tmp_path):
    chosen = f"{VOCAB},test_set=test_2018_flickr"
    result = run_cli("datagen", "--problem=multi30k_ende", f"--problem_overrides={chosen}", f"--manual_dir={release}",
                     f"--data_dir={tmp_path}")
    assert result.returncode == 0, result.stderr
    assert _summary_counts(result.stdout) == (200, 12, 6)
    before = (tmp_path / "multi30k_ende" / "metadata.json").read_text()
    other = run_cli_in_process("datagen", "--problem=multi30k_ende", f"--problem_overrides={VOCAB}",
                               f"--manual_dir={release}", f"--data_dir={tmp_path}")
    assert ("made with other problem settings (test_set: data 'test_2018_flickr', now 'test_2016_flickr')"
            in _one_error_line(other))
    assert (tmp_path / "multi30k_ende" / "metadata.json").read_text() == before


def test_problem_help_lists_the_test_set_and_the_vocabulary_settings():
    result = run_cli_in_process("trainer", "--problem=multi30k_encs", "--problem_help",
                                "--problem_overrides=test_set=test_2018_flickr")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("problem multi30k_encs: Multi30K English-Czech")
    rows = {line.split()[0]: line.split()[1] for line in lines[1:]}
    assert rows == {"test_set": "'test_2018_flickr'", "vocab_size": "8000", "shared_vocabulary": "False",
                    "source_vocab_size": "None", "target_vocab_size": "None", "character_coverage": "None",
                    "vocab_model_type": "'bpe'", "vocab_sample_sentences": "2000000", "vocab_from": "None",
                    "bleu_tokenizer": "''"}


def test_a_run_recorded_with_the_shared_vocabulary_default_keeps_it(release, tmp_path):
    """Runs and data made when one shared vocabulary was the default recorded no shared_vocabulary setting: they
    are still read as shared (decoded, not mistaken for today's default), and resuming or regenerating them with
    today's default names the difference."""
    root = tmp_path
    result = run_cli_in_process("trainer", "--problem=multi30k_ende", "--hparams=transformer_small",
                                f"--problem_overrides={VOCAB},shared_vocabulary=true", f"--manual_dir={release}",
                                f"--data_dir={root / 'data'}", f"--output_dir={root / 'run'}", "--train_steps=2",
                                "--batch_tokens=512", "--eval_decode_sentences=2", "--skip_export", "--skip_test")
    assert result.returncode == 0, result.stdout + result.stderr
    info_file = root / "run" / "run.json"
    info = json.loads(info_file.read_text())
    assert "shared_vocabulary" not in info["problem_settings"]  # as runs recorded before the default changed
    info_file.write_text(json.dumps({**info, "problem_overrides": VOCAB}))
    decoded = run_cli_in_process("decoder", f"--output_dir={root / 'run'}", f"--decode_from_file={release / 'val.en'}",
                                 f"--decode_to_file={root / 'val.hyp'}")
    assert decoded.returncode == 0, decoded.stderr
    assert len((root / "val.hyp").read_text(encoding="utf-8").splitlines()) == 12
    resumed = run_cli_in_process("trainer", "--problem=multi30k_ende", "--hparams=transformer_small",
                                 f"--problem_overrides={VOCAB}", f"--manual_dir={release}",
                                 f"--data_dir={root / 'data'}", f"--output_dir={root / 'run'}", "--train_steps=3")
    assert ("different problem settings (shared_vocabulary: saved True, now False); the problem's defaults changed "
            "since the run began: give its saved values in --problem_overrides" in _one_error_line(resumed))
    regenerated = run_cli_in_process("datagen", "--problem=multi30k_ende", f"--problem_overrides={VOCAB}",
                                     f"--manual_dir={release}", f"--data_dir={root / 'data'}")
    assert "other problem settings (shared_vocabulary: data True, now False)" in _one_error_line(regenerated)


# Bad release files: one line, exit 2, nothing written ----------------------------------------------------------


def _one_error_line(result):
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    return lines[-1]


def _remove(name):
    return lambda directory: (directory / name).unlink()


def _append_line(name):
    return lambda directory: (directory / name).write_text(
        (directory / name).read_text(encoding="utf-8") + "ein Satz mehr\n", encoding="utf-8")


def _not_gzip(name):
    return lambda directory: (directory / name).write_bytes(b"a line of plain text\n")


def _cut_short(name):
    return lambda directory: (directory / name).write_bytes((directory / name).read_bytes()[:-12])


def _empty_gzip(name):
    return lambda directory: (directory / name).write_bytes(gzip.compress(b""))


def _old_mac_line_ends(name):
    return lambda directory: (directory / name).write_bytes((directory / name).read_bytes().replace(b"\n", b"\r"))


def _dangling_link(name):
    def damage(directory):
        (directory / name).unlink()
        (directory / name).symlink_to(directory / "moved" / name)
    return damage


def _also_plain(name):
    return lambda directory: (directory / name).write_text("a line\n", encoding="utf-8")


@pytest.mark.parametrize("damage, overrides, message", [
    (_remove("val.de"), "", "lacks val.de; problem multi30k_ende expects the Multi30K release's files train.{en,de}, "
                            "val.{en,de}, test_2016_flickr.{en,de} (the last named by the test_set setting; each "
                            "plain or gzipped"),
    (_remove("train.de.gz"), "", "lacks train.de;"),
    (_remove("test_2016_flickr.en.gz"), "", "lacks test_2016_flickr.en;"),
    (None, "test_set=test_2017_mscoco", "lacks test_2017_mscoco.en, test_2017_mscoco.de;"),
    (_append_line("val.de"), "", "val.en has 12 lines but {M}/val.de has 13: parallel files must be line-aligned"),
    (_not_gzip("train.en.gz"), "", "train.en.gz: not a readable gzip file"),
    (_cut_short("test_2016_flickr.de.gz"), "", "test_2016_flickr.de.gz: not a readable gzip file"),
    (_empty_gzip("test_2016_flickr.en.gz"), "", "test_2016_flickr.en.gz is empty; problem multi30k_ende needs "
                                                "sentences in every split"),
    (_also_plain("train.en"), "", "holds both train.en and train.en.gz; keep one"),
    (_old_mac_line_ends("val.de"), "", "val.de: lines end in a carriage return alone (old Mac line ends), which "
                                       "would read as one line; convert them to \\n"),
    (_dangling_link("val.en"), "", "val.en is a symbolic link to {M}/moved/val.en, which does not exist;"),
    (None, "test_set=test_2019", "test_set='test_2019': must be one of test_2016_flickr, test_2017_flickr"),
])
def test_a_bad_release_is_refused_in_one_line_and_nothing_is_written(tmp_path, damage, overrides, message):
    release = _release(tmp_path / "m")
    if damage:
        damage(release)
    data = tmp_path / "data"
    result = run_cli_in_process("datagen", "--problem=multi30k_ende", f"--problem_overrides={VOCAB},{overrides}",
                                f"--manual_dir={release}", f"--data_dir={data}")
    assert message.replace("{M}", str(release)) in _one_error_line(result)
    assert not data.exists() or not any(data.iterdir())


def test_the_trainer_refuses_a_bad_release_before_writing_the_run(tmp_path):
    release = _release(tmp_path / "m")
    (release / "val.en").unlink()
    result = run_cli_in_process("trainer", "--problem=multi30k_enfr", f"--manual_dir={release}",
                                f"--data_dir={tmp_path / 'data'}", f"--output_dir={tmp_path / 'run'}",
                                "--hparams=transformer_small")
    line = _one_error_line(result)
    assert "lacks train.fr, val.en, val.fr, test_2016_flickr.fr; problem multi30k_enfr expects" in line
    assert not (tmp_path / "run").exists() and not (tmp_path / "data" / "multi30k_enfr").exists()
