"""Beam search with the GNMT length penalty (section 6.1), over any scoring function, as tensor2tensor's.

    ids, scores = beam_search(symbols_to_logits_fn, initial_ids, beam_size=4, max_lengths=max_lengths,
                              vocab_size=vocab_size, alpha=0.6, states=initial_state)
    # ids [batch, beam_size, length] (PAD after a hypothesis ends), scores [batch, beam_size], best first

`symbols_to_logits_fn(ids, step, state)` scores the next token of every hypothesis: ids [batch * beam_size,
max_length + 1] hold the hypotheses so far behind their initial id in their first step + 1 positions, PAD
after (row s * beam_size + b is beam b of sentence s), and it returns logits [batch * beam_size, vocab_size]
(or, with `normalized=True`, the log-probabilities of `next_token_log_probs`, e.g. an ensemble's) and its new
state. The search reorders every tensor of the state along the beams it keeps (one gather a step), so tensors
that are the same for every beam of a sentence belong in the function's closure, not in the state. A model
ties itself to the search in `t2t_repro.decode.transformer_search`.

The search runs inside one `tf.while_loop` (in the caller's `tf.function`, or eagerly, slowly) whose tensors
keep their shapes from step to step: the hypotheses are held in buffers of the longest output, written one
position a step, so that the loop can be compiled by XLA (`jit_compile=True`). Each sentence keeps two pools
of `beam_size` hypotheses apart, as tensor2tensor does:

- alive: hypotheses still growing, ranked by their log-probability;
- finished: hypotheses that ended, ranked by their score, log-probability / length_penalty(length).

A hypothesis ends when it emits EOS or reaches its sentence's maximum output length (cut, without EOS). As in
tensor2tensor, cut hypotheses are used only when no hypothesis of the sentence ended with EOS: every hypothesis
that ended with EOS ranks before every cut one, and cut ones fill only the slots that EOS hypotheses leave
empty (tensor2tensor leaves those slots empty, and scores a cut hypothesis by its log-probability alone).
`unfinished_compete=True` ranks them all by score instead, so a likely cut hypothesis beats a less likely one
that ended with EOS. A sentence stops early when even its best alive hypothesis, given the largest length
penalty it could still reach, cannot beat the worst hypothesis in its finished pool. Every sentence is searched
independently of the others in its batch.

Lengths |Y| count the generated tokens, EOS included. PAD is never generated (it pads the outputs after a
hypothesis' end), so its probability is removed before the softmax (`t2t_repro.decode.log_probs`). Beam size 1
is greedy decoding: the single best token is taken at every step until EOS or the maximum length.
"""

import tensorflow as tf

from t2t_repro.decode.log_probs import next_token_log_probs
from t2t_repro.decode.top_k import top_k
from t2t_repro.special_tokens import EOS_ID, PAD_ID

# Log-probability of an impossible hypothesis (an empty slot in a pool).
_IMPOSSIBLE = float("-inf")


def length_penalty(length, alpha):
    """The GNMT length penalty ((5 + |Y|) / 6) ** alpha (Wu et al. 2016; the paper's section 6.1, alpha 0.6).

    `length` may be a Python number or a tensor; the result is float32 for a tensor."""
    if isinstance(length, (int, float)):
        return ((5.0 + length) / 6.0) ** alpha
    return tf.pow((5.0 + tf.cast(length, tf.float32)) / 6.0, alpha)


def state_invariant(shape):
    """Shape invariant of a state tensor: from rank 3 the features (last axis) are fixed; every other axis may
    change (the batch is unknown when a serving function is traced)."""
    features = [shape[-1]] if shape.rank >= 3 else []
    return tf.TensorShape([None] * (shape.rank - len(features)) + features)


def write_column(sequences, column, tokens):
    """int32 sequences [..., length] with `tokens` [...] written at position `column` (a scalar tensor)."""
    return tf.where(tf.equal(tf.range(tf.shape(sequences)[-1]), column), tokens[..., tf.newaxis], sequences)


