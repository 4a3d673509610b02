"""Decoding that yields well-formed trees by construction: a hypothesis is extended only by the tokens after
which it can still become a linearised tree with exactly one word slot per source word and balanced, matching
brackets, and it may end (EOS) only as such a tree. Constrained decoders for sequence-to-sequence parsing do the
same; section 6.3 does not say how its outputs were made well formed.

    scoring_fn, sentence_state = constrain(scoring_fn, sentence_state, tokens, inputs, max_lengths, beam_size,
                                           normalized)
    # then beam_search(scoring_fn, ..., sentence_states=sentence_state, normalized=True)

The allowed tokens are computed at every step from the hypothesis itself (the ids so far, which the search
passes to the scoring function), so nothing is added to the search's state and a cached and an uncached decoder
are constrained alike. The model's log-probabilities of the allowed tokens are kept as they are (not
renormalised over them): a hypothesis has the same score constrained or not, and where the unconstrained search
already finds a well-formed tree it is still a candidate.

With `n` the source's words (its pieces that start a word, `TreeTokens.word_starts`), `placed` the slots so
far, `depth` the open brackets and `t` the tokens so far (M the sentence's most output tokens, EOS included):

- "(X" while placed < n, either first (t = 0) or inside the root (depth > 0), and fewer than
  `TreeTokens.max_openers_in_a_row` brackets were opened since the last word (a bound on unary chains);
- a slot (a tag) while placed < n, inside the root;
- ")X" closing the innermost open "(X", never right after it (no empty constituent), and the root only when
  placed = n;
- EOS once the root is closed (depth 0, placed = n);

A slot is a tag EVALB keeps for an ordinary word, and for a one-piece punctuation word its own tag: `TreeTokens`
says which (the tag of "'", and of a word of several pieces without a letter or digit, is the model's choice).
So EVALB deletes the same words from the decoded tree as from the gold one, and scores the sentence.

Where the words themselves stand in the tree (`TreeTokens.words_in_target`, one vocabulary for both sides,
`allowed_tokens_with_words`), there are no slots: the next word is the source's next piece, allowed where a slot
would be; a word once begun is written to its end (its pieces that do not start a word) before anything else; and
the pieces still to write take the place of the slots still to place in what follows.

Each token is allowed only when the shortest completion after it, (n - placed) slots, the closers of the open
brackets and EOS, still fits in M. Should M leave no room for any tree (fewer than n + 3 tokens), the hypothesis
is left unconstrained rather than given no token at all; the parsing problems' limit is the input length + 300.
"""

import tensorflow as tf

from t2t_repro.decode.log_probs import next_token_log_probs
from t2t_repro.special_tokens import EOS_ID

_OTHER, _OPENER, _CLOSER, _SLOT = 0, 1, 2, 3
_ORDINARY, _FREE = -1, -2  # a word's tag: one EVALB keeps, or any (else the id of its one tag)
_IMPOSSIBLE = float("-inf")


def _table(size, ids, values, default=0):
    """int32 [size]: values[i] at ids[i], `default` elsewhere."""
    table = [default] * size
    for token, value in zip(ids, values):
        table[token] = value
    return tf.constant(table, tf.int32)


def source_word_counts(tokens, inputs):
    """int32 [batch]: the words of each source (its pieces that start a word)."""
    starts = _table(tokens.source_vocab_size, tokens.word_starts, [1] * len(tokens.word_starts))
    return tf.reduce_sum(tf.gather(starts, inputs), axis=1)


def source_word_tags(tokens, inputs):
    """int32 [batch, source length]: what each source word's slot may be (word w of a sentence at w): _ORDINARY (a
    tag EVALB keeps), _FREE (any) or the id of its one tag (a one-piece punctuation word); _ORDINARY past a
    sentence's words."""
    size = tokens.source_vocab_size
    batch, length = tf.shape(inputs)[0], tf.shape(inputs)[1]
    is_start = tf.gather(_table(size, tokens.word_starts, [1] * len(tokens.word_starts)), inputs) > 0
    # Each piece of a word (not EOS or PAD) goes to the segment of its word; the rest to one more segment.
    index = tf.cumsum(tf.cast(is_start, tf.int32), axis=1) - 1
    others = batch * length
    segments = tf.where((inputs > EOS_ID) & (index >= 0), index + tf.range(batch)[:, tf.newaxis] * length, others)

    def per_word(values, reduce):
        return tf.reshape(reduce(values, segments, others + 1)[:others], [batch, length])

    pieces = per_word(tf.ones_like(inputs), tf.math.unsorted_segment_sum)
    first = tf.maximum(per_word(tf.where(is_start, inputs, -1), tf.math.unsorted_segment_max), 0)
    wordlike = per_word(tf.gather(_table(size, tokens.wordlike_pieces, [1] * len(tokens.wordlike_pieces)), inputs),
                        tf.math.unsorted_segment_max) > 0
    fixed = tf.gather(_table(size, [source for source, _ in tokens.fixed_tags],
                             [slot for _, slot in tokens.fixed_tags], default=_ORDINARY), first)
    free = tf.gather(_table(size, tokens.free_starts, [1] * len(tokens.free_starts)), first) > 0
    one_piece = tf.equal(pieces, 1)
    return tf.where(one_piece & (fixed >= 0), fixed,
                    tf.where((one_piece & free) | ((pieces > 1) & ~wordlike), _FREE, _ORDINARY))


