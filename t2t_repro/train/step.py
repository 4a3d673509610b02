"""The distributed training step: micro-batches per replica, exact per-token loss, one optimizer update.

Every replica takes `accumulation_steps` micro-batches from the local input iterator; the loss of each is
summed over its real target tokens and divided by the real target tokens of the whole global batch (all
replicas, all micro-batches), so the summed gradient is exactly the gradient of the mean loss per real
target token of the global batch, however the tokens fall across devices and micro-batches. The optimizer
then makes one update, so the learning-rate schedule counts updates (section 5.3).

We accumulate here rather than with Keras' `gradient_accumulation_steps`, which averages the micro-batches'
mean gradients and so weights a short micro-batch as much as a long one.

Under float16 (a LossScaleOptimizer) every micro-batch's loss is scaled, the summed gradients are unscaled
once by the optimizer, and an update whose gradients are not finite on any replica is skipped on all of them.
With `jit_compile`, each micro-batch's forward and backward pass is one XLA computation.
"""

import keras
import tensorflow as tf

from t2t_repro.special_tokens import PAD_ID
from t2t_repro.train.loss import projected_label_smoothed_cross_entropy


def real_tokens(targets):
    return tf.reduce_sum(tf.cast(tf.not_equal(targets, PAD_ID), tf.float32))


def training_loss(model, batch, label_smoothing):
    """(loss_sum, real target tokens) of a Transformer on a batch with dropout on: the label-smoothed cross
    entropy (section 5.4) of its final decoder states through the pre-softmax projection."""
    states = model.final_states(batch, training=True)
    return projected_label_smoothed_cross_entropy(
        batch["targets"], states, model.output_matrix, label_smoothing, model.vocab_size
    )


def _dense(gradient):
    return tf.convert_to_tensor(gradient) if isinstance(gradient, tf.IndexedSlices) else gradient


def _non_finite_everywhere_if_anywhere(gradients, context):
    """The gradients, made NaN on every replica when any replica's are not finite, so that the loss-scale
    optimizer skips the update on all replicas together (it checks the gradients of one)."""
    gradients = [_dense(g) for g in gradients]
    finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in gradients])
    overflows = context.all_reduce(tf.distribute.ReduceOp.SUM, tf.cast(tf.logical_not(finite), tf.float32))
    poison = tf.where(overflows > 0, float("nan"), 0.0)
    return [g + tf.cast(poison, g.dtype) for g in gradients]


class TrainStep:
    """Callable running one optimizer update under `strategy`; returns (loss per real target token, tokens).

    Args:
        model: the Transformer (created under strategy.scope()).
        optimizer: its optimizer (created under strategy.scope()).
        strategy: a tf.distribute.Strategy.
        label_smoothing: epsilon_ls.
        accumulation_steps: micro-batches per replica per update.
        jit_compile: compile each micro-batch's forward and backward pass with XLA.
    Call arguments:
        iterator: a local tf.data iterator of padded {"inputs", "targets"} micro-batches; each call takes
            replicas x accumulation_steps of them.
    """

    def __init__(self, model, optimizer, strategy, label_smoothing, accumulation_steps=1, jit_compile=False):
        self.model = model
        self.optimizer = optimizer
        self.strategy = strategy
        self.label_smoothing = label_smoothing
        self.accumulation_steps = accumulation_steps
        self.loss_scaling = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
        self._gradients = self._micro_batch_gradients
        if jit_compile:
            self._gradients = tf.function(self._micro_batch_gradients, jit_compile=True)
        # No AutoGraph: the step has no Python control flow on tensors to convert (its loops are over Python
        # lists), and converting every function it calls was most of the first step's tracing.
        self._step = tf.function(self._distributed_step, autograph=False)

    def _micro_batch_gradients(self, batch, global_tokens):
        """(gradients of the batch's share of the mean loss, scaled under float16; its loss sum)."""
        variables = self.model.trainable_variables
        with tf.GradientTape() as tape:
            loss_sum, _ = training_loss(self.model, batch, self.label_smoothing)
            scaled = loss_sum / tf.maximum(global_tokens, 1.0)
            if self.loss_scaling:
                scaled = self.optimizer.scale_loss(scaled)
        return tape.gradient(scaled, variables), loss_sum

    def _replica_step(self, micro_batches):
        context = tf.distribute.get_replica_context()
        local_tokens = tf.add_n([real_tokens(batch["targets"]) for batch in micro_batches])
        global_tokens = context.all_reduce(tf.distribute.ReduceOp.SUM, local_tokens)
        gradients, loss_total = None, 0.0
        for batch in micro_batches:
            step_gradients, loss_sum = self._gradients(batch, global_tokens)
            if gradients is None:
                gradients = step_gradients
            else:
                gradients = [_dense(a) + _dense(b) for a, b in zip(gradients, step_gradients)]
            loss_total += loss_sum
        if self.loss_scaling and context.num_replicas_in_sync > 1:
            gradients = _non_finite_everywhere_if_anywhere(gradients, context)
        self.optimizer.apply_gradients(zip(gradients, self.model.trainable_variables))
        return loss_total, local_tokens

    def _distributed_step(self, iterator):
        # This worker's replicas; under multi-worker training each worker feeds its own from its own input.
        local_replicas = len(self.strategy.extended.worker_devices)
        micro_batches = [
            tuple(next(iterator) for _ in range(self.accumulation_steps)) for _ in range(local_replicas)
        ]
        per_replica = self.strategy.experimental_distribute_values_from_function(
            lambda context: micro_batches[context.replica_id_in_sync_group % local_replicas]
        )
        loss_sum, tokens = self.strategy.run(self._replica_step, args=(per_replica,))
        loss_sum = self.strategy.reduce(tf.distribute.ReduceOp.SUM, loss_sum, axis=None)
        tokens = self.strategy.reduce(tf.distribute.ReduceOp.SUM, tokens, axis=None)
        return loss_sum / tf.maximum(tokens, 1.0), tokens

    def __call__(self, iterator):
        return self._step(iterator)
