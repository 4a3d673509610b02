"""Token-budget batching: pairs of similar length batched together so that padding stays small.

Section 5.1: "Sentence pairs were batched together by approximate sequence length. Each training batch
contained a set of sentence pairs containing approximately 25000 source tokens and 25000 target tokens."

    batches = token_batches(problem.dataset("train", data_dir, max_length=256), batch_tokens=25000,
                            max_length=256, shuffle=True, seed=1, repeat=True)

Each pair goes to the bucket of its longer side; a bucket pads both sides to its own fixed length L, and
holds batch_tokens // L pairs, so every batch has at most batch_tokens source and at most batch_tokens target
positions, padding included. Bucket lengths grow by about 5% (hparams bucket_growth; tensor2tensor's 10%
pads more), so the longer side of a pair pads about 2%, and a compiled step sees one shape per bucket (plus
the short last batch of each bucket when the data is not repeated).

The bucketing is tf.data's own `bucket_by_sequence_length` (a `group_by_window`), and every stage is a
tf.data transformation whose state tf.train.Checkpoint saves, so a training run that saves the iterator
resumes on exactly the batch it would have read next.
"""

import numpy as np
import tensorflow as tf

from t2t_repro.errors import UserError
from t2t_repro.hparams_type import DEFAULT_BUCKET_GROWTH
from t2t_repro.special_tokens import PAD_ID

DEFAULT_SHUFFLE_BUFFER = 20_000  # pairs; about one hundred 2048-token batches of mixed lengths
MIN_BUCKET_LENGTH = 8


def bucket_lengths(max_length, min_length=MIN_BUCKET_LENGTH, growth=DEFAULT_BUCKET_GROWTH):
    """Padded lengths of the buckets: min_length, then about `growth` times larger each, ending at max_length."""
    lengths = []
    length = min_length
    while length < max_length:
        lengths.append(length)
        length = max(length + 1, int(length * growth))
    lengths.append(max_length)
    return lengths


def _pair_length(example):
    return tf.maximum(tf.size(example["inputs"]), tf.size(example["targets"]))


def token_batches(
    dataset, batch_tokens, max_length, shuffle=False, seed=None, repeat=False, shuffle_buffer=DEFAULT_SHUFFLE_BUFFER,
    bucket_growth=DEFAULT_BUCKET_GROWTH,
):
    """Batches a dataset of {"inputs", "targets"} int32 [length] pairs by a token budget.

    Args:
        dataset: unbatched tf.data.Dataset of {"inputs", "targets"} id sequences (EOS included), none with a
            side longer than `max_length`: `Problem.dataset(..., max_length)` leaves those out, cheaply, while
            parsing (a longer pair stops the iteration with an error).
        batch_tokens: most positions, padding included, of each side of a batch.
        max_length: the longest side of a pair; the last bucket's length.
        shuffle: shuffle pairs (before bucketing) with a buffer of `shuffle_buffer` pairs.
        seed: shuffle seed; with a seed the order is reproducible, and a fresh order is drawn each epoch.
        repeat: repeat forever (each epoch reshuffled).
        shuffle_buffer: pairs held by the shuffle buffer.
        bucket_growth: factor between consecutive bucket lengths (`bucket_lengths`).

    Returns:
        a tf.data.Dataset of {"inputs", "targets"} int32 [batch, length] batches padded with PAD_ID, where length
        is the bucket's fixed length and batch * length <= batch_tokens.
    """
    if max_length > batch_tokens:
        raise UserError(f"max_length={max_length} exceeds batch_tokens={batch_tokens}: one pair would not fit a batch")
    if max_length < 1 or batch_tokens < 1:
        raise UserError("max_length and batch_tokens must be positive")
    lengths = bucket_lengths(max_length, growth=bucket_growth)
    pairs = dataset
    if shuffle:
        pairs = pairs.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    if repeat:
        pairs = pairs.repeat()
    # Bucket i holds the pairs of length L[i-1] < n <= L[i] (boundaries L + 1), padded to L[i] (boundary - 1).
    # The bucket beyond the last boundary stays empty: the dataset holds no pair longer than max_length.
    batches = pairs.bucket_by_sequence_length(
        element_length_func=_pair_length,
        bucket_boundaries=[length + 1 for length in lengths],
        bucket_batch_sizes=[batch_tokens // length for length in lengths] + [1],
        padding_values={"inputs": PAD_ID, "targets": PAD_ID},
        pad_to_bucket_boundary=True,
    )
    return batches.prefetch(tf.data.AUTOTUNE)


def padding_efficiency(batches):
    """Real tokens / padded positions over both sides of an iterable of batches (1.0 means no padding)."""
    real = 0
    total = 0
    for batch in batches:
        for key in ("inputs", "targets"):
            ids = np.asarray(batch[key])
            real += int(np.count_nonzero(ids != PAD_ID))
            total += ids.size
    return real / total if total else 0.0