def _slot_tags(tokens, size, word_tags, placed):
    """bool [rows, size]: the slots the next word (`placed`, per row) may take given its `word_tags` row."""
    slot_ids = tf.constant(tokens.slots or [-1], tf.int32)
    kept = tf.constant([slot for slot in tokens.slots if slot not in tokens.punctuation_slots] or [-1], tf.int32)
    vocabulary = tf.range(size)[tf.newaxis]
    member = lambda ids: tf.reduce_any(tf.equal(vocabulary[..., tf.newaxis], ids), axis=-1)  # noqa: E731
    tag = tf.gather(tf.pad(word_tags, [[0, 0], [0, 1]], constant_values=_ORDINARY),
                    tf.minimum(placed, tf.shape(word_tags)[1]), batch_dims=1)[:, tf.newaxis]
    return tf.where(tf.equal(tag, _FREE), member(slot_ids),
                    tf.where(tf.equal(tag, _ORDINARY), member(kept), tf.equal(vocabulary, tag)))


def _bracket_state(tokens, ids, step):
    """Per hypothesis: the role of each token so far, its open brackets, the closer of the innermost one (-1: none),
    the role of its last token and whether it may open one more bracket (`max_openers_in_a_row`)."""
    size = tokens.target_vocab_size
    roles = _table(size, tokens.openers + tokens.closers + tokens.slots,
                   [_OPENER] * len(tokens.openers) + [_CLOSER] * len(tokens.closers) + [_SLOT] * len(tokens.slots))
    closer_of = _table(size, tokens.openers, tokens.closers, default=-1)
    so_far = ids[:, 1:]
    role = tf.gather(roles, so_far)
    depth_after = tf.cumsum(tf.cast(tf.equal(role, _OPENER), tf.int32) - tf.cast(tf.equal(role, _CLOSER), tf.int32),
                            axis=1)
    depth = depth_after[:, -1]
    # The innermost open bracket is the last opener after which the depth was the depth now.
    positions = tf.range(tf.shape(so_far)[1])[tf.newaxis]
    innermost = tf.reduce_max(tf.where(tf.equal(role, _OPENER) & tf.equal(depth_after, depth[:, tf.newaxis]),
                                       positions, -1), axis=1)
    innermost_closer = tf.where(innermost >= 0, tf.gather(closer_of, tf.gather(so_far, tf.maximum(innermost, 0),
                                                                                batch_dims=1)), -1)
    last_role = tf.gather(roles, tf.gather(ids, tf.fill(tf.shape(depth), step), batch_dims=1))
    # Brackets opened since the last other token (the buffer's PAD after the prefix is not an opener).
    last_other = tf.reduce_max(tf.where(tf.equal(role, _OPENER) | (positions >= step), -1, positions), axis=1)
    may_open = step - 1 - last_other < tokens.max_openers_in_a_row if tokens.max_openers_in_a_row else True
    return {"roles": roles, "role": role, "depth": depth, "innermost_closer": innermost_closer,
            "last_role": last_role, "may_open": may_open, "positions": positions}


def _brackets_allowed(tokens, state, step, left, room):
    """bool [rows, vocab]: the openers and the closer a hypothesis may take next, with `left` word slots (or
    pieces) still to place and `room` tokens after the next one (EOS included)."""
    depth, roles = state["depth"], state["roles"]
    vocabulary = tf.range(tokens.target_vocab_size)[tf.newaxis]
    column = lambda condition: condition[:, tf.newaxis]  # noqa: E731 - per hypothesis, broadcast over tokens
    opener = (column((left > 0) & ((depth > 0) | tf.equal(step, 0)) & (left + depth + 2 <= room) & state["may_open"])
              & tf.equal(roles[tf.newaxis], _OPENER))
    closer = (column((depth > 0) & tf.not_equal(state["last_role"], _OPENER) & ((depth > 1) | tf.equal(left, 0))
                     & (left + depth <= room))
              & tf.equal(vocabulary, state["innermost_closer"][:, tf.newaxis]))
    return opener | closer


def _eos_allowed(tokens, state, step, left, source_empty):
    vocabulary = tf.range(tokens.target_vocab_size)[tf.newaxis]
    ends = tf.equal(state["depth"], 0) & tf.equal(left, 0) & ((step > 0) | source_empty)
    return ends[:, tf.newaxis] & tf.equal(vocabulary, EOS_ID)


def _or_unconstrained(allowed):
    """No room for a tree (no token allowed): the hypothesis is left unconstrained."""
    return allowed | tf.logical_not(tf.reduce_any(allowed, axis=1))[:, tf.newaxis]


