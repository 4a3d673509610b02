"""The embedded toy problems: the synthetic language pair, the toy treebank, their problems and the baselines."""

import importlib.util
import os
import re

import pytest

from t2t_repro import catalog, registry
from t2t_repro.data import ptb_tree
from t2t_repro.data.parsing import PHRASE_LABELS, POS_TAGS
from t2t_repro.data.toy.grammar import Clause, Grammar, NounPhrase, Sentence, sentence_words, write_treebank
from t2t_repro.data.toy.language import GermanRealiser, detokenize, word_by_word_dictionary, write_toy_corpus
from t2t_repro.data.toy.lexicon import build_lexicon
from t2t_repro.problems import toy
from t2t_repro.problems.toy import STAMP_FILE, ToyEnde, ToyParsing

SMALL = {"num_train": 1500, "num_dev": 100, "num_test": 200}
_TOKENS = re.compile(r"[^\s.,?]+|[.,?]")


def _load_tool():
    path = os.path.join(os.path.dirname(__file__), os.pardir, "tools", "toy_baselines.py")
    spec = importlib.util.spec_from_file_location("toy_baselines", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_toy_corpus(tmp_path_factory.mktemp("toy") / "text", seed=1, **SMALL)


@pytest.fixture(scope="module")
def treebank(tmp_path_factory):
    return write_treebank(tmp_path_factory.mktemp("toy") / "wsj", seed=1, num_train=400, num_dev=40, num_test=60)


def _read(directory):
    """{file name: bytes} of the files of a directory."""
    contents = {}
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name), "rb") as f:
            contents[name] = f.read()
    return contents


# The language pair ----------------------------------------------------------------------------------------------


def test_corpus_is_deterministic_for_a_seed(corpus, tmp_path):
    assert _read(write_toy_corpus(tmp_path / "again", seed=1, **SMALL)) == _read(corpus)
    other = _read(write_toy_corpus(tmp_path / "other", seed=2, **SMALL))
    assert other["train.en"] != _read(corpus)["train.en"] and other["test.de"] != _read(corpus)["test.de"]


def test_corpus_sizes_lengths_and_distinct_splits(corpus):
    sources = {}
    for split, size in (("train", 1500), ("dev", 100), ("test", 200)):
        english, german = _lines(os.path.join(corpus, f"{split}.en")), _lines(os.path.join(corpus, f"{split}.de"))
        assert len(english) == len(german) == size
        lengths = [len(_TOKENS.findall(line)) for line in english]
        assert min(lengths) >= 3 and max(lengths) <= 50 and max(lengths) > 25
        assert all(line[0].isupper() and line[-1] in ".?" for line in english + german)
        sources[split] = set(english)
    assert len(sources["train"]) == 1500
    assert not sources["train"] & sources["test"] and not sources["train"] & sources["dev"]


def test_corpus_has_the_hard_parts_of_translation(corpus):
    german = " ".join(_lines(os.path.join(corpus, "train.de")))
    for marker in (", weil ", ", dass ", ", der ", ", den ", "kein", " im ", "-"):
        assert marker in german, marker
    # Verb-final subordinate clauses: "... , weil <subject ...> <finite verb>." ends in a verb, not an object.
    lexicon = build_lexicon(1)
    finite = {form for word in lexicon.verbs for form in word.german[:5]}
    finite |= set("bin ist sind war waren habe hat haben werde wird werden kann können muss müssen".split())
    lines = _lines(os.path.join(corpus, "train.de"))
    endings = [line.rsplit(" ", 1)[-1].rstrip(".") for line in lines if re.search(r", weil [^,]*\.$", line)]
    assert len(endings) > 10 and all(word in finite for word in endings)


def test_vocabulary_has_thousands_of_words(corpus):
    lexicon = build_lexicon(1)
    english = {form for word in lexicon.words() for form in word.forms}
    assert len(english) > 3000
    assert len({word.lower() for line in _lines(os.path.join(corpus, "train.en")) for word in _TOKENS.findall(line)})\
        > 1500


LEX = build_lexicon(1)
WORDS = {word.forms[0]: word for word in LEX.words()}


def noun(word, determiner="the", plural=False, **parts):
    return NounPhrase("noun", WORDS[word], plural, determiner, **parts)


def verb(word):
    return WORDS[word]


