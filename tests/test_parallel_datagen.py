"""Datagen with worker processes: the same bytes for any number of workers, exactly the single-pass round-robin
shards, sentences encoded word by word exactly as SentencePiece encodes them whole, and examples serialized
without TensorFlow exactly as tf.train.Example does."""

import os
import random

import pytest
import tensorflow as tf

from t2t_repro.data import records
from t2t_repro.data.encoding_blocks import WordCache
from t2t_repro.data.example_proto import ExampleSerializer
from t2t_repro.data.split_writer import EncodingPool
from t2t_repro.data.translation import TranslationProblem
from t2t_repro.data.vocabulary import train_vocabulary
from t2t_repro.errors import UserError


class SmallBlocks(TranslationProblem):
    """wmt_ende's flow with tiny blocks and many shards, so that every block feeds every shard unevenly."""

    name = "small_blocks"
    source_language, target_language = "en", "de"
    vocab_size = 300
    train_shards = 5
    encode_chunk_pairs = 7
    max_tokens_per_side = 40


def _corpus(directory, seed=0):
    rng = random.Random(seed)
    words = "the a house cat Haus Katze über groß small 1,500 well-known Straße runs läuft".split()
    directory.mkdir()
    for split, count in (("train", 150), ("dev", 23), ("test", 9)):
        sources, targets = [], []
        for _ in range(count):
            length = rng.choice([0, 3, 5, 8, 60]) if split == "train" else rng.randint(1, 9)
            sources.append(" ".join(rng.choice(words) for _ in range(length)))
            targets.append(" ".join(rng.choice(words) for _ in range(rng.randint(1, 9))))
        (directory / f"{split}.en").write_text("\n".join(sources) + "\n", encoding="utf-8")
        (directory / f"{split}.de").write_text("\n".join(targets) + "\n", encoding="utf-8")
    return directory


def _contents(directory):
    return {name: (directory / name).read_bytes() for name in sorted(os.listdir(directory))
            if name != records.METADATA_FILE}


def test_the_data_is_the_same_for_any_number_of_workers(tmp_path):
    manual = _corpus(tmp_path / "manual")
    problem = SmallBlocks()
    summaries = {}
    for workers in (1, 2, 3):
        summaries[workers] = problem.generate_data(tmp_path / f"data{workers}", manual_dir=manual, workers=workers)
    contents = {workers: _contents(tmp_path / f"data{workers}" / "small_blocks") for workers in summaries}
    assert contents[1] == contents[2] == contents[3]
    assert summaries[1]["splits"] == summaries[2]["splits"] == summaries[3]["splits"]
    train = summaries[1]["splits"]["train"]
    assert train["dropped_empty"] > 0 and train["dropped_too_long"] > 0 and train["examples"] > 0
    assert len([name for name in contents[1] if name.startswith("train-")]) == 5
    assert not any(name.startswith(".blocks") for name in os.listdir(tmp_path / "data3" / "small_blocks"))


def test_shards_are_the_round_robin_of_one_pass_shuffled_per_shard(tmp_path):
    manual = _corpus(tmp_path / "manual", seed=1)
    problem = SmallBlocks()
    data_dir = tmp_path / "data"
    problem.generate_data(data_dir, manual_dir=manual, workers=2)
    vocab = problem.vocabularies(data_dir).target
    kept = []
    for source, target in problem.raw_pairs("train", None, manual):
        source, target = source.strip(), target.strip()
        ids = (vocab.encode(source) + [1], vocab.encode(target) + [1])
        if source and target and max(map(len, ids)) <= problem.max_tokens_per_side:
            kept.append(ids)
    reference = tmp_path / "reference"
    reference.mkdir()
    names, count = records.write_split(str(reference), "train", kept, problem.train_shards, shuffle=True)
    assert count == problem.metadata(data_dir)["splits"]["train"]["examples"]
    for name in names:
        assert (data_dir / "small_blocks" / name).read_bytes() == (reference / name).read_bytes()
    assert problem.text_pairs("dev", data_dir)[:2] == [
        tuple(pair) for pair in zip(*(open(manual / f"dev.{lang}", encoding="utf-8").read().splitlines()[:2]
                                      for lang in ("en", "de")))
    ]


def test_examples_serialize_as_tf_train_example_does():
    serialize = ExampleSerializer(vocab_size=1000)
    rng = random.Random(0)
    cases = [([], []), ([1], []), ([0], [0]), ([127, 128, 16383, 16384], [2**40, -1]), (list(range(999, 1003)), [5])]
    cases += [([rng.randrange(1000) for _ in range(rng.randint(0, 300))],
                [rng.randrange(1000) for _ in range(rng.randint(0, 300))]) for _ in range(200)]
    for inputs, targets in cases:
        feature = {
            "inputs": tf.train.Feature(int64_list=tf.train.Int64List(value=inputs)),
            "targets": tf.train.Feature(int64_list=tf.train.Int64List(value=targets)),
        }
        expected = tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString(deterministic=True)
        assert serialize(inputs, targets) == expected


def test_workers_below_one_are_refused():
    with pytest.raises(UserError, match="workers=0: must be at least 1"):
        EncodingPool(0)


@pytest.mark.parametrize("model_type", ["bpe", "unigram"])
def test_word_cache_encodes_exactly_as_sentencepiece_does_whole_sentences(tmp_path, model_type):
    rng = random.Random(2)
    words = "the a house Haus über groß 1,500 well-known Straße café (NP )NP ▁x naïve 東京 \t tab".split(" ")
    sentences = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))) for _ in range(400)]
    vocab = train_vocabulary(sentences, tmp_path / "vocab", 400, model_type, user_defined_symbols=("\u2581(NP",))
    tricky = ["", " ", "a  b", " lead", "trail ", "two  spaces  here", "\u2581", "x\u2581y z", "unseen Ωmega ☃",
              "(NP house )NP", "a\tb c", "  "]
    texts = sentences + tricky + [rng.choice(sentences) for _ in range(50)]
    cache = WordCache(vocab, max_words=40)  # small: it starts afresh along the way
    for start in range(0, len(texts), 97):
        block = texts[start:start + 97]
        assert cache.encode_batch(block) == [vocab.encode(text) for text in block]
