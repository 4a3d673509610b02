"""A split's TFRecord shards read back as (inputs, targets) id pairs, fast enough to feed the paper's batches.

tf.data runs a function once for every element of a map or filter, and on a small CPU that call costs about
as much as parsing the record. So records are parsed a block at a time (one `tf.io.parse_example` over
PARSE_BLOCK records), pairs longer than the length limit are dropped from the block, and only then are the
pairs handed out one by one: no per-pair parse or filter. The pairs, and their order, are those of parsing
the records one at a time and filtering them after.
"""

import os

import tensorflow as tf

PARSE_BLOCK = 1024  # records parsed together
_FEATURES = {"inputs": tf.io.RaggedFeature(tf.int64), "targets": tf.io.RaggedFeature(tf.int64)}


def _parse_block(serialized, max_length):
    """{"inputs", "targets"}: int32 ragged [pairs, None] of a block of records, less the pairs with a side
    longer than `max_length` (None: no limit)."""
    block = {key: tf.cast(ids, tf.int32) for key, ids in tf.io.parse_example(serialized, _FEATURES).items()}
    if max_length is None:
        return block
    fits = tf.logical_and(block["inputs"].row_lengths() <= max_length, block["targets"].row_lengths() <= max_length)
    return {key: tf.ragged.boolean_mask(ids, fits) for key, ids in block.items()}


def read_split(directory, names, max_length=None, shard=None):
    """A tf.data.Dataset of {"inputs": int32 [None], "targets": int32 [None]} from the shard files `names`.

    Args:
        directory: the problem's data directory.
        names: the split's shard file names.
        max_length: leave out the pairs with a side longer than this many ids (None: keep every pair).
        shard: (count, index): only every count-th record from the index-th, as `Dataset.shard` (a worker's
            share of the split); taken before the length limit, as that is applied per pair.

    Several shards are read interleaved with a fixed cycle length, so the order (and a checkpointed
    iterator's position) is the same on every machine."""
    paths = [os.path.join(directory, name) for name in names]
    reads = min(8, len(paths)) if len(paths) > 1 else None
    records = tf.data.TFRecordDataset(paths, buffer_size=1 << 22, num_parallel_reads=reads)
    if shard is not None:
        records = records.shard(*shard)
    blocks = records.batch(PARSE_BLOCK).map(lambda serialized: _parse_block(serialized, max_length),
                                            num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    # Unbatching ragged blocks gives pairs typed as 1-D ragged tensors; a map hands them on as plain tensors.
    return blocks.unbatch().map(dict)
