"""Beam search over the Transformer's key/value cache, with the GNMT length penalty (section 6.1).

    ids, scores = beam_search(model, inputs, beam_size=4, alpha=0.6, extra_length=50, nbest=2)
    # ids [batch, nbest, length] (PAD after a hypothesis ends), scores [batch, nbest], best first

The search runs inside one `tf.while_loop` (in a `tf.function` for eager callers, or inside the caller's own
graph, e.g. an exported serving function, through `search`). Each sentence keeps two pools of `beam_size`
hypotheses apart, as tensor2tensor does:

- alive: hypotheses still growing, ranked by their log-probability;
- finished: hypotheses that ended, ranked by their score, log-probability / length_penalty(length).

A hypothesis ends when it emits EOS or reaches the sentence's maximum output length, `real input length +
extra_length` (section 6.1: input length + 50), where the real length counts the sentence's non-PAD ids, so
padding added by batching changes nothing. A sentence stops early when even its best alive hypothesis, given
the largest length penalty it could still reach, cannot beat the worst hypothesis in its finished pool. Every
sentence is searched independently of the others in its batch: its results do not depend on the batch.

Lengths |Y| count the generated tokens, EOS included. PAD is never generated (it is the start symbol and the
padding of the outputs), so its probability is removed before the softmax. Beam size 1 is greedy decoding:
the single best token is taken at every step until EOS or the maximum length.

`use_cache=False` recomputes the whole decoder over the prefix at every step instead of reading the
self-attention cache; it gives the same hypotheses and scores and exists to check the cache.
"""

import weakref

import tensorflow as tf

from t2t_repro.special_tokens import EOS_ID, PAD_ID

# Log-probability of an impossible hypothesis (an empty slot in a pool).
_IMPOSSIBLE = float("-inf")


def length_penalty(length, alpha):
    """The GNMT length penalty ((5 + |Y|) / 6) ** alpha (Wu et al. 2016; the paper's section 6.1, alpha 0.6).

    `length` may be a Python number or a tensor; the result is float32 for a tensor."""
    if isinstance(length, (int, float)):
        return ((5.0 + length) / 6.0) ** alpha
    return tf.pow((5.0 + tf.cast(length, tf.float32)) / 6.0, alpha)


def _check_settings(beam_size, alpha, extra_length, nbest):
    if beam_size < 1:
        raise ValueError(f"beam_size={beam_size}: must be at least 1")
    if not 1 <= nbest <= beam_size:
        raise ValueError(f"nbest={nbest}: must be between 1 and beam_size={beam_size}")
    if alpha < 0:
        raise ValueError(f"alpha={alpha}: the length penalty exponent must not be negative")
    if extra_length < 0:
        raise ValueError(f"extra_length={extra_length}: must not be negative")


class _CachedDecoder:
    """One decoder position per step, reading and extending the per-layer self-attention cache."""

    def __init__(self, model):
        self.model = model

    def initial_state(self, memory, memory_bias):
        return self.model.init_cache(memory, memory_bias)

    def next_logits(self, sequences, step, cache):
        return self.model.decode_step(sequences[:, -1], step, cache)

    def reorder(self, cache, flat_beam_indices):
        """Follows the surviving hypotheses: only the self-attention caches differ between beams."""
        layers = [
            {**layer, "self": tf.nest.map_structure(lambda x: tf.gather(x, flat_beam_indices), layer["self"])}
            for layer in cache["layers"]
        ]
        return {**cache, "layers": layers}


class _UncachedDecoder:
    """The whole decoder over the prefix at every step (the reference the cache is checked against)."""

    def __init__(self, model):
        self.model = model

    def initial_state(self, memory, memory_bias):
        return {"memory": memory, "memory_bias": memory_bias}

    def next_logits(self, sequences, step, state):
        logits = self.model.decode(sequences, state["memory"], state["memory_bias"])
        return logits[:, -1], state

    def reorder(self, state, flat_beam_indices):
        return state  # the memory is the same for every beam of a sentence


def _state_invariant(shape):
    """Shape invariant of a decoder-state tensor: batch and feature sizes fixed, the sizes between free (the
    self-attention caches [batch, h, length, d] grow by one position per step)."""
    return tf.TensorShape([shape[0]] + [None] * (shape.rank - 2) + [shape[-1]]) if shape.rank >= 3 else shape


