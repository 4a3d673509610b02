"""The Transformer of section 3 as Keras 3 layers: attention, embeddings, feed-forward, layers, model."""

from t2t_repro.model.transformer import Transformer, build_transformer, half_precision_weights  # noqa: F401
