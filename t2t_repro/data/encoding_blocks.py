"""Datagen's parallel part: one block of sentence pairs encoded, filtered, serialized and written to a block file.

A split's pairs are cut, in order, into blocks of `TextPairProblem.encode_chunk_pairs` pairs; each block is
handled by `encode_block`, in a worker process or in the main process, with the same result either way. A
block's kept examples are numbered from 0 in order, and example j goes to group j mod num_shards: the block
file holds the groups one after the other, each example as a 4-byte little-endian length and its serialized
tf.train.Example. `t2t_repro.data.split_writer` then gives shard s, from each block, the group that holds the
examples whose number in the whole split is s mod num_shards: exactly the round-robin of a single pass.

Dev and test blocks keep every pair and also write the pairs' text (`<block file>.jsonl`). Train blocks drop a
pair with an empty side or with a side longer than `max_tokens` ids (EOS included), and count them. A block also
reports the ids its kept examples use, from which `unused_ids` counts the pieces a split never uses.

Sentences are encoded word by word through a cache (`WordCache`): SentencePiece, trained as
`t2t_repro.data.vocabulary` trains it (words split at spaces, no piece spanning two words), encodes a sentence
as the concatenation of its space-separated words each encoded alone with the word-boundary mark in front, so
the ids are exactly those of encoding the whole sentence (the tests compare them), and a Zipfian corpus
mostly hits the cache. A sentence with two spaces in a row, or a space at either end, is encoded whole.

This module imports no TensorFlow: a worker process starts in a fraction of a second and holds only its
vocabulary and its cache. A worker ignores Ctrl-C (the main process, which gets it too, ends the run and its
workers, with one line instead of a traceback per worker) and ends when the main process is gone (`start_worker`).
"""

import dataclasses
import functools
import json
import os
import signal
import struct
import threading
import time
from itertools import chain

from t2t_repro.data.example_proto import ExampleSerializer
from t2t_repro.data.vocabulary import Vocabulary
from t2t_repro.special_tokens import EOS_ID

_LENGTH = struct.Struct("<I")
_LOADED = {}  # vocabulary model path -> WordCache: a worker's one or two (source and target) vocabularies
CACHE_WORDS = 1_000_000  # words a cache holds before it starts afresh (about 150 MB)


class WordCache:
    """Encodes sentences with a SentencePiece vocabulary, word by word through a cache of the words' ids.

    Args:
        vocabulary: a `t2t_repro.data.vocabulary.Vocabulary`.
        max_words: cached words at most; past it the cache is emptied (the ids never depend on it).
    """

    def __init__(self, vocabulary, max_words=CACHE_WORDS):
        self.vocabulary = vocabulary
        self.max_words = max_words
        self._ids = {}

    def encode_batch(self, texts):
        """The ids of each string of `texts`, without EOS: the same as `vocabulary.encode_batch(texts)`."""
        ids = self._ids
        split = [text.split(" ") for text in texts]
        by_word = ["" not in words for words in split]  # no empty text, no space at an end or two in a row
        plain = [words for words, ok in zip(split, by_word) if ok]
        new = set(chain.from_iterable(plain)).difference(ids)
        if len(ids) + len(new) > self.max_words:
            ids.clear()
            new = set(chain.from_iterable(plain))
        new = sorted(new)
        ids.update(zip(new, self.vocabulary.encode_batch(new, num_threads=1)))
        whole = iter(self.vocabulary.encode_batch([t for t, ok in zip(texts, by_word) if not ok], num_threads=1))
        lookup = ids.__getitem__
        return [list(chain.from_iterable(map(lookup, words))) if ok else next(whole)
                for words, ok in zip(split, by_word)]