def _sequence_invariant(shape):
    return tf.TensorShape(shape[:2].as_list() + [None])


def search(model, inputs, beam_size, alpha, extra_length, nbest=1, use_cache=True, eos_id=EOS_ID):
    """Beam search as TensorFlow ops, for use inside a `tf.function` (or eagerly, slowly).

    Args:
        model: a `t2t_repro.model.Transformer`.
        inputs: int32 [batch, source_length] source ids, each ending in EOS, 0-padded.
        beam_size: hypotheses kept per sentence; 1 is greedy decoding.
        alpha: length penalty exponent (0 ranks by log-probability alone).
        extra_length: a sentence's outputs have at most (its non-PAD input length + extra_length) tokens.
        nbest: how many finished hypotheses to return per sentence, at most beam_size.
        use_cache: False recomputes the decoder over the whole prefix at every step (slow; for checking).
        eos_id: the id that ends a hypothesis. An id outside the vocabulary (e.g. -1) means no hypothesis
            ends before the maximum length, so every search does the same amount of work (benchmarks).

    Returns:
        ids: int32 [batch, nbest, length], best first; positions after a hypothesis' end are PAD (0).
        scores: float32 [batch, nbest], log-probability / length_penalty(|Y|); -inf marks an empty slot
            (only when the vocabulary offers fewer than nbest distinct hypotheses).
    """
    _check_settings(beam_size, alpha, extra_length, nbest)
    inputs = tf.convert_to_tensor(inputs, tf.int32)
    decoder = _CachedDecoder(model) if use_cache else _UncachedDecoder(model)
    batch = tf.shape(inputs)[0]
    beams = beam_size
    # Beam 1 takes only the best token (greedy); wider beams take 2 x beam candidates, so that at least
    # `beam_size` of them continue even when every beam's best token is EOS.
    num_candidates = 1 if beams == 1 else 2 * beams

    real_length = tf.reduce_sum(tf.cast(tf.not_equal(inputs, PAD_ID), tf.int32), axis=1)
    max_length = tf.maximum(real_length + extra_length, 1)
    if getattr(model, "position_encoding", "sinusoid") == "learned":
        max_length = tf.minimum(max_length, model.max_position)
    # The best score a still-alive hypothesis could reach: its log-probability can only fall, and the
    # penalty it is divided by is largest at the maximum length.
    max_penalty = length_penalty(max_length, alpha)

    memory, memory_bias = model.encode(inputs)
    # Beam b of sentence s is row s * beam_size + b of every flattened tensor.
    state = decoder.initial_state(tf.repeat(memory, beams, axis=0), tf.repeat(memory_bias, beams, axis=0))

    start = tf.fill([batch, beams, 1], tf.constant(PAD_ID, tf.int32))
    # Only the first beam is live at the start, so the identical beams do not fill the pool with copies.
    alive_log_probs = tf.tile(
        tf.constant([[0.0] + [_IMPOSSIBLE] * (beams - 1)], tf.float32), tf.stack([batch, 1])
    )
    finished_scores = tf.fill([batch, beams], _IMPOSSIBLE)
    done = tf.zeros([batch], tf.bool)
    vocab_size = model.vocab_size
    not_pad = tf.one_hot(PAD_ID, vocab_size, on_value=_IMPOSSIBLE, off_value=0.0)

    def gather_beams(values, indices):
        return tf.gather(values, indices, batch_dims=1)

    def body(step, alive_seq, alive_log_probs, finished_seq, finished_scores, done, state):
        flat_seq = tf.reshape(alive_seq, [batch * beams, -1])
        logits, state = decoder.next_logits(flat_seq, step, state)
        log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32) + not_pad)
        candidates = alive_log_probs[:, :, tf.newaxis] + tf.reshape(log_probs, [batch, beams, vocab_size])
        top_log_probs, top_indices = tf.math.top_k(tf.reshape(candidates, [batch, -1]), k=num_candidates)
        top_beams = top_indices // vocab_size
        top_tokens = top_indices % vocab_size
        top_seq = tf.concat([gather_beams(alive_seq, top_beams), top_tokens[:, :, tf.newaxis]], axis=2)

        new_length = step + 1
        ends = tf.logical_or(tf.equal(top_tokens, eos_id), new_length >= max_length[:, tf.newaxis])

        # Alive pool: the best candidates that go on.
        new_alive_log_probs, alive_picks = tf.math.top_k(
            tf.where(ends, _IMPOSSIBLE, top_log_probs), k=beams
        )
        new_alive_seq = gather_beams(top_seq, alive_picks)
        source_beams = gather_beams(top_beams, alive_picks)
        flat_sources = tf.reshape(source_beams + tf.range(batch)[:, tf.newaxis] * beams, [-1])
        state = decoder.reorder(state, flat_sources)

        # Finished pool: the best of the earlier finished hypotheses and the candidates that end now.
        ending_scores = tf.where(ends, top_log_probs / length_penalty(new_length, alpha), _IMPOSSIBLE)
        padded_finished = tf.pad(finished_seq, [[0, 0], [0, 0], [0, 1]], constant_values=PAD_ID)
        merged_scores, finished_picks = tf.math.top_k(
            tf.concat([finished_scores, ending_scores], axis=1), k=beams
        )
        merged_seq = gather_beams(tf.concat([padded_finished, top_seq], axis=1), finished_picks)
        # A sentence already done keeps its pools as they were.
        new_finished_seq = tf.where(done[:, tf.newaxis, tf.newaxis], padded_finished, merged_seq)
        new_finished_scores = tf.where(done[:, tf.newaxis], finished_scores, merged_scores)

        best_alive_bound = new_alive_log_probs[:, 0] / max_penalty
        worst_finished = new_finished_scores[:, -1]
        cannot_improve = tf.logical_not(best_alive_bound > worst_finished)
        new_done = done | (new_length >= max_length) | cannot_improve
        return step + 1, new_alive_seq, new_alive_log_probs, new_finished_seq, new_finished_scores, new_done, state

    def not_all_done(step, alive_seq, alive_log_probs, finished_seq, finished_scores, done, state):
        return tf.logical_not(tf.reduce_all(done))

    loop_vars = (tf.constant(0), start, alive_log_probs, start, finished_scores, done, state)
    invariants = (
        tf.TensorShape([]),
        _sequence_invariant(start.shape),
        alive_log_probs.shape,
        _sequence_invariant(start.shape),
        finished_scores.shape,
        done.shape,
        tf.nest.map_structure(lambda x: _state_invariant(x.shape), state),
    )
    _, _, _, finished_seq, finished_scores, _, _ = tf.while_loop(
        not_all_done, body, loop_vars, shape_invariants=invariants
    )
    return finished_seq[:, :nbest, 1:], finished_scores[:, :nbest]


