"""Writing a split's TFRecord shards with several worker processes, the same bytes whatever their number.

    with EncodingPool(workers=4) as pool:
        names, counts = write_split(pool, job, out_dir, pairs, block_pairs=8192, total=4_500_000, shuffle=True)

1. Encode (parallel): the pairs are cut into blocks, in order, and each block goes to a worker process
   (`encoding_blocks.encode_block`): encoding, filtering, serialization and writing of a block file. At most
   two blocks per worker are in flight, so memory does not grow with the corpus. A progress bar shows the
   pairs done, the rate and the time left.
2. Assemble: shard s takes, from every block in order, the group of examples whose number in the split is
   s mod num_shards (round-robin, as one process would deal them out), then is shuffled with its own seed
   (`records.shuffled`) and written as a TFRecord file. One shard is in memory at a time. Block files are
   removed at the end. This step runs in the main process (TFRecord framing is TensorFlow's): a sequential
   copy of the records, 8 seconds for WMT14 EN-DE's 4.5M pairs.

The blocks, the groups and the shuffle depend only on the data, so the shards are byte-identical for any
number of workers; `workers=1` runs everything in this process. Workers are started with "spawn" (a fresh
interpreter that imports no TensorFlow), which is safe even after TensorFlow has started its threads.

A file that cannot be written (a full disk) raises OSError, whichever process and whichever step wrote it,
so that the caller can say so in one line; a worker process that dies (killed, out of memory) is a UserError.
"""

import collections
import concurrent.futures
import dataclasses
import errno
import itertools
import multiprocessing
import os

import tensorflow as tf
import tqdm

from t2t_repro import safe_write
from t2t_repro.data import records
from t2t_repro.data.encoding_blocks import encode_block, read_group, start_worker, unused_ids
from t2t_repro.errors import UserError

BLOCKS_IN_FLIGHT_PER_WORKER = 2
_ERRNO_OF_REASON = {os.strerror(code): code for code in errno.errorcode}  # "No space left on device": ENOSPC


def text_file_name(split):
    """The file of a dev or test split's (source, target) texts, one JSON pair a line."""
    return f"{split}.pairs.jsonl"


