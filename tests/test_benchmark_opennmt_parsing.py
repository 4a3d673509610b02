"""tools/benchmarks/opennmt_py_parsing.py without OpenNMT-py or torch: the training-time budget's loop, the choice
of the checkpoints averaged, and the faults counted in outputs."""

import argparse
import sys
from pathlib import Path

import pytest


@pytest.fixture
def harness(monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "tools" / "benchmarks"))
    import opennmt_py_parsing

    yield opennmt_py_parsing
    for name in ("opennmt_py_parsing", "opennmt_py"):
        sys.modules.pop(name, None)


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class _Saver:
    """OpenNMT-py's ModelSaver as its training loop sees it: a step saved twice is saved once."""

    def __init__(self):
        self.last_saved_step, self.saved = None, []

    def save(self, step, moving_average=None):
        if step != self.last_saved_step:
            self.saved.append(step)
            self.last_saved_step = step


def _train(harness, minutes, train_steps, seconds_per_step=10.0, save_every=4, checkpoint_minutes=0.5):
    """OpenNMT-py 3.5's Trainer.train loop over budgeted batches, each update taking `seconds_per_step`."""
    clock, state = _Clock(), {"saves": {}}
    optim = argparse.Namespace(training_step=1)
    trainer = argparse.Namespace(model_saver=_Saver(), optim=optim, moving_average=None)
    batches = harness.budgeted_batches(trainer, iter(range(10 ** 6)), minutes, checkpoint_minutes, state, clock)
    for _ in batches:
        step = optim.training_step
        clock.now += seconds_per_step
        optim.training_step += 1
        if step % save_every == 0:
            trainer.model_saver.save(step)
        if step >= train_steps:
            break
    trainer.model_saver.save(step)
    return trainer.model_saver.saved, state


def test_the_budget_ends_training_at_the_first_update_that_ends_after_it_and_saves_that_step(harness):
    saved, state = _train(harness, minutes=1.0, train_steps=3000)
    assert saved == [3, 4, 6]  # 3 by time (30 s since the start), 4 by steps, 6 ends at 60 s: the last
    assert state["saves"] == {"3": 30.0, "4": 40.0, "6": 60.0} and state["stopped_by_budget"]


def test_train_steps_end_training_before_the_budget(harness):
    saved, state = _train(harness, minutes=10.0, train_steps=5, checkpoint_minutes=100.0)
    assert saved == [4, 5] and "stopped_by_budget" not in state


def test_the_last_checkpoints_up_to_the_step_are_averaged(harness, tmp_path):
    run_dir = tmp_path / "budget45"
    run_dir.mkdir()
    for step in (150, 300, 450, 600, 750, 813):  # every 150 steps, and the step the budget ended at
        (run_dir / f"model_step_{step}.pt").touch()
    args = argparse.Namespace(work=str(tmp_path), name="budget45", step=None, average=5)
    step, models = harness.checkpoint_selection(args)
    assert step == 813 and [model.name for model in models] == [f"model_step_{s}.pt" for s in (300, 450, 600, 750, 813)]
    args.step, args.average = 600, 2
    assert harness.checkpoint_selection(args)[1] == [run_dir / "model_step_450.pt", run_dir / "model_step_600.pt"]
    args.step = 700
    with pytest.raises(SystemExit, match="no checkpoint model_step_700.pt"):
        harness.checkpoint_selection(args)


@pytest.mark.parametrize("output, faults", [
    ("(S (NP John )NP (VP has (NP a dog )NP )VP . )S", (False, False)),
    ("(S (NP John )VP (VP has (NP a dog )NP )VP . )S", (True, False)),  # a closer of another label
    ("(S (NP John )NP (VP has (NP a dog )NP )VP .", (True, False)),  # left open
    ("(S (NP John )NP (VP has (NP a cat )NP )VP . )S", (False, True)),
    ("(S (NP John )NP (VP has (NP a dog dog )NP )VP . )S", (False, True)),  # a word too many
])
def test_outputs_with_unmatched_brackets_or_other_words_are_counted(harness, output, faults):
    assert harness.bracket_faults(output, "John has a dog .") == faults