# Compiled searches per model and settings, so eager callers trace each configuration once.
_COMPILED = weakref.WeakKeyDictionary()


def compiled_search(model, beam_size, alpha, extra_length, nbest=1, use_cache=True, eos_id=EOS_ID):
    """A `tf.function` inputs [batch, length] -> (ids, scores) of `search` with these settings (cached)."""
    _check_settings(beam_size, alpha, extra_length, nbest)
    settings = (beam_size, float(alpha), extra_length, nbest, use_cache, eos_id)
    per_model = _COMPILED.setdefault(model, {})
    if settings not in per_model:
        model_ref = weakref.ref(model)  # a strong reference here would keep the model alive forever
        per_model[settings] = tf.function(
            lambda inputs: search(model_ref(), inputs, beam_size, alpha, extra_length, nbest, use_cache, eos_id),
            input_signature=[tf.TensorSpec([None, None], tf.int32)],
        )
    return per_model[settings]


def beam_search(model, inputs, beam_size, alpha, extra_length, nbest=1, use_cache=True, eos_id=EOS_ID):
    """Runs `search` compiled (see `search` for the arguments); returns (ids, scores) tensors."""
    function = compiled_search(model, beam_size, alpha, extra_length, nbest, use_cache, eos_id)
    return function(tf.convert_to_tensor(inputs, tf.int32))
