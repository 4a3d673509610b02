"""`tf.function`s of a model kept per model and configuration, so that eager callers trace each one once.

The beam search, the sampler and the scorer each compile one function per model and settings; a file decoded
in batches of varying shapes reuses it (the input signatures leave batch and length open). The cache holds
the model weakly: a strong reference here would keep every model ever decoded alive.
"""

import weakref

import tensorflow as tf

_COMPILED = weakref.WeakKeyDictionary()


def compiled_for_model(model, key, function, input_signature):
    """`tf.function(lambda *args: function(model, *args), input_signature, autograph=False)`, made once per
    (model, key).

    `key` must identify everything `function` reads besides the model and its arguments (settings, flags)."""
    per_model = _COMPILED.setdefault(model, {})
    if key not in per_model:
        model_ref = weakref.ref(model)
        # No AutoGraph: the functions loop with tf.while_loop and branch with tf.cond themselves, and converting
        # every Python function they call took half of the first batch's tracing.
        per_model[key] = tf.function(lambda *args: function(model_ref(), *args), input_signature=input_signature,
                                     autograph=False)
    return per_model[key]
