"""Layers built from one HParams: their Keras config holds it as a dict."""

from t2t_repro.hparams_type import HParams


class HParamsConfig:
    """Mixin for a Keras layer or model whose constructor takes `hparams` (and stores it as `self.hparams`).

    `get_config()` returns every constructor argument, the HParams as a dict, and `from_config` turns the dict
    back into an HParams, so that `type(layer).from_config(layer.get_config())` rebuilds the layer.
    """

    def get_config(self):
        config = super().get_config()
        config["hparams"] = self.hparams.to_dict()
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**{**config, "hparams": HParams.from_dict(config["hparams"])})
