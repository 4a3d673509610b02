"""Token-budget batching over TFRecord shards: budgets, filtering, padding, seeded shuffling, resumable iterators."""

import collections
import itertools

import numpy as np
import pytest
import tensorflow as tf

from t2t_repro.data import reading, records
from t2t_repro.data.batching import bucket_lengths, padding_efficiency, token_batches
from t2t_repro.errors import UserError
from t2t_repro.special_tokens import EOS_ID, PAD_ID

BATCH_TOKENS = 2048
MAX_LENGTH = 128


def _realistic_pairs(count, seed=0):
    """Sentence-pair lengths like subword-encoded WMT: log-normal source lengths (median about 26 tokens), targets
    about 8% longer with per-sentence spread, and a few very long pairs."""
    rng = np.random.default_rng(seed)
    sources = np.maximum(1, np.round(rng.lognormal(np.log(25), 0.6, count))).astype(int)
    targets = np.maximum(1, np.round(sources * rng.lognormal(np.log(1.08), 0.18, count))).astype(int)
    pairs = []
    for index, (source_length, target_length) in enumerate(zip(sources, targets)):
        source = list(rng.integers(3, 1000, source_length)) + [EOS_ID]
        target = [index + 3] + list(rng.integers(3, 1000, target_length - 1)) + [EOS_ID]
        pairs.append(([int(t) for t in source], [int(t) for t in target]))
    return pairs


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    directory = tmp_path_factory.mktemp("shards")
    pairs = _realistic_pairs(3000)
    names, count = records.write_split(str(directory), "train", pairs, num_shards=3, shuffle=True)
    assert count == len(pairs)
    return pairs, str(directory), names


def _dataset(shards, max_length=None, shard=None):
    _, directory, names = shards
    return reading.read_split(directory, names, max_length, shard)


def _unpad(row):
    row = list(row)
    return tuple(row[: row.index(EOS_ID) + 1])


def test_records_round_trip_every_pair(shards):
    pairs, _, _ = shards
    read = [(tuple(e["inputs"]), tuple(e["targets"])) for e in _dataset(shards).as_numpy_iterator()]
    written = [(tuple(s), tuple(t)) for s, t in pairs]
    assert sorted(read) == sorted(written)
    assert read[:100] != written[:100]  # the train shards are shuffled


def _one_record_at_a_time(shards):
    """The pairs of the shards as parsing the records one by one gives them (the reading before blocks)."""
    _, directory, names = shards
    features = {"inputs": tf.io.RaggedFeature(tf.int64), "targets": tf.io.RaggedFeature(tf.int64)}
    files = tf.data.TFRecordDataset([f"{directory}/{name}" for name in names], num_parallel_reads=min(8, len(names)))
    return [(tuple(example["inputs"].numpy()), tuple(example["targets"].numpy()))
            for example in (tf.io.parse_single_example(record, features) for record in files)]


@pytest.mark.parametrize("max_length, shard", [(None, None), (40, None), (40, (3, 1)), (None, (2, 0))])
def test_block_reading_gives_the_pairs_of_record_by_record_reading_in_order(shards, max_length, shard):
    expected = _one_record_at_a_time(shards)
    if shard:
        expected = expected[shard[1]::shard[0]]  # a worker's share is taken before the length limit
    if max_length:
        expected = [pair for pair in expected if max(len(side) for side in pair) <= max_length]
    read = [(tuple(e["inputs"]), tuple(e["targets"])) for e in _dataset(shards, max_length, shard).as_numpy_iterator()]
    assert read == expected
    assert _dataset(shards).element_spec["inputs"] == tf.TensorSpec([None], tf.int32)


def test_a_pair_longer_than_max_length_stops_the_batches(shards):
    with pytest.raises(tf.errors.OpError, match="pad_to_bucket_boundary"):
        list(token_batches(_dataset(shards), BATCH_TOKENS, MAX_LENGTH).as_numpy_iterator())


def test_every_batch_within_its_token_budget_and_no_pair_lost(shards):
    pairs, _, _ = shards
    allowed = bucket_lengths(MAX_LENGTH)
    seen = collections.Counter()
    for batch in token_batches(_dataset(shards, MAX_LENGTH), BATCH_TOKENS, MAX_LENGTH).as_numpy_iterator():
        inputs, targets = batch["inputs"], batch["targets"]
        assert inputs.dtype == np.int32 and inputs.shape == targets.shape
        assert inputs.shape[1] in allowed
        assert inputs.size <= BATCH_TOKENS and targets.size <= BATCH_TOKENS
        for source, target in zip(inputs, targets):
            seen[(_unpad(source), _unpad(target))] += 1
    expected = collections.Counter(
        (tuple(s), tuple(t)) for s, t in pairs if len(s) <= MAX_LENGTH and len(t) <= MAX_LENGTH
    )
    assert seen == expected
    assert len(expected) < len(pairs)  # the long tail really was filtered


