"""The position-wise feed-forward network (section 3.3)."""

import keras

from t2t_repro.model.built_by_call import BuiltByCall
from t2t_repro.model.dropout import Dropout


class FeedForward(BuiltByCall, keras.layers.Layer):
    """FFN(x) = max(0, x W1 + b1) W2 + b2, applied to each position separately (section 3.3, equation 2).

    Args:
        d_model: input and output width.
        d_ff: inner width.
        relu_dropout: dropout after the ReLU (0 in the paper's sets).

    Call arguments:
        x: [batch, length, d_model].
        training: enables dropout.
    """

    def __init__(self, d_model, d_ff, relu_dropout=0.0, **kwargs):
        super().__init__(**kwargs)
        self.d_model = d_model
        self.d_ff = d_ff
        self.relu_dropout = relu_dropout
        self.inner = keras.layers.Dense(d_ff, activation="relu", name="inner", dtype=self.dtype_policy)
        self.dropout = Dropout(relu_dropout, dtype=self.dtype_policy)
        self.outer = keras.layers.Dense(d_model, name="outer", dtype=self.dtype_policy)

    def call(self, x, training=None):
        return self.outer(self.dropout(self.inner(x), training=training))

    def get_config(self):
        config = super().get_config()
        config.update(d_model=self.d_model, d_ff=self.d_ff, relu_dropout=self.relu_dropout)
        return config
