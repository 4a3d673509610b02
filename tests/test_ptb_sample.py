"""ptb_sample_parsing on small treebanks the tests write in the layouts NLTK distributes (the zip, or its
combined/ folder): the split by file ranges, the clean-up, and every bad release file refused before anything is
written."""

import zipfile

import pytest

from conftest import PTB_SAMPLE_FILES, ptb_sample_file, run_cli_in_process, write_ptb_sample_zip
from t2t_repro import catalog
from t2t_repro.data import nltk_treebank
from t2t_repro.errors import UserError
from t2t_repro.problems.ptb_sample import PtbSampleParsing, PtbSampleSettings

SPLIT = "train_files=1-8,dev_files=9-10,test_files=11-12"


@pytest.fixture
def combined(tmp_path):
    """DIR/treebank/combined/wsj_0001.mrg ... wsj_0012.mrg, as NLTK unpacks its corpus."""
    folder = tmp_path / "corpora" / "treebank" / "combined"
    folder.mkdir(parents=True)
    (folder / "README").write_text("not a tree file\n")
    for number in range(1, PTB_SAMPLE_FILES + 1):
        (folder / nltk_treebank.file_name(number)).write_text(ptb_sample_file(number))
    return tmp_path / "corpora"


@pytest.fixture
def zipped(tmp_path):
    return write_ptb_sample_zip(tmp_path / "zipped")


def _problem(overrides=SPLIT):
    return catalog.get_problem("ptb_sample_parsing", overrides + ",source_vocab_size=400")


def test_registered_with_the_samples_split_by_file_and_the_parsing_defaults():
    problem = catalog.get_problem("ptb_sample_parsing")
    assert isinstance(problem, PtbSampleParsing)
    ranges = problem.settings.file_ranges()
    assert [len(numbers) for _, numbers in ranges.values()] == [159, 20, 20]
    assert ranges["dev_files"][1][0] == 160 and ranges["test_files"][1][-1] == 199
    assert (problem.decode_settings.beam_size, problem.decode_settings.alpha) == (21, 0.3)
    assert problem.settings.target_tags == "words" and problem.shared_vocabulary  # the words in the tree


def test_zip_and_unpacked_folder_give_the_same_cleaned_pairs(combined, zipped, tmp_path):
    problem = _problem(SPLIT + ",target_tags=keep")
    from_zip = list(problem.raw_pairs("test", None, zipped))
    assert from_zip == list(problem.raw_pairs("test", None, combined))
    assert list(problem.raw_pairs("test", None, combined / "treebank" / "combined")) == from_zip
    assert len(from_zip) == 6  # files 11 and 12, 3 trees each
    source, target = from_zip[0]
    assert "-NONE-" not in target and "SBJ" not in target and "*-1" not in source
    assert len(source.split()) == sum(1 for token in target.split() if token[0] not in "()")

    summary = problem.generate_data(tmp_path / "data", None, zipped)
    counts = {split: figures["examples"] for split, figures in summary["splits"].items()}
    assert counts == {"train": 24, "dev": 6, "test": 6}
    vocabularies = problem.vocabularies(tmp_path / "data")
    assert not vocabularies.shared and vocabularies.target.vocab_size < vocabularies.source.vocab_size
    for _, target in problem.text_pairs("dev", tmp_path / "data"):
        assert len(vocabularies.target.encode(target)) == len(target.split())  # every tree symbol is one piece


def test_placeholder_tags_write_one_symbol_for_every_word(combined):
    pairs = list(_problem(SPLIT + ",target_tags=placeholder").raw_pairs("dev", None, combined))
    for source, target in pairs:
        slots = [token for token in target.split() if token[0] not in "()"]
        assert slots == ["XX"] * len(source.split())


def test_the_constrained_decoder_writes_only_the_slot_symbols_the_targets_hold(zipped, tmp_path):
    """With XX for every word no punctuation word is given its own tag (a piece the model never wrote there); with
    the tags each punctuation word gets its tag, and XX, which those targets never hold, is no slot."""
    slots = {}
    for tags in ("keep", "placeholder"):
        problem = _problem(SPLIT + f",target_tags={tags}")
        problem.generate_data(tmp_path / tags, None, zipped)
        vocabularies = problem.vocabularies(tmp_path / tags)
        tokens = problem.output_constraint(vocabularies)
        slots[tags] = {vocabularies.target.id_to_piece(i)[1:] for i in tokens.slots}
        fixed = {vocabularies.target.id_to_piece(tag)[1:] for _, tag in tokens.fixed_tags}
        assert not fixed if tags == "placeholder" else {".", ",", ":"} <= fixed
    assert slots["placeholder"] == {"XX"}
    assert "XX" not in slots["keep"] and {"NN", "DT", ".", ","} <= slots["keep"]