HAND_BUILT = [
    (Clause(noun("man"), verb("laugh"), "present",
            subordinate=("because", Clause(noun("dog"), verb("see"), "present", obj=noun("man")))),
     "The man laughs because the dog sees the man.", "Der Mann lacht, weil der Hund den Mann sieht."),
    (Clause(noun("dog"), verb("see"), "perfect", obj=noun("man"), adverb="today", front="adverb"),
     "Today the dog has seen the man.", "Heute hat der Hund den Mann gesehen."),
    (Clause(noun("developer", modifier=WORDS["software"]), verb("give"), "present", obj=noun("book"),
            recipient=noun("child")),
     "The software developer gives the book to the child.", "Der Software-Entwickler gibt dem Kind das Buch."),
    (Clause(noun("man", relative=Clause(noun("dog"), verb("see"), "present", gap="object")), verb("laugh"), "past"),
     "The man that the dog sees laughed.", "Der Mann, den der Hund sieht, lachte."),
    (Clause(NounPhrase("pronoun", "she"), verb("see"), "past", negated=True,
            obj=noun("dog", "a", adjectives=(WORDS["big"],)), pps=(("in", noun("garden", modifier=WORDS["apple"])),)),
     "She did not see a big dog in the apple garden.", "Sie sah keinen großen Hund im Apfelgarten."),
    (Clause(noun("cat", "", plural=True), verb("help"), "future", question=True,
            obj=noun("child", "two", plural=True, adjectives=(WORDS["old"],))),
     "Will cats help two old children?", "Werden Katzen zwei alten Kindern helfen?"),
    (Clause(noun("queen", "I"), None, "present", predicate=WORDS["happy"],
            pps=(("with", noun("apple", "a")),)),
     "My queen is happy with an apple.", "Meine Königin ist mit einem Apfel glücklich."),
]


@pytest.mark.parametrize("clause, english, german", HAND_BUILT, ids=[row[1] for row in HAND_BUILT])
def test_translation_rules_on_hand_built_sentences(clause, english, german):
    grammar = Grammar(lexicon=LEX)
    sentence = Sentence(clause)
    assert detokenize(sentence_words(grammar.tree(sentence))) == english
    assert GermanRealiser().sentence(sentence) == german


def test_word_by_word_dictionary_covers_the_english_words(corpus):
    dictionary = word_by_word_dictionary(1)
    words = {w for line in _lines(os.path.join(corpus, "train.en")) for w in _TOKENS.findall(line) if w not in ".,?"}
    assert all(w in dictionary or w.lower() in dictionary for w in words)
    assert dictionary["dogs"] == "Hunde" and dictionary["saw"] == "sah" and dictionary["because"] == "weil"


def test_baselines_are_far_below_a_trained_model(corpus):
    tool = _load_tool()
    sources, references = _lines(os.path.join(corpus, "test.en")), _lines(os.path.join(corpus, "test.de"))
    scores = {row["baseline"]: row["bleu"] for row in tool.score_baselines(ToyEnde(), sources, references)}
    assert set(scores) == {"copy", "word_by_word"}
    assert scores["copy"] < 5 and 3 < scores["word_by_word"] < 40


# The treebank ---------------------------------------------------------------------------------------------------


def test_treebank_layout_sizes_and_determinism(treebank, tmp_path):
    sections = sorted(name for name in os.listdir(treebank) if name.isdigit())
    assert sections == [f"{s:02d}" for s in range(2, 24)]
    counts = {}
    for section in sections:
        files = sorted(os.listdir(os.path.join(treebank, section)))
        assert files and all(re.fullmatch(rf"wsj_{section}\d\d\.mrg", f) for f in files)
        counts[section] = sum(len(ptb_tree.read_trees(os.path.join(treebank, section, f))) for f in files)
    assert sum(counts[f"{s:02d}"] for s in range(2, 22)) == 400 and counts["22"] == 40 and counts["23"] == 60
    again = write_treebank(tmp_path / "again", seed=1, num_train=400, num_dev=40, num_test=60)
    assert _read(os.path.join(again, "23")) == _read(os.path.join(treebank, "23"))
    other = write_treebank(tmp_path / "other", seed=2, num_train=400, num_dev=40, num_test=60)
    assert _read(os.path.join(other, "23")) != _read(os.path.join(treebank, "23"))


