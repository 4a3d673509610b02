"""The paper's optimizer: Adam(beta1=0.9, beta2=0.98, epsilon=1e-9) on the schedule of section 5.3."""

import keras

from t2t_repro.train.schedule import NoamSchedule


def make_optimizer(hparams, gradient_accumulation_steps=None):
    """Adam on the paper's schedule. With k accumulation steps, every k-th call applies the summed-up gradient
    and advances the schedule by one step (the schedule counts optimizer updates)."""
    schedule = NoamSchedule(hparams.d_model, hparams.warmup_steps, hparams.learning_rate_scale)
    return keras.optimizers.Adam(
        learning_rate=schedule,
        beta_1=hparams.adam_beta1,
        beta_2=hparams.adam_beta2,
        epsilon=hparams.adam_epsilon,
        gradient_accumulation_steps=gradient_accumulation_steps if gradient_accumulation_steps != 1 else None,
    )
