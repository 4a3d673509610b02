"""The run directory's records: runs recorded before a setting existed keep the behaviour they were trained with."""

import json

from t2t_repro.hparams_type import HParams
from t2t_repro.run.layout import RunLayout


def test_a_run_recorded_before_attention_bias_existed_keeps_its_biases(tmp_path):
    values = HParams().to_dict()
    del values["attention_bias"]
    (tmp_path / "hparams.json").write_text(json.dumps(values))
    assert RunLayout(tmp_path).load_hparams().attention_bias is True
    assert HParams().attention_bias is False  # new runs follow equation 4


def test_a_run_recorded_before_bucket_growth_existed_keeps_its_buckets(tmp_path):
    values = HParams().to_dict()
    del values["bucket_growth"]
    (tmp_path / "hparams.json").write_text(json.dumps(values))
    assert RunLayout(tmp_path).load_hparams().bucket_growth == 1.1  # tensor2tensor's, as before
    assert HParams().bucket_growth == 1.05
