"""The count of vocabulary pieces a split never uses (`write_split`'s unused_ids): those of the kept examples
only, the reserved ids aside, the same for any number of workers."""

import os
import random

import pytest
import tensorflow as tf

from t2t_repro.data.encoding_blocks import BlockJob
from t2t_repro.data.split_writer import EncodingPool, write_split
from t2t_repro.data.vocabulary import train_vocabulary
from t2t_repro.special_tokens import EOS_ID, PAD_ID, UNK_ID

WORDS = "the a house cat dog Haus Katze Hund über groß small runs läuft".split()
RARE = "QQQ"  # a piece of its own (a user symbol), only in a pair too long to keep


@pytest.fixture(scope="module")
def vocabulary(tmp_path_factory):
    rng = random.Random(0)
    sentences = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 8))) for _ in range(200)]
    return train_vocabulary(sentences + [RARE], tmp_path_factory.mktemp("vocab") / "vocab", 400, "bpe",
                            user_defined_symbols=(RARE,))


def _pairs():
    rng = random.Random(1)
    pairs = [(" ".join(rng.choice(WORDS[:6]) for _ in range(rng.randint(1, 5))),
              " ".join(rng.choice(WORDS[:6]) for _ in range(rng.randint(1, 5)))) for _ in range(40)]
    pairs.insert(17, (" ".join([RARE] + WORDS * 3), "groß"))  # over max_tokens: dropped, its ids not counted
    pairs.insert(23, ("", "Haus"))  # empty side: dropped
    return pairs


def _ids_in_records(directory, names):
    used = set()
    for name in names:
        for record in tf.data.TFRecordDataset(os.path.join(directory, name)).as_numpy_iterator():
            feature = tf.train.Example.FromString(record).features.feature
            used.update(feature["inputs"].int64_list.value, feature["targets"].int64_list.value)
    return used


@pytest.mark.parametrize("workers", [1, 2])
def test_unused_ids_counts_the_pieces_no_kept_example_holds(tmp_path, vocabulary, workers):
    """Several blocks (6 pairs each) over 3 shards; the direct count reads the records back."""
    job = BlockJob(vocabulary.model_path, str(tmp_path / ".blocks"), "train", 3, 20, False)
    with EncodingPool(workers) as pool:
        names, counts = write_split(pool, job, str(tmp_path), _pairs(), block_pairs=6, shuffle=True)
    used = _ids_in_records(tmp_path, names)
    unused = set(range(vocabulary.vocab_size)) - used - {PAD_ID, EOS_ID, UNK_ID} - set(vocabulary.byte_piece_ids())
    assert counts["dropped_too_long"] == counts["dropped_empty"] == 1
    assert vocabulary.encode(RARE)[-1] in unused  # held only by the dropped pair
    assert counts["unused_ids"] == len(unused) > 0
