"""TFRecord shards of (input ids, target ids) examples, their metadata JSON, and completion detection.

A problem's data directory is built in a work directory beside it and renamed into place at the end, with
`metadata.json` written last, so a directory either is complete or is detected as incomplete and redone:

    data_dir/wmt_ende/
        vocab.model, vocab.vocab
        train-00000-of-00032.tfrecord ...    tf.train.Example {"inputs": int64 list, "targets": int64 list}
        dev-00000-of-00001.tfrecord, test-00000-of-00001.tfrecord
        metadata.json                        counts, vocabulary size, sha256 and size of every file, and the
                                             data_version of the code that made them

Examples are serialized deterministically, so the same data gives the same bytes (and sha256) in every run.
Train examples are dealt round-robin over the shards, so each shard is an even sample of the whole corpus,
and each shard is shuffled (seeded), so reading even one shard gives a well-mixed order.
"""

import hashlib
import json
import os
import random

import tensorflow as tf
import tqdm

from t2t_repro import safe_write
from t2t_repro.data.example_proto import ExampleSerializer

METADATA_FILE = "metadata.json"
FORMAT_VERSION = 1
_SHUFFLE_SEED = 1234


def shard_names(split, num_shards):
    """File names of a split's shards: `train-00000-of-00032.tfrecord`, ..."""
    return [f"{split}-{index:05d}-of-{num_shards:05d}.tfrecord" for index in range(num_shards)]


def shuffled(shard_records, shard_index):
    """The records of shard `shard_index` in the order it is written: shuffled with that shard's own seed."""
    shard_records = list(shard_records)
    random.Random(_SHUFFLE_SEED + shard_index).shuffle(shard_records)
    return shard_records


def write_records(path, serialized):
    """Writes the serialized examples `serialized`, in order, as the TFRecord file `path`."""
    with tf.io.TFRecordWriter(path) as writer:
        for record in serialized:
            writer.write(record)


def write_split(directory, split, examples, num_shards, total=None, shuffle=False):
    """Writes `examples` ((input ids, target ids) pairs) round-robin into `num_shards` shards, in this process.
    (Datagen writes its splits with worker processes, the same bytes: `t2t_repro.data.split_writer`.)

    Args:
        directory: output directory (exists).
        split: split name, the shard file prefix.
        examples: iterable of (input_ids, target_ids) int sequences.
        num_shards: number of shard files.
        total: expected number of examples for the progress bar, if known.
        shuffle: shuffle each shard (seeded, `shuffled`).

    Returns:
        (shard file names, number of examples written).
    """
    names = shard_names(split, num_shards)
    shards = [[] for _ in names]
    serialize = ExampleSerializer(0)
    count = 0
    for input_ids, target_ids in tqdm.tqdm(examples, total=total, desc=f"writing {split}", unit=" pairs",
                                           mininterval=2.0):
        shards[count % num_shards].append(serialize(input_ids, target_ids))
        count += 1
    for index, name in enumerate(names):
        write_records(os.path.join(directory, name), shuffled(shards[index], index) if shuffle else shards[index])
    return names, count


def file_sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as data:
        for block in iter(lambda: data.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_metadata(directory, metadata):
    """Adds the sha256 and size of every file in `directory` to `metadata` and writes it, atomically, last."""
    files = {}
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if name != METADATA_FILE and os.path.isfile(path):
            files[name] = {"sha256": file_sha256(path), "bytes": os.path.getsize(path)}
    metadata = dict(metadata, format_version=FORMAT_VERSION, files=files)
    safe_write.write_json(os.path.join(directory, METADATA_FILE), metadata)
    return metadata


def read_metadata(directory):
    """The metadata dict of `directory`, or None when it is missing, unreadable or of another format."""
    try:
        with open(os.path.join(directory, METADATA_FILE), encoding="utf-8") as source:
            metadata = json.load(source)
    except (OSError, ValueError):
        return None
    if not isinstance(metadata, dict) or metadata.get("format_version") != FORMAT_VERSION:
        return None
    if not isinstance(metadata.get("files"), dict):
        return None
    return metadata


def made_by_datagen(directory):
    """True when `directory` holds data this project's datagen made, recognised by its metadata (`safe_write`'s
    rule, for data published before its marker file existed)."""
    return read_metadata(directory) is not None


def check_replaceable(final_directory, reading=None):
    """UserError, before anything is written, when datagen may not publish at `final_directory`: something
    there that it did not make, or a directory it is reading (`reading`: {flag: path})."""
    safe_write.check_replaceable(final_directory, made_by_datagen, reading,
                                 remedy="name another --data_dir (the problem's data goes to DATA_DIR/<problem>)")


def is_complete(directory, verify_checksums=False, data_version=None):
    """True when `directory` has valid metadata and every file it lists, of the recorded size
    (and, with `verify_checksums`, the recorded sha256; with `data_version`, made by that version of the code)."""
    metadata = read_metadata(directory)
    if metadata is None:
        return False
    if data_version is not None and metadata.get("data_version") != data_version:
        return False
    for name, recorded in metadata["files"].items():
        path = os.path.join(directory, name)
        try:
            if os.path.getsize(path) != recorded["bytes"]:
                return False
            if verify_checksums and file_sha256(path) != recorded["sha256"]:
                return False
        except (OSError, KeyError, TypeError):
            return False
    return True


def work_directory(final_directory):
    """A fresh, empty directory beside `final_directory` to build it in, private to this process.

    Work directories that crashed runs of this host left behind are removed; those of live processes (another
    datagen of the same problem, e.g. a second worker of a distributed run) are left alone."""
    return safe_write.temporary_directory_beside(final_directory)


def publish(work_directory_path, final_directory, data_version=None):
    """Renames the finished work directory to `final_directory`, replacing an incomplete one there (or one
    made by another `data_version` of the code).

    If another process published complete data of the same version there meanwhile, that data is kept and
    this copy discarded (datagen is deterministic, so both are the same). Returns True when this copy was
    published."""
    if is_complete(final_directory, verify_checksums=True, data_version=data_version):
        safe_write.remove(work_directory_path)
        return False
    try:
        safe_write.publish_directory(work_directory_path, final_directory, legacy=made_by_datagen)
    except OSError:
        if not is_complete(final_directory, verify_checksums=True, data_version=data_version):
            raise
        safe_write.remove(work_directory_path)
        return False
    return True
