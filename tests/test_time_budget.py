"""--max_train_minutes through the trainer's command line, on a clock that advances one minute per update:
training ends at the first update past the budget with that step's checkpoint, and the run averages, tests and
reports as usual; a restart counts the training time its checkpoint recorded; train_steps ends it when it comes
first; bad values are one-line errors."""

import contextlib
import json
import shutil

import pytest
from conftest import TINY_RUN_FLAGS, run_cli_in_process

from t2t_repro.train import trainer as trainer_module

MINUTE = 60.0


@contextlib.contextmanager
def a_minute_per_update():
    """The trainer's clock stands still except that each update (a call of the training step) takes a minute."""
    now = [0.0]

    class MinuteStep(trainer_module.TrainStep):
        def __call__(self, iterator):
            result = super().__call__(iterator)
            now[0] += MINUTE
            return result

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(trainer_module.Trainer, "clock", staticmethod(lambda: now[0]))
        patch.setattr(trainer_module, "TrainStep", MinuteStep)
        yield


def _train(data_dir, output_dir, *flags):
    with a_minute_per_update():
        return run_cli_in_process(
            "trainer", *TINY_RUN_FLAGS, "--train_steps=40", "--checkpoint_steps=2", "--skip_export",
            f"--data_dir={data_dir}", f"--output_dir={output_dir}", *flags,
        )


def _records(output_dir):
    return (json.loads((output_dir / "report.json").read_text()), json.loads((output_dir / "run.json").read_text()))


@pytest.fixture(scope="module")
def five_minute_run(tmp_path_factory, tiny_data_dir):
    """A run of train_steps 40 given five minutes: it trains five updates."""
    output_dir = tmp_path_factory.mktemp("time_budget") / "run"
    result = _train(tiny_data_dir, output_dir, "--max_train_minutes=5")
    assert result.returncode == 0, result.stdout + result.stderr
    return output_dir, result.stdout


def test_a_used_up_budget_ends_training_at_a_checkpoint_then_the_run_ends_as_usual(five_minute_run):
    output_dir, stdout = five_minute_run
    assert "training ends with this step's checkpoint" in stdout
    checkpoints = output_dir / "checkpoints"
    assert (checkpoints / "ckpt-5.index").is_file() and not (checkpoints / "ckpt-6.index").exists()
    report, run = _records(output_dir)
    assert report["steps"] == 5 and report["stopped_by_time"] is True and report["max_train_minutes"] == 5
    assert report["averaged_checkpoint"].endswith("ckpt-5")
    assert report["bleu"]["lines"] == 20 and (output_dir / "test_decoded.txt").is_file()
    assert run["training"] == {"steps": 5, "train_seconds": 300.0, "max_train_minutes": 5.0,
                               "stopped_by_time": True, "stopped_early": False}


def test_a_restart_counts_the_time_its_checkpoint_recorded(five_minute_run, tmp_path, tiny_data_dir):
    output_dir = shutil.copytree(five_minute_run[0], tmp_path / "run")
    same = _train(tiny_data_dir, output_dir, "--max_train_minutes=5", "--skip_test")
    assert same.returncode == 0, same.stderr
    assert "no further training" in same.stdout and "step 6/" not in same.stdout
    assert _records(output_dir)[0]["steps"] == 5

    longer = _train(tiny_data_dir, output_dir, "--max_train_minutes=8", "--skip_test")  # 5 of 8 used: 3 more
    assert longer.returncode == 0, longer.stderr
    assert "resumed from" in longer.stdout
    report, run = _records(output_dir)
    assert report["steps"] == 8 and report["stopped_by_time"] is True
    assert run["training"]["train_seconds"] == 480.0 and run["training"]["max_train_minutes"] == 8.0
    assert not (output_dir / "checkpoints" / "ckpt-9.index").exists()

    steps_first = _train(tiny_data_dir, output_dir, "--max_train_minutes=60", "--train_steps=10", "--skip_test")
    assert steps_first.returncode == 0, steps_first.stderr
    report, run = _records(output_dir)
    assert report["steps"] == 10 and report["stopped_by_time"] is False
    assert run["training"]["train_seconds"] == 600.0


@pytest.mark.parametrize("value", ["-1", "0", "ten", "nan", "inf"])
def test_a_bad_budget_is_a_one_line_error(tmp_path, value):
    output_dir = tmp_path / "run"
    result = run_cli_in_process("trainer", "--problem=wmt_ende", "--hparams=transformer_tiny",
                                f"--output_dir={output_dir}", f"--max_train_minutes={value}")
    assert result.returncode == 2
    assert "max_train_minutes" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not output_dir.exists()
