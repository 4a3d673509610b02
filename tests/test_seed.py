"""--seed: it reaches the initial weights, dropout's random state and the order of the training data, which one
seed reproduces; another seed trains apart; run.json records it and a restart with another seed is refused."""

import json

import numpy as np
from conftest import TINY_RUN_FLAGS, run_cli_in_process
from test_trainer import _weights

from t2t_repro import catalog
from t2t_repro.hparams_type import apply_overrides
from t2t_repro.train.options import TrainingOptions
from t2t_repro.train.trainer import Trainer, random_state

OVERRIDES = next(flag for flag in TINY_RUN_FLAGS if flag.startswith("--hparams_overrides=")).split("=", 1)[1]


def _random_choices(data_dir, checkpoint_dir, seed):
    """(initial weights, dropout's random state, the first training batch) of a tiny run with `seed`."""
    hparams = apply_overrides(catalog.get_hparams("transformer_tiny"), OVERRIDES)
    trainer = Trainer(hparams, catalog.get_problem("wmt_ende", ""), TrainingOptions(seed=seed, batch_tokens=256))
    trainer.prepare(data_dir, checkpoint_dir)
    batch = next(trainer.iterator)
    return ([w.numpy() for w in trainer.model.trainable_weights],
            [v.numpy() for v in random_state(trainer.model).values()],
            [batch[key].numpy() for key in sorted(batch)])


def _same(arrays, others):
    return len(arrays) == len(others) and all(a.shape == b.shape and np.array_equal(a, b)
                                              for a, b in zip(arrays, others))


def test_the_seed_reaches_initialization_dropout_and_data_order(tiny_data_dir, tmp_path):
    first, again, other = (_random_choices(tiny_data_dir, tmp_path / name, seed)
                           for name, seed in (("first", 1), ("again", 1), ("other", 2)))
    for what, a, b, c in zip(("initial weights", "dropout state", "first batch"), first, again, other):
        assert len(a) > 0, what
        assert _same(a, b), f"{what}: not reproduced by the same seed"
        assert not _same(a, c), f"{what}: the same under another seed"


def _run(data_dir, output_dir, *flags):
    return run_cli_in_process(
        "trainer", *TINY_RUN_FLAGS, "--train_steps=2", "--eval_decode_sentences=0", "--skip_average",
        "--skip_test", "--skip_export", f"--data_dir={data_dir}", f"--output_dir={output_dir}", *flags,
    )


def test_another_seed_trains_apart_and_a_restart_keeps_its_seed(tiny_data_dir, tmp_path):
    """(That one seed reproduces a run to the step is test_trainer's: a killed and resumed run reaches the
    weights of a straight one.)"""
    default, other = tmp_path / "default", tmp_path / "other"
    for output_dir, flags in ((default, ()), (other, ("--seed=2",))):
        result = _run(tiny_data_dir, output_dir, *flags)
        assert result.returncode == 0, result.stdout + result.stderr
    first, second = (_weights(str(run / "checkpoints" / "ckpt-2")) for run in (default, other))
    assert first.keys() == second.keys() and len(first) > 10
    assert any(not np.allclose(first[name], second[name]) for name in first)
    assert json.loads((default / "run.json").read_text())["seed"] == 1
    assert json.loads((other / "run.json").read_text())["seed"] == 2

    recorded = (other / "run.json").read_text()
    refused = _run(tiny_data_dir, other, "--seed=3", "--train_steps=4")
    assert refused.returncode == 2
    assert "seed 2, not 3" in refused.stderr and "--seed=2" in refused.stderr and "Traceback" not in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert (other / "run.json").read_text() == recorded
    assert not (other / "checkpoints" / "ckpt-4.index").exists()
