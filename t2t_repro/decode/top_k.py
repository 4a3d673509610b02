"""Exact top-k of long rows from the maxima of their chunks.

Beam search picks 2 x beam_size candidates per sentence among beam_size x vocab_size scores at every step
(section 6.1): 148,000 scores a sentence at beam 4 and a 37K vocabulary. `tf.math.top_k` scans them one by
one on a CPU, about 1 ns a score, which made it the costliest operation of a decoding step after the matrix
multiplies. `top_k` here gives the same values and indices from two small top-k's:

1. split each row into chunks of c scores and take every chunk's maximum (a vectorised reduction);
2. the k chunks with the best maxima hold the row's k best scores; a top-k over their k x c scores finds them.

It is exact, ties included: the chunks are ranked by (maximum, position) as `tf.math.top_k` ranks scores by
(value, index), so if a score of the top k lay in a chunk left out, the k chunks kept would each hold a score
ranked before it. The kept chunks are read in row order, so equal scores still come lower index first.
"""

import math

import tensorflow as tf

# Below this many scores a row, one tf.math.top_k costs about as much (on [16, 2,048] scores, k = 8: 205
# against 175 us on a 2-core CPU; 338 against 185 us at 4,096).
_MIN_ROW_LENGTH = 4096


def chunk_length(row_length, k):
    """The chunk length for rows of `row_length` scores, or None where one `tf.math.top_k` is the better choice
    (or the length is unknown).

    A divisor of the row length (the rows are reshaped, not padded), chosen to minimise the scores the two
    top-k's scan: row_length / c chunk maxima, then k x c scores of the kept chunks (best near sqrt(n / k))."""
    if row_length is None or row_length < _MIN_ROW_LENGTH:
        return None
    divisors = [c for c in range(2, math.isqrt(row_length) * 2 + 1) if row_length % c == 0 and row_length // c >= k]
    if not divisors:
        return None
    best = min(divisors, key=lambda c: row_length // c + k * c)
    # A row length with only tiny or huge divisors (e.g. twice a prime) gains nothing.
    return best if row_length // best + k * best < row_length // 2 else None


def top_k(values, k):
    """`tf.math.top_k(values, k)` of a [batch, n] tensor: the same values and int32 indices (in two stages
    where n is known when tracing and long enough)."""
    row_length = values.shape[-1]
    chunk = chunk_length(row_length, k)
    if chunk is None:
        return tf.math.top_k(values, k=k)
    chunks = tf.reshape(values, [-1, row_length // chunk, chunk])
    _, best_chunks = tf.math.top_k(tf.reduce_max(chunks, axis=2), k=k)
    kept_chunks = tf.sort(best_chunks, axis=1)  # row order, so that ties keep the lower index first
    kept = tf.reshape(tf.gather(chunks, kept_chunks, batch_dims=1), [-1, k * chunk])
    top_values, positions = tf.math.top_k(kept, k=k)
    indices = tf.gather(kept_chunks, positions // chunk, batch_dims=1) * chunk + positions % chunk
    return top_values, indices
