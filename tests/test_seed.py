"""--seed: it reaches the initial weights, dropout's random state and the order of the training data, which one
seed reproduces; a restart with another seed is refused (another seed training apart, and run.json recording it:
test_seed_ensemble)."""

import json

import numpy as np
from conftest import TINY_RUN_FLAGS, copy_run, run_cli_in_process

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


def test_a_restart_with_another_seed_is_refused_and_changes_nothing(serving_run, tiny_data_dir, tmp_path):
    """(That one seed reproduces a run to the step is test_trainer's: a killed and resumed run reaches the
    weights of a straight one; that another seed trains apart, and run.json records it, test_seed_ensemble's.)"""
    run = copy_run(serving_run, tmp_path)
    recorded = (run / "run.json").read_text()
    assert json.loads(recorded)["seed"] == 1
    refused = run_cli_in_process(
        "trainer", *TINY_RUN_FLAGS, "--train_steps=4", "--eval_decode_sentences=0", "--skip_average", "--skip_test",
        "--skip_export", f"--data_dir={tiny_data_dir}", f"--output_dir={run}", "--seed=3",
    )
    assert refused.returncode == 2
    assert "seed 1, not 3" in refused.stderr and "--seed=1" in refused.stderr and "Traceback" not in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert (run / "run.json").read_text() == recorded
    assert not (run / "checkpoints" / "ckpt-4.index").exists()