def compiled_loop(loop, jit_compile):
    """`loop` itself, or compiled by XLA as one function where `jit_compile` (its tensors keep their shapes)."""
    return tf.function(loop, jit_compile=True) if jit_compile else loop


def _fill_empty_slots(first_scores, first_seq, second_scores, second_seq, beams):
    """Per sentence, the hypotheses of the first pool that are not empty, then the best of the second pool in
    the slots left (each pool sorted best first, [batch, beams] scores and [batch, beams, length] ids)."""
    filled = tf.math.count_nonzero(first_scores > _IMPOSSIBLE, axis=1, dtype=tf.int32)[:, tf.newaxis]
    slots = tf.range(beams)[tf.newaxis]
    picks = tf.where(slots < filled, slots, beams + slots - filled)
    scores = tf.gather(tf.concat([first_scores, second_scores], axis=1), picks, batch_dims=1)
    return scores, tf.gather(tf.concat([first_seq, second_seq], axis=1), picks, batch_dims=1)


def beam_search(symbols_to_logits_fn, initial_ids, beam_size, max_lengths, vocab_size, alpha, states=None,
                eos_id=EOS_ID, unfinished_compete=False, normalized=False, max_length=None, jit_compile=False,
                sentence_states=None, drop_finished=False):
    """Beam search as TensorFlow ops (section 6.1).

    Args:
        symbols_to_logits_fn: (ids [batch * beam_size, max_length + 1], step, state) -> (logits [batch *
            beam_size, vocab_size], new state); see the module docstring.
        initial_ids: int32 [batch], the id every hypothesis starts behind (not part of the output).
        beam_size: hypotheses kept per sentence; 1 is greedy decoding.
        max_lengths: int32 [batch], each sentence's most output tokens (at least 1).
        vocab_size: the number of token ids the function scores.
        alpha: length penalty exponent (0 ranks by log-probability alone).
        states: the function's initial state, a nest of tensors [batch * beam_size, ...] (default: none).
        eos_id: the id that ends a hypothesis. An id outside the vocabulary (e.g. -1) means no hypothesis ends
            before the maximum length, so every search does the same amount of work (benchmarks).
        unfinished_compete: False (tensor2tensor's): hypotheses cut at the maximum length without EOS come
            after every hypothesis that ended with EOS; True: all are ranked by score alone.
        normalized: True when symbols_to_logits_fn returns log-probabilities without PAD already (such as
            `next_token_log_probs` gives, or an average of them): they are ranked as they are, not normalized
            again, so that an ensemble of one model's copies ranks with exactly that model's numbers.
        max_length: int32 scalar at least every max_lengths, the length of the hypotheses' buffers (default the
            largest of max_lengths; XLA needs one known from shapes when the function is traced).
        jit_compile: run the search loop as one XLA-compiled function.
        sentence_states: a nest of tensors [batch, ...], the same for every beam of a sentence (e.g. its
            encoder output), passed to `symbols_to_logits_fn` as a fourth argument and never reordered along
            the beams; None: the function takes three arguments.
        drop_finished: stop computing the sentences that are done: their rows leave the state, the sentence
            state and the alive pool (the batch shrinks as its sentences end), instead of being carried to the
            end of the batch's longest search. The same hypotheses (each sentence is searched on its own), with
            scores that may differ within float rounding (the products then have fewer rows). Not with
            `jit_compile`, whose shapes must stay.

    Returns:
        ids: int32 [batch, beam_size, length], best first (see `unfinished_compete`); positions after a
            hypothesis' end are PAD (0).
        scores: float32 [batch, beam_size], log-probability / length_penalty(|Y|); -inf marks an empty slot
            (only when the vocabulary offers fewer than beam_size distinct hypotheses).
    """
    if drop_finished and jit_compile:
        raise ValueError("drop_finished changes the batch's shape from step to step: not with jit_compile")
    beams = beam_size
    batch = tf.shape(initial_ids)[0]
    # Beam 1 takes only the best token (greedy); wider beams take 2 x beam candidates, so that at least
    # `beam_size` of them continue even when every beam's best token is EOS.
    num_candidates = 1 if beams == 1 else 2 * beams
    max_lengths = tf.convert_to_tensor(max_lengths, tf.int32)
    # The best score a still-alive hypothesis could reach: its log-probability can only fall, and the
    # penalty it is divided by is largest at the maximum length.
    max_penalty = length_penalty(max_lengths, alpha)
    max_length = tf.reduce_max(max_lengths) if max_length is None else max_length

    start = tf.pad(tf.tile(tf.cast(initial_ids, tf.int32)[:, tf.newaxis, tf.newaxis], [1, beams, 1]),
                   [[0, 0], [0, 0], [0, max_length]], constant_values=PAD_ID)
    # Only the first beam is live at the start, so the identical beams do not fill the pool with copies.
    alive_log_probs = tf.tile(
        tf.constant([[0.0] + [_IMPOSSIBLE] * (beams - 1)], tf.float32), tf.stack([batch, 1])
    )
    finished_scores = tf.fill([batch, beams], _IMPOSSIBLE)
    done = tf.zeros([batch], tf.bool)
    states = {} if states is None else states
    scores_of = symbols_to_logits_fn if sentence_states is not None else (
        lambda ids, step, states, sentences: symbols_to_logits_fn(ids, step, states))
    sentence_states = {} if sentence_states is None else sentence_states

    def gather_beams(values, indices):
        return tf.gather(values, indices, batch_dims=1)

    def body(step, alive_seq, alive_log_probs, finished_seq, finished_scores, done, states, sentence_states, active):
        # The alive pool, the state and the sentence state hold the sentences `active` (all of them unless
        # drop_finished); the finished pool and `done` hold every sentence of the batch.
        batch = tf.shape(alive_log_probs)[0]  # from the loop's own tensors: known to XLA when it compiles
        flat_seq = tf.reshape(alive_seq, [batch * beams, -1])
        scores, states = scores_of(flat_seq, step, states, sentence_states)
        log_probs = scores if normalized else next_token_log_probs(scores, vocab_size)
        candidates = alive_log_probs[:, :, tf.newaxis] + tf.reshape(log_probs, [batch, beams, vocab_size])
        top_log_probs, top_indices = top_k(tf.reshape(candidates, [batch, beams * vocab_size]), num_candidates)
        top_beams = top_indices // vocab_size
        top_tokens = top_indices % vocab_size
        new_length = step + 1
        top_seq = write_column(gather_beams(alive_seq, top_beams), new_length, top_tokens)
        if drop_finished:
            active_max_lengths, active_max_penalty = tf.gather(max_lengths, active), tf.gather(max_penalty, active)
            active_done = tf.gather(done, active)
            active_finished_seq, active_finished_scores = (tf.gather(finished_seq, active),
                                                           tf.gather(finished_scores, active))
        else:
            active_max_lengths, active_max_penalty, active_done = max_lengths, max_penalty, done
            active_finished_seq, active_finished_scores = finished_seq, finished_scores

        ends_with_eos = tf.equal(top_tokens, eos_id)
        cut = tf.logical_and(new_length >= active_max_lengths[:, tf.newaxis], tf.logical_not(ends_with_eos))
        ends = tf.logical_or(ends_with_eos, cut)

        # Alive pool: the best candidates that go on; the state follows them.
        new_alive_log_probs, alive_picks = tf.math.top_k(
            tf.where(ends, _IMPOSSIBLE, top_log_probs), k=beams
        )
        new_alive_seq = gather_beams(top_seq, alive_picks)
        source_rows = gather_beams(top_beams, alive_picks) + tf.range(batch)[:, tf.newaxis] * beams

        # Finished pool: the best of the earlier finished hypotheses and the candidates that end now. Cut ones
        # come only at a sentence's last step, so before it the pool holds hypotheses that ended with EOS.
        scores_now = top_log_probs / length_penalty(new_length, alpha)
        ending_scores = tf.where(ends if unfinished_compete else ends_with_eos, scores_now, _IMPOSSIBLE)
        merged_scores, finished_picks = tf.math.top_k(
            tf.concat([active_finished_scores, ending_scores], axis=1), k=beams
        )
        merged_seq = gather_beams(tf.concat([active_finished_seq, top_seq], axis=1), finished_picks)
        if not unfinished_compete:
            cut_scores, cut_picks = tf.math.top_k(tf.where(cut, scores_now, _IMPOSSIBLE), k=beams)
            merged_scores, merged_seq = _fill_empty_slots(
                merged_scores, merged_seq, cut_scores, gather_beams(top_seq, cut_picks), beams
            )
        # A sentence already done keeps its pools as they were.
        new_finished_seq = tf.where(active_done[:, tf.newaxis, tf.newaxis], active_finished_seq, merged_seq)
        new_finished_scores = tf.where(active_done[:, tf.newaxis], active_finished_scores, merged_scores)

        best_alive_bound = new_alive_log_probs[:, 0] / active_max_penalty
        worst_finished = new_finished_scores[:, -1]
        cannot_improve = tf.logical_not(best_alive_bound > worst_finished)
        new_done = active_done | (new_length >= active_max_lengths) | cannot_improve
        if drop_finished:
            at_active = active[:, tf.newaxis]
            new_finished_seq = tf.tensor_scatter_nd_update(finished_seq, at_active, new_finished_seq)
            new_finished_scores = tf.tensor_scatter_nd_update(finished_scores, at_active, new_finished_scores)
            all_done = tf.tensor_scatter_nd_update(done, at_active, new_done)
            # The sentences still searched keep their rows; one gather reorders and drops the state's rows.
            going_on = tf.reshape(tf.where(tf.logical_not(new_done)), [-1])
            new_alive_seq, new_alive_log_probs, source_rows, kept = (
                tf.gather(x, going_on) for x in (new_alive_seq, new_alive_log_probs, source_rows, active))
            sentence_states = tf.cond(
                tf.size(going_on) < batch,
                lambda: tf.nest.map_structure(lambda x: tf.gather(x, going_on), sentence_states),
                lambda: sentence_states,
            )
            new_done, active = all_done, kept
        states = tf.nest.map_structure(lambda x: tf.gather(x, tf.reshape(source_rows, [-1])), states)
        return (step + 1, new_alive_seq, new_alive_log_probs, new_finished_seq, new_finished_scores, new_done, states,
                sentence_states, active)

    def not_all_done(step, alive_seq, alive_log_probs, finished_seq, finished_scores, done, states,
                     sentence_states, active):
        return tf.logical_not(tf.reduce_all(done))

    loop_vars = (tf.constant(0), start, alive_log_probs, start, finished_scores, done, states, sentence_states,
                 tf.range(batch))
    # The batch may be known when the loop starts and unknown after a step (the shapes inside come from tf.shape).
    sequences, pools = tf.TensorShape([None, beams, None]), tf.TensorShape([None, beams])
    invariants = (
        tf.TensorShape([]),
        sequences,
        pools,
        sequences,
        pools,
        tf.TensorShape([None]),
        tf.nest.map_structure(lambda x: state_invariant(x.shape), states),
        tf.nest.map_structure(lambda x: tf.TensorShape([None] + x.shape[1:].as_list()), sentence_states),
        tf.TensorShape([None]),
    )
    loop = compiled_loop(lambda *loop_vars: tf.while_loop(not_all_done, body, loop_vars,
                                                          shape_invariants=invariants), jit_compile)
    steps, _, _, finished_seq, finished_scores = loop(*loop_vars)[:5]
    return finished_seq[:, :, 1 : steps + 1], finished_scores
