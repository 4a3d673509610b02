"""A run's numerics: TF32 on Ampere and newer GPUs, and dynamic loss scaling for float16 training.

The mixed-precision policy itself is the model's (`Transformer` takes hparams.precision as its Keras dtype
policy). The paper trained in float32 on P100s (section 5.2), which have no TF32 and no bfloat16.
"""

import keras
import tensorflow as tf

# Loss scaling for float16 (Micikevicius et al., 2018): start high, halve on an overflow (the update is
# skipped), double after this many updates without one.
INITIAL_LOSS_SCALE = 2.0**15
LOSS_SCALE_GROWTH_STEPS = 2000


def configure_tf32(enabled):
    """Lets (or forbids) float32 matmuls and convolutions to run in TF32 on GPUs that have it."""
    tf.config.experimental.enable_tensor_float_32_execution(enabled)


def with_loss_scaling(optimizer, precision):
    """The optimizer, wrapped in Keras' dynamic LossScaleOptimizer for precision mixed_float16: the step scales
    its loss (`scale_loss`), and `apply_gradients` unscales once, skips an update whose gradients are not
    finite and lowers the scale."""
    if precision != "mixed_float16":
        return optimizer
    return keras.optimizers.LossScaleOptimizer(
        optimizer, initial_scale=INITIAL_LOSS_SCALE, dynamic_growth_steps=LOSS_SCALE_GROWTH_STEPS
    )


def inner_optimizer(optimizer):
    """The optimizer whose state a checkpoint holds: the same in every precision, so checkpoints interchange."""
    return getattr(optimizer, "inner_optimizer", optimizer)


def loss_scale_state(optimizer):
    """{name: variable} of a LossScaleOptimizer's scale and its count of updates since it last changed;
    {} without loss scaling."""
    if optimizer is inner_optimizer(optimizer):
        return {}
    return {"scale": optimizer.dynamic_scale, "updates_since_change": optimizer.step_counter}


def precision_line(hparams, device):
    """One log line on the run's numerics, naming TF32 where the device would use it for float32."""
    tf32_capable = device.get("type") == "GPU" and (device.get("compute_capability") or (0,))[0] >= 8
    if hparams.precision != "float32":
        return f"precision {hparams.precision}: float32 weights, {hparams.precision[6:]} compute"
    if not tf32_capable:
        return "precision float32"
    if hparams.tf32:
        return (f"precision float32, matmuls in TF32 on {device['name']} (TensorFlow's default on Ampere and "
                "newer); hparams tf32=false for strict float32 as in the paper")
    return f"precision float32, strict: TF32 is off on {device['name']} (tf32=false)"