def default_workers():
    """One worker per CPU core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class _InlineExecutor:
    """Runs each submitted call at once in this process (workers=1)."""

    def submit(self, function, *args):
        future = concurrent.futures.Future()
        future.set_result(function(*args))
        return future

    def shutdown(self, cancel_futures=False):
        pass


class EncodingPool:
    """The worker processes of one datagen run (a context manager); `workers=1`: none, all in this process.

    The processes start when a split first has more than one block: a split of one block is encoded in this
    process, since starting workers (fresh interpreters) takes seconds and one block gives them nothing to share."""

    def __init__(self, workers=None):
        self.workers = default_workers() if workers is None else workers
        if self.workers < 1:
            raise UserError(f"workers={self.workers}: must be at least 1")
        self._processes = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        if self._processes is not None:
            self._processes.shutdown(cancel_futures=True)

    def _executor(self, blocks_ahead):
        """Where the blocks go: the worker processes (started now if need be) when there are several blocks and
        several workers, else this process."""
        if self.workers == 1 or not blocks_ahead:
            return _InlineExecutor()
        if self._processes is None:
            context = multiprocessing.get_context("spawn")
            self._processes = concurrent.futures.ProcessPoolExecutor(self.workers, mp_context=context,
                                                                     initializer=start_worker)
        return self._processes

    def map_blocks(self, job, blocks):
        """`encode_block(job, index, block)` for each block of `blocks`, in order, with a bounded number in flight."""
        blocks = iter(blocks)
        ahead = list(itertools.islice(blocks, 2))
        executor = self._executor(len(ahead) > 1)
        pending = collections.deque()
        limit = BLOCKS_IN_FLIGHT_PER_WORKER * self.workers
        try:
            for index, block in enumerate(itertools.chain(ahead, blocks)):
                pending.append(executor.submit(encode_block, job, index, block))
                if len(pending) >= limit:
                    yield _result(pending.popleft())
            while pending:
                yield _result(pending.popleft())
        finally:
            # After a failure, the blocks still being written finish before the caller removes their directory.
            for future in pending:
                future.cancel()
            concurrent.futures.wait(pending)


def _result(future):
    try:
        return future.result()
    except concurrent.futures.process.BrokenProcessPool:
        raise UserError("a datagen worker process died (killed, or out of memory?); nothing was published; "
                        "rerun, with fewer --workers if memory is short") from None


def _blocks(pairs, block_pairs):
    pairs = iter(pairs)
    while block := list(itertools.islice(pairs, block_pairs)):
        yield block


def write_split(pool, job, out_dir, pairs, block_pairs, total=None, shuffle=False):
    """Writes one split's shards (and, with job.keep_text, its `<split>.pairs.jsonl`) into `out_dir`.

    Args:
        pool: an entered `EncodingPool`.
        job: the split's `encoding_blocks.BlockJob`; its directory (made here, removed at the end) holds the
            block files. With job.keep_text the split's texts go to `text_file_name(split)` too.
        out_dir: where the shards go.
        pairs: iterable of stripped (source, target) strings, in the split's order; read once.
        block_pairs: pairs per block.
        total: the number of pairs, if known (for the time left).
        shuffle: shuffle each shard (seeded).

    Returns:
        (shard file names, counts): counts has examples, dropped_empty, dropped_too_long, shortest_pair and
        unused_ids (the vocabulary's ids, PAD, EOS and UNK aside, that no kept example of the split holds; with
        separate vocabularies the target vocabulary's, and unused_source_ids the source vocabulary's).

    Raises:
        OSError: a file could not be written (the block directory is removed all the same).
    """
    os.makedirs(job.directory)
    results = []
    used = set()
    used_source = set()
    try:
        with tqdm.tqdm(total=total, desc=f"encoding {job.split}", unit=" pairs", mininterval=2.0,
                       unit_scale=True) as bar:
            for result in pool.map_blocks(job, _blocks(pairs, block_pairs)):
                # One set of used ids for the split, not one per block (hundreds of MB for WMT14's 550 blocks).
                used.update(result.used_ids)
                used_source.update(result.used_source_ids)
                results.append(dataclasses.replace(result, used_ids=frozenset(), used_source_ids=frozenset()))
                bar.update(result.pairs)
        names = _assemble(job, out_dir, results, shuffle)
        if job.keep_text:
            _concatenate_texts(job, out_dir, results)
    finally:
        safe_write.remove(job.directory)
    shortest = [result.shortest for result in results if result.shortest is not None]
    counts = {
        "examples": sum(result.examples for result in results),
        "dropped_empty": sum(result.dropped_empty for result in results),
        "dropped_too_long": sum(result.dropped_too_long for result in results),
        "shortest_pair": min(shortest) if shortest else None,
        "unused_ids": unused_ids(job.vocab_path, used),
    }
    if job.source_vocab_path:
        counts["unused_source_ids"] = unused_ids(job.source_vocab_path, used_source)
    return names, counts


def _assemble(job, out_dir, results, shuffle):
    """Writes each shard from its groups of every block (round-robin over the split), shuffled if asked."""
    names = records.shard_names(job.split, job.num_shards)
    starts = list(itertools.accumulate((result.examples for result in results), initial=0))
    for shard, name in enumerate(tqdm.tqdm(names, desc=f"writing {job.split} shards", unit=" shards",
                                            mininterval=2.0, disable=len(names) == 1)):
        shard_records = []
        for result, start in zip(results, starts):
            group = (shard - start) % job.num_shards
            first, end = result.group_offsets[group], result.group_offsets[group + 1]
            if end > first:
                shard_records += read_group(job.block_path(result.index), first, end)
        if shuffle:
            shard_records = records.shuffled(shard_records, shard)
        _write_shard(os.path.join(out_dir, name), shard_records)
    return names


def _write_shard(path, shard_records):
    """`records.write_records`, a failure raised as the OSError that TensorFlow's error reports ("<path>; No
    space left on device" comes as ResourceExhaustedError), as every other failed write of datagen is."""
    try:
        records.write_records(path, shard_records)
    except tf.errors.OpError as error:
        reason = error.message.rpartition("; ")[2]
        raise OSError(_ERRNO_OF_REASON.get(reason, errno.EIO), reason, path) from None


def _concatenate_texts(job, out_dir, results):
    with open(os.path.join(out_dir, text_file_name(job.split)), "wb") as out:
        for result in results:
            with open(job.block_path(result.index) + ".jsonl", "rb") as block_text:
                out.write(block_text.read())
