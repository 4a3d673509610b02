"""Several Transformers decoded as one model: an ensemble, searched by the same cached beam search.

    ensemble = Ensemble([model_a, model_b])
    ids, scores = beam_decode(ensemble, inputs, settings)      # t2t_repro.decode.transformer_search

At every step each model scores the next token from its own encoding of the sources and its own
self-attention cache, and the ensemble's log-probability of a token is the log of the mean of the models'
probabilities, log((1/K) sum_k p_k(y | prefix, source)): the combination fairseq's EnsembleModel makes. The
hypotheses' scores are these log-probabilities summed over the output, divided by the length penalty (section
6.1), as for one model. The models must share the vocabulary (the ids mean the same pieces); their sizes (layers,
widths, heads) may differ, since each keeps its own cache in the search's state.

The mean is taken as m + log(mean_k exp(log p_k - m)), m the largest log p_k, which is exact where the models
agree: an ensemble of copies of one model ranks with that model's own numbers and decodes exactly as it does.
"""

import tensorflow as tf

from t2t_repro.decode.log_probs import next_token_log_probs


def log_mean_prob(log_probs):
    """log(mean_k exp(log_probs[k])) of a list of equally shaped log-probability tensors (-inf where every
    one is -inf), computed around their maximum: exactly log_probs[0] when all are equal."""
    stacked = tf.stack(log_probs)
    top = tf.reduce_max(stacked, axis=0)
    top = tf.where(tf.math.is_finite(top), top, tf.zeros_like(top))  # keeps -inf - -inf out (no NaN)
    return top + tf.math.log(tf.reduce_mean(tf.exp(stacked - top), axis=0))


class Ensemble:
    """Models of one vocabulary searched together; it offers what the search reads of one model
    (`t2t_repro.decode.transformer_search.search`): vocab_size, max_target_length and scoring_function.

    Args:
        models: `t2t_repro.model.Transformer`s with the same vocab_size (at least one).
    """

    def __init__(self, models):
        self.models = tuple(models)
        if not self.models:
            raise ValueError("an ensemble needs at least one model")
        sizes = sorted({model.vocab_size for model in self.models})
        if len(sizes) > 1:
            raise ValueError(f"the models of an ensemble must share their vocabulary; their sizes are {sizes}")
        self.vocab_size = sizes[0]

    @property
    def max_target_length(self):
        """The most target positions every model can read (None: no model limits them)."""
        limits = [model.max_target_length for model in self.models if model.max_target_length is not None]
        return min(limits) if limits else None

    @property
    def variables(self):
        """Every model's variables."""
        return [variable for model in self.models for variable in model.variables]

    def scoring_function(self, inputs, beam_size, max_length=None, use_cache=True):
        """As `Transformer.scoring_function`, but the function returns the ensemble's log-probabilities
        (normalized, PAD removed: search them with `beam_search(..., normalized=True)`). Its state and sentence
        state are the lists of the models' own, each model's self-attention cache in its own shapes."""
        functions, states, sentence_states = zip(*(model.scoring_function(inputs, beam_size, max_length, use_cache)
                                                   for model in self.models))

        def symbols_to_log_probs(ids, step, states, sentence_states):
            log_probs, new_states = [], []
            for function, state, sentences in zip(functions, states, sentence_states):
                logits, state = function(ids, step, state, sentences)
                log_probs.append(next_token_log_probs(logits, self.vocab_size))
                new_states.append(state)
            return log_mean_prob(log_probs), new_states

        return symbols_to_log_probs, list(states), list(sentence_states)
