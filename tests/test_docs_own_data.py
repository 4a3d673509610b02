"""docs/own_data.md and docs/extending.md checked against the tools (their flags are checked with every page's by
test_docs_commands): the --problem and --hparams names they use are registered, the code they show is the
example's or runs, and the commands that need no training run as written (from the repository root, or beside
the user directory extending.md writes; the placeholders M and D given real directories) and print what the
pages show."""

import json
import os
import random
import re

import pytest

from conftest import run_cli_in_process, write_parallel_corpus
from doc_pages import ROOT, TOOLS, fenced_blocks, page_commands, shell_words

DOCS = ("docs/own_data.md", "docs/extending.md")
USR_DIR = "my_usr_dir"  # the user directory extending.md writes, from its `# my_usr_dir/<file>.py` blocks



def shown_block(path, first_line_start):
    """The lines of the page's fenced block whose first line starts with `first_line_start`."""
    blocks = [body for _, body in fenced_blocks((ROOT / path).read_text(encoding="utf-8"))
              if body.startswith(first_line_start)]
    assert len(blocks) == 1, f"{path}: {len(blocks)} blocks start with {first_line_start!r}"
    return blocks[0].splitlines()


def shown_line(path, start):
    """The one line of the page's fenced blocks that starts with `start`."""
    lines = [line for _, body in fenced_blocks((ROOT / path).read_text(encoding="utf-8"))
             for line in body.splitlines() if line.startswith(start)]
    assert len(lines) == 1, f"{path}: {len(lines)} lines start with {start!r}"
    return lines[0]


def pattern_of(shown):
    """A regex of a line a page shows as output: its numbers stand for any numbers (they are one corpus's), a "..."
    for anything, runs of spaces for any spaces."""
    parts = re.split(r"(\.\.\.|\d[\d,.]*\d|\d|\s+)", shown.strip())
    regex = ""
    for part in parts:
        if part == "...":
            regex += ".*"
        elif re.fullmatch(r"\d[\d,.]*\d|\d", part):
            regex += r"\d[\d,.]*"
        elif part.isspace():
            regex += r"\s+"
        else:
            regex += re.escape(part)
    return re.compile(regex)


def assert_shows(output, shown_lines):
    """Each line the page shows (but "..." alone) matches a line of `output`, in the page's order."""
    lines = [line.strip() for line in output.splitlines()]
    position = 0
    for shown in shown_lines:
        if shown.strip() in ("", "..."):
            continue
        pattern = pattern_of(shown)
        found = next((i for i in range(position, len(lines)) if pattern.fullmatch(lines[i])), None)
        assert found is not None, f"the page shows {shown!r}; the command printed:\n{output}"
        position = found + 1


# The corpora and the commands run -------------------------------------------------------------------------------


def write_rich_corpus(directory):
    """M/{train,dev,test}.{en,es}: 3,000 train pairs of words drawn from 4,000 random letter strings a side, enough
    text for a vocabulary of 8,000 pieces (the pages' vocab_size)."""
    rng = random.Random(0)
    directory.mkdir(parents=True)

    def lexicon(count):
        return ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9)))
                for _ in range(count)]

    english, spanish = lexicon(4000), lexicon(4000)
    for split, count in (("train", 3000), ("dev", 20), ("test", 20)):
        sources, targets = [], []
        for _ in range(count):
            words = [rng.randrange(4000) for _ in range(rng.randint(4, 12))]
            sources.append(" ".join(english[w] for w in words))
            targets.append(" ".join(spanish[w] for w in words))
        (directory / f"{split}.en").write_text("\n".join(sources) + "\n", encoding="utf-8")
        (directory / f"{split}.es").write_text("\n".join(targets) + "\n", encoding="utf-8")
    return directory


def write_tsv_corpus(parallel, directory):
    """translate_tsv's files, M/{train,dev,test}.tsv, of a parallel corpus."""
    directory.mkdir(parents=True)
    for split in ("train", "dev", "test"):
        sources = (parallel / f"{split}.en").read_text(encoding="utf-8").splitlines()
        targets = (parallel / f"{split}.es").read_text(encoding="utf-8").splitlines()
        (directory / f"{split}.tsv").write_text("".join(f"{s}\t{t}\n" for s, t in zip(sources, targets)),
                                                encoding="utf-8")
    return directory


def write_usr_dir(directory):
    """The files extending.md shows as `# my_usr_dir/<file>.py` blocks, written to directory/my_usr_dir."""
    written = []
    for info, body in fenced_blocks((ROOT / "docs/extending.md").read_text(encoding="utf-8")):
        first = body.splitlines()[0] if body else ""
        if info == "python" and first.startswith(f"# {USR_DIR}/"):
            path = directory / first[2:].strip()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body, encoding="utf-8")
            written.append(path.name)
    assert sorted(written) == ["__init__.py", "my_hparams.py", "translate_tsv.py"], written
    return directory / USR_DIR