def allowed_tokens(tokens, ids, step, words, max_lengths, word_tags=None):
    """bool [rows, target vocab]: the tokens that may follow each hypothesis (see the module docstring).

    Args:
        tokens: the problem's `TreeTokens`.
        ids: int32 [rows, buffer] hypotheses behind their initial id, the `step` tokens so far in columns 1 ...
            step, PAD after.
        step: int32 scalar, the tokens so far.
        words, max_lengths: int32 [rows], each hypothesis' source words and most output tokens.
        word_tags: int32 [rows, most words], `source_word_tags` of each hypothesis' source; None: any slot for
            any word.
    """
    state = _bracket_state(tokens, ids, step)
    placed = tf.reduce_sum(tf.cast(tf.equal(state["role"], _SLOT), tf.int32), axis=1)
    left = words - placed
    room = max_lengths - (step + 1)  # tokens after the next one in the shortest completion, EOS included
    slot = ((left > 0) & (state["depth"] > 0) & (left + state["depth"] <= room))[:, tf.newaxis] & tf.equal(
        state["roles"][tf.newaxis], _SLOT)
    if word_tags is not None:
        slot &= _slot_tags(tokens, tokens.target_vocab_size, word_tags, placed)
    allowed = _brackets_allowed(tokens, state, step, left, room) | slot | _eos_allowed(
        tokens, state, step, left, tf.equal(words, 0))
    return _or_unconstrained(allowed)


def allowed_tokens_with_words(tokens, ids, step, sources, max_lengths):
    """bool [rows, vocab]: the tokens that may follow each hypothesis when the words themselves stand in the tree
    (`TreeTokens.words_in_target`, one vocabulary for both sides): a word's pieces are the source's, in order,
    and a word once begun is written to its end before any bracket; otherwise as `allowed_tokens`, with the
    source's pieces left to place in place of its word slots.

    Args:
        sources: int32 [rows, source length], each hypothesis' source ids (EOS and PAD at the end).
    """
    state = _bracket_state(tokens, ids, step)
    pieces = (state["role"] == _OTHER) & (ids[:, 1:] > EOS_ID) & (state["positions"] < step)
    written = tf.reduce_sum(tf.cast(pieces, tf.int32), axis=1)
    total = tf.reduce_sum(tf.cast(sources > EOS_ID, tf.int32), axis=1)
    next_piece = tf.gather(tf.pad(sources, [[0, 0], [0, 1]]), tf.minimum(written, tf.shape(sources)[1]), batch_dims=1)
    starts = _table(tokens.target_vocab_size, tokens.word_starts, [1] * len(tokens.word_starts))
    last = tf.gather(ids, tf.fill(tf.shape(written), step), batch_dims=1)
    mid_word = ((step > 0) & tf.equal(state["last_role"], _OTHER) & (last > EOS_ID) & (written < total)
                & tf.equal(tf.gather(starts, next_piece), 0))
    left = total - written
    room = max_lengths - (step + 1)
    vocabulary = tf.range(tokens.target_vocab_size)[tf.newaxis]
    piece = (mid_word | ((left > 0) & (state["depth"] > 0) & (left + state["depth"] <= room)))[:, tf.newaxis] & (
        tf.equal(vocabulary, next_piece[:, tf.newaxis]))
    structure = _brackets_allowed(tokens, state, step, left, room) | _eos_allowed(tokens, state, step, left,
                                                                                   tf.equal(total, 0))
    return _or_unconstrained(piece | (structure & ~mid_word[:, tf.newaxis]))


def constrain(symbols_to_logits_fn, sentence_state, tokens, inputs, max_lengths, beam_size, normalized):
    """A scoring function for `beam_search(..., normalized=True)` that gives the log-probabilities of
    `symbols_to_logits_fn` (a model's, with sentence states; log-probabilities already when `normalized`) to the
    allowed tokens only, -inf to the others; and the sentence state it reads (the model's, the sources' word
    counts and their most output tokens), so that the search drops a finished sentence's rows from all of them.
    """
    vocab_size = tokens.target_vocab_size
    state = {"model": sentence_state, "max_lengths": tf.convert_to_tensor(max_lengths, tf.int32)}
    if tokens.words_in_target:
        state["sources"] = tf.convert_to_tensor(inputs, tf.int32)
    else:
        state.update(words=source_word_counts(tokens, inputs), word_tags=source_word_tags(tokens, inputs))

    def scoring_fn(ids, step, states, sentences):
        scores, states = symbols_to_logits_fn(ids, step, states, sentences["model"])
        log_probs = scores if normalized else next_token_log_probs(scores, vocab_size)
        per_row = lambda values: tf.repeat(values, beam_size, axis=0)  # noqa: E731 - row s * beam + b: sentence s
        if tokens.words_in_target:
            allowed = allowed_tokens_with_words(tokens, ids, step, per_row(sentences["sources"]),
                                                per_row(sentences["max_lengths"]))
        else:
            allowed = allowed_tokens(tokens, ids, step, per_row(sentences["words"]),
                                     per_row(sentences["max_lengths"]), per_row(sentences["word_tags"]))
        return tf.where(allowed, log_probs, _IMPOSSIBLE), states

    return scoring_fn, state