def _reference_batches(pairs, batch_tokens, max_length):
    """What token_batches must produce, in plain Python: each pair that fits joins the bucket of the first length
    L >= its longer side; a bucket holding batch_tokens // L pairs is emitted at once, padded to L; when the
    pairs run out, the partial buckets follow, shortest L first."""
    lengths = bucket_lengths(max_length)
    buckets = collections.defaultdict(list)

    def padded(index):
        rows = buckets.pop(index)
        return tuple(np.array([row + [PAD_ID] * (lengths[index] - len(row)) for row in side], np.int32)
                     for side in zip(*rows))

    for source, target in pairs:
        if len(source) > max_length or len(target) > max_length:
            continue
        index = next(i for i, length in enumerate(lengths) if length >= max(len(source), len(target)))
        buckets[index].append((list(source), list(target)))
        if len(buckets[index]) == batch_tokens // lengths[index]:
            yield padded(index)
    for index in sorted(buckets):
        yield padded(index)


@pytest.mark.parametrize("batch_tokens, max_length, repeat", [(2048, 128, False), (512, 64, False), (512, 64, True)])
def test_batches_are_exactly_the_reference_bucketing(shards, batch_tokens, max_length, repeat):
    """Same pairs, same order, same padded shapes as the bucketing spelled out in Python (training losses
    depend on it: tests/test_golden.py), through the end of the data and across epochs."""
    read = [(e["inputs"].tolist(), e["targets"].tolist()) for e in _dataset(shards).as_numpy_iterator()]
    batches = token_batches(_dataset(shards, max_length), batch_tokens, max_length, repeat=repeat)
    count = 400 if repeat else None
    expected = list(itertools.islice(_reference_batches(itertools.cycle(read) if repeat else read, batch_tokens,
                                                        max_length), count))
    actual = list(batches.take(count or -1).as_numpy_iterator())
    assert len(actual) == len(expected)
    for batch, (inputs, targets) in zip(actual, expected):
        np.testing.assert_array_equal(batch["inputs"], inputs, strict=True)
        np.testing.assert_array_equal(batch["targets"], targets, strict=True)


def test_padding_efficiency_on_realistic_lengths(shards):
    batches = token_batches(_dataset(shards, MAX_LENGTH), BATCH_TOKENS, MAX_LENGTH, shuffle=True, seed=1)
    batches = batches.as_numpy_iterator()
    assert padding_efficiency(batches) >= 0.85


def test_padding_efficiency_counts_both_sides():
    batch = {"inputs": np.array([[5, EOS_ID, PAD_ID, PAD_ID]]), "targets": np.array([[5, 6, 7, EOS_ID]])}
    assert padding_efficiency([batch]) == pytest.approx(6 / 8)


def _first_batches(dataset, count):
    return [(b["inputs"].tolist(), b["targets"].tolist()) for b in dataset.take(count).as_numpy_iterator()]


def test_seeded_shuffle_is_reproducible_and_seed_dependent(shards):
    def run(seed):
        batches = token_batches(_dataset(shards, 64), 512, 64, shuffle=True, seed=seed, repeat=True,
                                shuffle_buffer=1000)
        return _first_batches(batches, 8)

    assert run(7) == run(7)
    assert run(7) != run(8)


def test_iterator_position_survives_a_checkpoint(shards, tmp_path):
    dataset = token_batches(_dataset(shards, 64), 512, 64, shuffle=True, seed=3, repeat=True, shuffle_buffer=500)
    iterator = iter(dataset)
    for _ in range(7):
        next(iterator)
    checkpoint = tf.train.Checkpoint(iterator=iterator)
    path = checkpoint.save(str(tmp_path / "ckpt"))
    after_save = [next(iterator) for _ in range(6)]
    checkpoint.restore(path)
    after_restore = [next(iterator) for _ in range(6)]
    for first, second in zip(after_save, after_restore):
        np.testing.assert_array_equal(first["inputs"], second["inputs"])
        np.testing.assert_array_equal(first["targets"], second["targets"])


def test_bucket_lengths_grow_slowly_and_end_at_max_length():
    for growth in (1.05, 1.1):
        lengths = bucket_lengths(256, growth=growth)
        assert lengths[0] == 8 and lengths[-1] == 256
        assert all(b > a and b <= max(a + 1, int(a * growth)) for a, b in zip(lengths, lengths[1:-1]))
    assert len(bucket_lengths(256)) == 76 and len(bucket_lengths(256, growth=1.1)) == 42


def test_max_length_beyond_the_budget_is_a_user_error(shards):
    with pytest.raises(UserError, match="exceeds batch_tokens"):
        token_batches(_dataset(shards, 128), batch_tokens=100, max_length=128)