# Each documented command the test runs: its page, its text (compared word for word with the page's), where the
# page runs it ("root": the repository root; "usr": the directory holding my_usr_dir) and the corpus M stands for.
# They run in this process (the console script's own main, sparing a TensorFlow start-up each), as test_usr_dir's
# do: the user directories' names stay registered for the session, as after any import of a user directory.
RUNS = {
    "translate_files help": ("docs/own_data.md", "t2t-repro-trainer --problem=translate_files --problem_help",
                             "root", None),
    "parse_files help": ("docs/own_data.md", "t2t-repro-trainer --problem=parse_files --problem_help", "root", None),
    "datagen vocab 8000": ("docs/own_data.md", "t2t-repro-datagen --problem=translate_files "
                           '--problem_overrides="source_language=en,target_language=es,vocab_size=8000" '
                           "--manual_dir=M --data_dir=D", "root", "rich"),
    "datagen vocab 8000, small corpus": ("docs/own_data.md", "t2t-repro-datagen --problem=translate_files "
                                         '--problem_overrides="source_language=en,target_language=es,'
                                         'vocab_size=8000" --manual_dir=M --data_dir=D', "root", "small"),
    "registry help": ("docs/extending.md", "t2t-repro-trainer --t2t_usr_dir=examples/usr_dir --registry_help",
                      "root", None),
    "example hparams help": ("docs/extending.md", "t2t-repro-trainer --t2t_usr_dir=examples/usr_dir "
                             "--hparams=transformer_en_es_small --hparams_help", "root", None),
    "example datagen": ("docs/extending.md", "t2t-repro-datagen --t2t_usr_dir=examples/usr_dir "
                        "--problem=translate_en_es_local --manual_dir=M --data_dir=D", "root", "small"),
    "tsv help": ("docs/extending.md", "t2t-repro-trainer --t2t_usr_dir=my_usr_dir --problem=translate_tsv "
                 "--problem_help", "usr", None),
    "tsv datagen": ("docs/extending.md", "t2t-repro-datagen --t2t_usr_dir=my_usr_dir --problem=translate_tsv "
                    '--problem_overrides="target_language=es,vocab_size=8000" --manual_dir=M --data_dir=D',
                    "usr", "tsv"),
    "tsv hparams help": ("docs/extending.md", "t2t-repro-trainer --t2t_usr_dir=my_usr_dir "
                         "--hparams=transformer_small_dropout3 --hparams_help", "usr", None),
}


def _slug(key):
    """The data directory's name of a run of RUNS."""
    return "data_" + re.sub(r"\W+", "_", key)


