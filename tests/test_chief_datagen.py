"""Multi-worker runs: the chief generates the data, the other workers wait for it to be published, or give up."""

import threading

import pytest

from t2t_repro.data.datagen_options import DatagenOptions
from t2t_repro.errors import UserError
from t2t_repro.run import data as run_data


class FakeProblem:
    """A problem whose data appears when `publish()` is called (as the chief's datagen renames it into place)."""

    name = "fake"

    def __init__(self, ready=False):
        self.ready = ready
        self.generated_with = []

    def data_ready(self, data_dir):
        return self.ready

    def publish(self):
        self.ready = True

    def generate_data(self, data_dir, tmp_dir=None, manual_dir=None, workers=None):
        self.generated_with.append(workers)
        self.publish()
        counts = {"examples": 1, "dropped_empty": 0, "dropped_too_long": 0}
        splits = {split: counts for split in ("train", "dev", "test")}
        return {"problem": self.name, "directory": data_dir, "reused": False, "vocab_size": 9, "splits": splits,
                "seconds": 0.1, "pairs_per_s": 30.0}


def test_the_chief_generates_with_its_workers(capsys):
    problem = FakeProblem()
    run_data.prepare_data(problem, "D", None, None, DatagenOptions(workers=3), chief=True)
    assert problem.generated_with == [3]
    assert "fake: generated train 1" in capsys.readouterr().out


def test_another_worker_waits_for_the_chief_and_then_proceeds(capsys):
    problem = FakeProblem()
    timer = threading.Timer(0.3, problem.publish)
    timer.start()
    try:
        run_data.prepare_data(problem, "D", None, None, DatagenOptions(data_wait_minutes=1.0), chief=False,
                              poll_seconds=0.05)
    finally:
        timer.cancel()
    assert problem.ready and problem.generated_with == []  # it never generated anything itself
    assert "waiting for the chief to generate the data of fake in D" in capsys.readouterr().err


def test_another_worker_gives_up_after_the_timeout():
    problem = FakeProblem()
    with pytest.raises(UserError, match=r"waited 0\.0 minutes for the chief to generate the data of fake in D"):
        run_data.prepare_data(problem, "D", None, None, DatagenOptions(data_wait_minutes=0.005), chief=False,
                              poll_seconds=0.05)
    assert problem.generated_with == []


def test_ready_data_is_neither_generated_nor_waited_for(capsys):
    problem = FakeProblem(ready=True)
    for chief in (True, False):
        run_data.prepare_data(problem, "D", None, None, DatagenOptions(data_wait_minutes=0.0), chief=chief)
    assert problem.generated_with == [] and capsys.readouterr() == ("", "")


def test_datagen_options_are_checked():
    with pytest.raises(UserError, match="workers=0: must be at least 1"):
        DatagenOptions(workers=0)
    with pytest.raises(UserError, match="data_wait_minutes=-1"):
        DatagenOptions(data_wait_minutes=-1.0)


def test_train_run_on_a_worker_other_than_the_chief_waits_instead_of_generating(tmp_path, monkeypatch):
    from t2t_repro.run import training
    from t2t_repro.run.config import RunConfig
    from t2t_repro.train.options import TrainingOptions

    class NotChief:
        chief = False

        def __init__(self, hparams, problem, options):
            pass

        def environment(self):
            return {}

    monkeypatch.setattr(training, "Trainer", NotChief)
    config = RunConfig(problem="wmt_ende", hparams="transformer_tiny", output_dir=str(tmp_path / "run"),
                       data_dir=str(tmp_path / "data"), manual_dir=str(tmp_path / "no_such_dir"))
    with pytest.raises(UserError, match="for the chief to generate the data of wmt_ende"):
        training.train_run(config, TrainingOptions(), DatagenOptions(data_wait_minutes=0.001))
    assert not (tmp_path / "data").exists() and not (tmp_path / "run").exists()
