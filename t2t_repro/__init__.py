"""t2t-repro: the Transformer of "Attention Is All You Need" (Vaswani et al., 2017) in TensorFlow 2 / Keras 3."""

__version__ = "0.1.0"