def start_worker():
    """The set-up of a worker process: Ctrl-C is left to the main process, and the worker ends with it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch_parent()


def watch_parent(interval=1.0):
    """Ends this worker process when the process that started it is gone (killed, say), so none is left over."""
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(interval)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


@dataclasses.dataclass(frozen=True)
class BlockJob:
    """What every block of one split shares."""

    vocab_path: str  # the SentencePiece model to encode targets (and, shared, sources) with
    directory: str  # where block files go
    split: str
    num_shards: int
    max_tokens: int  # train pairs with a longer side (EOS included) are dropped
    keep_text: bool  # dev and test: keep every pair, and write its text
    source_vocab_path: str = ""  # the sources' own model when the vocabularies are separate ("": vocab_path)

    def block_path(self, index):
        return os.path.join(self.directory, f"{self.split}-block-{index:07d}.records")


@dataclasses.dataclass(frozen=True)
class BlockResult:
    """What a block produced: its counts, its shortest pair, the byte offsets of its groups and the ids it uses."""

    index: int
    pairs: int  # pairs read, kept or not
    examples: int
    dropped_empty: int
    dropped_too_long: int
    shortest: int | None  # the fewest ids on the longer side of a kept pair (EOS included)
    group_offsets: tuple  # num_shards + 1 offsets: group r is bytes [offsets[r], offsets[r + 1])
    used_ids: frozenset  # the ids in the kept examples' targets, and sources when shared, EOS included
    used_source_ids: frozenset = frozenset()  # separate vocabularies: the ids in the kept examples' sources


def _word_cache(vocab_path, keep=()):
    """The cached encoder of `vocab_path`, loaded once per process; those of other paths than `keep` go."""
    if vocab_path not in _LOADED:
        for path in [path for path in _LOADED if path not in keep]:
            del _LOADED[path]
        _LOADED[vocab_path] = WordCache(Vocabulary(vocab_path))
    return _LOADED[vocab_path]


@functools.lru_cache(maxsize=2)
def _serializer(vocab_size):
    """One ExampleSerializer (a table of varints) per vocabulary size and process, not one per block."""
    return ExampleSerializer(vocab_size)


def encode_block(job, index, pairs):
    """Encodes the block `index` of a split (a list of stripped (source, target) strings) and writes its block
    file (and, for dev and test, its text); returns its `BlockResult`."""
    paths = (job.source_vocab_path or job.vocab_path, job.vocab_path)
    source_encoder, target_encoder = (_word_cache(path, keep=paths) for path in paths)
    separate = source_encoder is not target_encoder
    serialize = _serializer(max(encoder.vocabulary.vocab_size for encoder in (source_encoder, target_encoder)))
    dropped_empty = 0
    if not job.keep_text:
        kept = [pair for pair in pairs if pair[0] and pair[1]]
        dropped_empty = len(pairs) - len(kept)
    else:
        kept = pairs
    sources = source_encoder.encode_batch([source for source, _ in kept])
    targets = target_encoder.encode_batch([target for _, target in kept])
    groups = [[] for _ in range(job.num_shards)]
    texts = []
    used = set()
    used_source = used if not separate else set()
    shortest = None
    count = dropped_too_long = 0
    for pair, source_ids, target_ids in zip(kept, sources, targets):
        source_ids.append(EOS_ID)
        target_ids.append(EOS_ID)
        longer = max(len(source_ids), len(target_ids))
        if longer > job.max_tokens and not job.keep_text:
            dropped_too_long += 1
            continue
        if job.keep_text:
            texts.append(json.dumps(pair, ensure_ascii=False) + "\n")
        shortest = longer if shortest is None else min(shortest, longer)
        used_source.update(source_ids)
        used.update(target_ids)
        record = serialize(source_ids, target_ids)
        groups[count % job.num_shards].append(_LENGTH.pack(len(record)) + record)
        count += 1
    offsets = [0]
    with open(job.block_path(index), "wb") as out:
        for group in groups:
            data = b"".join(group)
            out.write(data)
            offsets.append(offsets[-1] + len(data))
    if job.keep_text:
        with open(job.block_path(index) + ".jsonl", "w", encoding="utf-8") as out:
            out.writelines(texts)
    return BlockResult(index, len(pairs), count, dropped_empty, dropped_too_long, shortest, tuple(offsets),
                       frozenset(used), frozenset(used_source) if separate else frozenset())


def unused_ids(vocab_path, used_ids):
    """How many ids of the vocabulary `vocab_path`, the reserved ones and the byte-fallback pieces aside (those
    spell characters the vocabulary lacks, which training text seldom has), are not among `used_ids`: pieces
    the data never shows the model (their embeddings only ever learn to be improbable)."""
    return len(_word_cache(vocab_path).vocabulary.ordinary_ids().difference(used_ids))


def read_group(path, start, end):
    """The serialized examples of one group of a block file: bytes [start, end)."""
    with open(path, "rb") as source:
        source.seek(start)
        data = source.read(end - start)
    records = []
    position = 0
    while position < len(data):
        (size,) = _LENGTH.unpack_from(data, position)
        position += _LENGTH.size
        records.append(data[position:position + size])
        position += size
    return records