def _arguments(words, corpus, data_dir, directory):
    """The command's arguments with the placeholders M and D replaced by real directories, and the user directory
    made absolute as run from `directory` (in this process, which stays where it is)."""
    places = {"M": corpus, "D": data_dir}
    arguments = []
    for word in words[1:]:
        name, equals, value = word.partition("=")
        if equals and value in places:
            assert places[value] is not None, f"{word}: no directory given for {value}"
            word = f"{name}={places[value]}"
        elif name == "--t2t_usr_dir":
            word = f"{name}={os.path.join(directory, value)}"
        arguments.append(word)
    return arguments


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{key of RUNS: the finished command (returncode, stdout, stderr)}, "data": {key: its data directory},
    "corpora": {name: directory}."""
    tmp = tmp_path_factory.mktemp("docs")
    rich = write_rich_corpus(tmp / "rich")
    corpora = {None: None, "small": write_parallel_corpus(tmp / "small", languages=("en", "es")), "rich": rich,
               "tsv": write_tsv_corpus(rich, tmp / "tsv")}
    places = {"root": ROOT, "usr": write_usr_dir(tmp).parent}
    shown = {path: {" ".join(words) for words in page_commands(path)} for path in DOCS}
    results = {"data": {key: tmp / _slug(key) for key in RUNS}, "corpora": corpora}
    for key, (path, text, where, corpus) in RUNS.items():
        words = shell_words(text)
        assert " ".join(words) in shown[path], f"{path} does not show the command {text!r} any more"
        results[key] = run_cli_in_process(TOOLS[words[0]], *_arguments(words, corpora[corpus], results["data"][key],
                                                                        places[where]))
    return results


def _succeeded(result):
    assert result.returncode == 0, result.stdout + result.stderr
    return result


# Flags and names ------------------------------------------------------------------------------------------------


def test_the_pages_use_every_tool_a_run_needs():
    used = {words[0] for path in DOCS for words in page_commands(path)}
    assert {"t2t-repro-trainer", "t2t-repro-datagen", "t2t-repro-decoder", "t2t-repro-exporter",
            "t2t-repro-serve", "t2t-repro-bleu", "t2t-repro-evalb"} <= used


def test_every_problem_and_hparams_set_named_is_registered(runs):
    listing = _succeeded(runs["registry help"]).stdout
    names = {line.split()[0] for line in listing.splitlines() if line.startswith("  ")}
    usr_code = (ROOT / "docs/extending.md").read_text(encoding="utf-8")
    names |= set(re.findall(r'^    name = "(\w+)"', usr_code, re.MULTILINE))
    names |= set(re.findall(r"^@register_hparams\ndef (\w+)\(", usr_code, re.MULTILINE))
    for path in DOCS:
        for words in page_commands(path):
            for word in words:
                flag, _, value = word.partition("=")
                if flag in ("--problem", "--hparams"):
                    assert value in names, f"{path}: {' '.join(words)}: {value} is not registered"


def test_the_example_excerpts_are_the_example_files():
    for info, body in fenced_blocks((ROOT / "docs/extending.md").read_text(encoding="utf-8")):
        first, _, code = body.partition("\n")
        if info == "python" and first.startswith("# examples/usr_dir/"):
            assert code in (ROOT / first[2:].strip()).read_text(encoding="utf-8"), first


# The commands, run ----------------------------------------------------------------------------------------------


def test_problem_help_lists_translate_files_settings_as_shown(runs):
    shown = shown_block("docs/own_data.md", "problem translate_files:")
    assert_shows(_succeeded(runs["translate_files help"]).stdout, shown)


def test_problem_help_lists_parse_files_settings(runs):
    rows = [line.split()[0] for line in _succeeded(runs["parse_files help"]).stdout.splitlines()[1:]]
    assert rows == ["vocab_size", "vocab_sample_sentences", "target_tags"]


def test_datagen_makes_and_records_the_data_and_says_when_pieces_go_unused(runs):
    result = _succeeded(runs["datagen vocab 8000"])
    assert re.fullmatch(r"translate_files: generated train 3,000, dev 20, test 20 examples; vocab 8,000; .*",
                        result.stdout.strip())
    assert_shows(result.stderr, [shown_line("docs/own_data.md", "translate_files: 3,020 of the 7,741")])
    metadata = json.loads((runs["data"]["datagen vocab 8000"] / "translate_files" / "metadata.json").read_text())
    assert metadata["problem_settings"] == {"source_language": "en", "target_language": "es", "vocab_size": 8000,
                                            "vocab_model_type": "bpe", "vocab_sample_sentences": 2_000_000,
                                            "vocab_from": None}
    assert metadata["manual_dir"] == str(runs["corpora"]["rich"])


def test_datagen_refuses_a_vocabulary_size_the_corpus_cannot_reach_as_shown(runs):
    result = runs["datagen vocab 8000, small corpus"]
    assert result.returncode == 2, result.stdout + result.stderr
    shown = shown_line("docs/own_data.md", "t2t-repro-datagen: error: problem translate_files: vocab_size=8000 cannot")
    # In this process the program's name is pytest's, not the console script's: compare from "error:" on.
    assert_shows("\n".join(line.partition(": ")[2] for line in result.stderr.splitlines()), [shown.partition(": ")[2]])
    assert not (runs["data"]["datagen vocab 8000, small corpus"] / "translate_files").exists()


def test_registry_help_marks_the_example_names_as_shown(runs):
    assert_shows(_succeeded(runs["registry help"]).stdout, shown_block("docs/extending.md", "Problems:"))


def test_hparams_help_shows_the_example_set(runs):
    values = {line.split()[0]: line.split()[1] for line in _succeeded(runs["example hparams help"]).stdout.splitlines()}
    assert (values["num_layers"], values["d_model"], values["num_heads"], values["train_steps"]) == (
        "3", "256", "4", "4000")


def test_the_example_problem_generates_its_data_at_the_size_the_corpus_gives(runs):
    result = _succeeded(runs["example datagen"])
    assert "translate_en_es_local: generated train 300, dev 20, test 20 examples" in result.stdout
    assert re.search(r"reaches \d+ pieces, not the 4,000 requested \(its class fixes vocab_size;",
                     result.stderr), result.stderr


def test_the_tsv_problem_of_the_page_lists_its_settings_and_generates_its_data(runs):
    shown = shown_block("docs/extending.md", "problem translate_tsv:")
    assert _succeeded(runs["tsv help"]).stdout.strip().splitlines() == shown
    result = _succeeded(runs["tsv datagen"])
    assert "translate_tsv: generated train 3,000, dev 20, test 20 examples; vocab 8,000;" in result.stdout
    metadata = json.loads((runs["data"]["tsv datagen"] / "translate_tsv" / "metadata.json").read_text())
    assert metadata["problem_settings"] == {"target_language": "es", "vocab_size": 8000}


def test_the_hparams_set_of_the_page_derives_from_transformer_base(runs):
    values = {line.split()[0]: line.split()[1] for line in _succeeded(runs["tsv hparams help"]).stdout.splitlines()}
    assert (values["num_layers"], values["dropout"], values["d_model"]) == ("4", "0.3", "512")