@pytest.mark.parametrize("overrides, message", [
    ("train_files=1-8,dev_files=8-10,test_files=11-12", r"train_files=1-8 and dev_files=8-10 overlap \(file "
                                                         r"wsj_0008\.mrg\)"),
    ("train_files=1-8,dev_files=10-9,test_files=11-12", r"dev_files='10-9': expected file numbers as ranges"),
    ("train_files=1-8,dev_files=9-10,test_files=eleven", r"test_files='eleven'"),
])
def test_bad_ranges_are_refused_as_settings(overrides, message):
    with pytest.raises(UserError, match=message):
        catalog.get_problem("ptb_sample_parsing", overrides)


def _break_file(folder, number, text):
    (folder / "treebank" / "combined" / nltk_treebank.file_name(number)).write_text(text)


@pytest.mark.parametrize("damage, message", [
    (lambda folder: (folder / "treebank" / "combined" / "wsj_0011.mrg").unlink(),
     r"test_files=11-12: wsj_0011\.mrg missing from .*combined"),
    (lambda folder: _break_file(folder, 3, "( (S (NP (NN a)) (VP (VBZ b))) )\n( (S (NN c)\n"),
     r"wsj_0003\.mrg:2: unbalanced brackets"),
    (lambda folder: _break_file(folder, 4, "( (S (NP (NN a) (VBZ b))) stray )\n"),
     r"wsj_0004\.mrg:1: word 'stray' beside sub-constituents"),
    (lambda folder: _break_file(folder, 9, "( (S (NP (-NONE- *T*))) )\n") or _break_file(folder, 10, ""),
     r"the dev split \(dev_files=9-10\) holds no tree with words"),
    (lambda folder: (folder / "treebank" / "combined" / "wsj_0005.mrg").write_bytes(b"( (S (NN caf\xe9)) )\n"),
     r"wsj_0005\.mrg:1: not UTF-8 text"),
])
def test_bad_release_files_are_refused_naming_the_file_with_nothing_written(combined, tmp_path, damage, message):
    damage(combined)
    with pytest.raises(UserError, match=message):
        _problem().generate_data(tmp_path / "data", None, combined)
    assert not (tmp_path / "data").exists() or not any((tmp_path / "data").iterdir())


def test_an_unreadable_zip_or_a_directory_without_the_sample_is_refused(tmp_path):
    (tmp_path / "treebank.zip").write_bytes(b"not a zip file")
    with pytest.raises(UserError, match=r"cannot read .*treebank\.zip: File is not a zip file"):
        _problem().generate_data(tmp_path / "data", None, tmp_path)
    (tmp_path / "treebank.zip").unlink()
    with pytest.raises(UserError, match=r"holds no Penn Treebank sample: expected DIR/treebank\.zip"):
        _problem().generate_data(tmp_path / "data", None, tmp_path)
    assert not (tmp_path / "data").exists()


def test_datagen_refuses_a_bad_release_in_one_line_with_exit_status_2(zipped, tmp_path):
    with zipfile.ZipFile(zipped / "treebank.zip", "a") as archive:
        archive.writestr("treebank/combined/wsj_0013.mrg", "( (S (NP (NN a)) )\n")
    result = run_cli_in_process("datagen", "--problem=ptb_sample_parsing", f"--manual_dir={zipped}",
                                f"--data_dir={tmp_path / 'data'}",
                                f"--problem_overrides={SPLIT.replace('11-12', '11-13')},source_vocab_size=400")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "treebank.zip:treebank/combined/wsj_0013.mrg:1: unbalanced brackets" in lines[0]
    assert not (tmp_path / "data" / "ptb_sample_parsing").exists()


def test_settings_help_names_the_split_and_the_tag_forms():
    fields = PtbSampleSettings.__dataclass_fields__
    assert "wsj_NNNN.mrg" in fields["train_files"].metadata["help"]
    assert fields["target_tags"].metadata["choices"] == ("keep", "placeholder", "words")


def test_ranges_join_with_a_plus_on_the_command_line():
    problem = catalog.get_problem("ptb_sample_parsing", "train_files=1-4+7-8,dev_files=5-6+9,test_files=10-12")
    ranges = problem.settings.file_ranges()
    assert ranges["train_files"][1] == [1, 2, 3, 4, 7, 8] and ranges["dev_files"][1] == [5, 6, 9]
