"""Training: the learning-rate schedule, the loss, the optimizer, and (with the trainer) the training loop."""