def test_trees_are_well_formed_ptb_with_tags(treebank):
    path = os.path.join(treebank, "23", sorted(os.listdir(os.path.join(treebank, "23")))[0])
    assert _read(os.path.join(treebank, "23"))[os.path.basename(path)].startswith(b"( (S")
    trees = ptb_tree.read_trees(path)
    for tree in trees:
        assert tree.label == "" and len(tree.children) == 1  # the Treebank's unlabelled wrapper
        for tag, word in tree.preterminals():
            assert tag in POS_TAGS or (tag == "-NONE-" and word.startswith("*T*-")), (tag, word)
        cleaned = ptb_tree.clean_tree(tree)
        labels = [node.label for event, node in ptb_tree.walk(cleaned) if event == ptb_tree.OPEN]
        assert set(labels) <= set(PHRASE_LABELS)
        assert ptb_tree.delinearise(ptb_tree.linearise(cleaned), cleaned.words()).to_ptb() == cleaned.to_ptb()
    all_text = b"".join(_read(os.path.join(treebank, "02")).values()).decode("utf-8")
    for label in ("(SBAR", "(PP", "(WHNP-1", "(-NONE- *T*-1)", "(NP-SBJ", "(CC", "(, ,)"):
        assert label in all_text, label


# The registered problems ----------------------------------------------------------------------------------------


class TinyToyEnde(ToyEnde):
    vocab_size = 600
    train_shards = 1
    num_train, num_dev, num_test = 300, 20, 30


class TinyToyParsing(ToyParsing):
    vocab_size = 500
    train_shards = 1
    num_train, num_dev, num_test = 200, 20, 30


def test_problems_are_registered():
    assert isinstance(catalog.get_problem("toy_ende"), ToyEnde)
    assert isinstance(catalog.get_problem("toy_parsing"), ToyParsing)
    assert registry.description(ToyEnde) and registry.description(ToyParsing)


def test_toy_ende_generates_through_the_translation_path(tmp_path):
    problem = TinyToyEnde()
    summary = problem.generate_data(tmp_path / "data", tmp_dir=tmp_path / "tmp")
    assert summary["splits"]["train"]["examples"] == 300
    text_dir = tmp_path / "tmp" / "toy_ende_seed1"
    expected = list(zip(_lines(text_dir / "test.en"), _lines(text_dir / "test.de")))
    assert problem.text_pairs("test", tmp_path / "data") == expected


def test_toy_parsing_generates_through_the_parsing_path(tmp_path):
    problem = TinyToyParsing()
    summary = problem.generate_data(tmp_path / "data", tmp_dir=tmp_path / "tmp")
    assert summary["splits"]["test"]["examples"] == 30
    source, target = problem.text_pairs("test", tmp_path / "data")[0]
    tree = ptb_tree.delinearise(target, source.split())
    assert tree.label in ("S", "SQ") and tree.words() == source.split()


def test_generated_text_is_built_once_and_rebuilt_when_incomplete(tmp_path):
    problem = TinyToyEnde()
    directory = problem.raw_text_dir(tmp_path, None)
    train = os.path.join(directory, "train.en")
    written = os.stat(train).st_mtime_ns
    assert problem.raw_text_dir(tmp_path, None) == directory and os.stat(train).st_mtime_ns == written
    with open(train, "w") as f:
        f.write("truncated\n")
    os.remove(os.path.join(directory, STAMP_FILE))  # as an interrupted build leaves it
    problem.raw_text_dir(tmp_path, None)
    assert len(_lines(train)) == 300 and sorted(os.listdir(tmp_path)) == ["toy_ende_seed1"]


def test_toy_data_is_regenerated_when_the_generators_change(tmp_path, monkeypatch):
    problem = TinyToyEnde()
    data_dir, tmp_dir = tmp_path / "data", tmp_path / "tmp"
    problem.generate_data(data_dir, tmp_dir=tmp_dir)
    assert problem.data_ready(data_dir)
    assert problem.metadata(data_dir)["data_version"]["generator"] == toy.generator_digest()
    monkeypatch.setattr(toy, "generator_digest", lambda: "edited-generator")
    assert not problem.data_ready(data_dir)
    assert problem.generate_data(data_dir, tmp_dir=tmp_dir)["reused"] is False
    assert problem.metadata(data_dir)["data_version"]["generator"] == "edited-generator"
    assert problem.generate_data(data_dir, tmp_dir=tmp_dir)["reused"] is True
