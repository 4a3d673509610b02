"""The best checkpoint of a run and early stopping (fairseq's checkpoint_best.pt and --patience, OpenNMT-py's
-early_stopping, Marian's --early-stopping).

Each dev evaluation gives one score (`DevScore`): BLEU or F1 from real beam decoding, or the dev loss. A score
better than the best so far saves the model's weights of that step as best/ckpt-<step>, with best/score.json
({"step", "metric", "value", "higher_is_better"}), in the format of averaged/ (`publish_model_checkpoint`,
which every tool restores) and outside checkpoints/, so that checkpoint rotation never removes it. The paper
evaluates the average of the last checkpoints (section 6.1), which stays the run's default model; best/ is
the model a dev-selected evaluation would use.

With a patience K (--early_stopping), training ends after K evaluations in a row without a better score. The
best score, its metric and step and the count of evaluations since are variables of the training checkpoint
(`state`): a resumed run knows what the checkpoint it resumes from knew, and stops where an uninterrupted run
would.
"""

import dataclasses
import math

import tensorflow as tf

from t2t_repro.train.model_checkpoint import publish_model_checkpoint

SCORE_FILE = "score.json"


@dataclasses.dataclass(frozen=True)
class DevScore:
    """The score of one dev evaluation: its name (dev_bleu, dev_f1, dev_loss), value and direction."""

    metric: str
    value: float
    higher_is_better: bool

    def better_than(self, value):
        """True when this score is strictly better than `value` of the same metric (a tie is no improvement);
        a non-finite score never is."""
        if not math.isfinite(self.value):
            return False
        return self.value > value if self.higher_is_better else self.value < value


class BestCheckpoint:
    """Keeps `directory` (a run's best/) holding the weights of the best dev score seen, and counts the
    evaluations since it for early stopping.

    Args:
        directory: where the best checkpoint and score.json go.
        patience: evaluations in a row without improvement that end training (0: never).
        summary_dir: where the best score so far is logged for TensorBoard (`best_<metric>`; None: nowhere).
    """

    def __init__(self, directory, patience=0, summary_dir=None):
        self.directory = directory
        self.patience = patience
        self.summary_dir = summary_dir
        self._writer = None
        self.metric = tf.Variable("", dtype=tf.string, trainable=False)
        self.value = tf.Variable(0.0, dtype=tf.float64, trainable=False)
        self.step = tf.Variable(-1, dtype=tf.int64, trainable=False)  # -1: no best yet
        self.stale = tf.Variable(0, dtype=tf.int64, trainable=False)

    @property
    def state(self):
        """The variables the training checkpoint saves (as `best`)."""
        return {"metric": self.metric, "value": self.value, "step": self.step, "stale_evaluations": self.stale}

    @property
    def best_step(self):
        return int(self.step.numpy())

    @property
    def best_value(self):
        return float(self.value.numpy())

    @property
    def best_metric(self):
        return self.metric.numpy().decode("utf-8")

    @property
    def stale_evaluations(self):
        return int(self.stale.numpy())

    @property
    def exhausted(self):
        """True when the patience is used up: training ends."""
        return self.patience > 0 and self.stale_evaluations >= self.patience

    def update(self, step, score, model):
        """Compares `score` (a DevScore of `model` at `step`) with the best so far: a better one is published
        as the new best/, a worse or equal one counts against the patience. Returns True when it improved."""
        if self.best_step >= 0 and self.best_metric != score.metric:
            print(f"the dev score is now {score.metric}, not {self.best_metric}: the best checkpoint is chosen "
                  "afresh", flush=True)
            self.step.assign(-1)
            self.stale.assign(0)
        improved = score.better_than(self.best_value) if self.best_step >= 0 else math.isfinite(score.value)
        if improved:
            record = {"step": step, "metric": score.metric, "value": score.value,
                      "higher_is_better": score.higher_is_better}
            publish_model_checkpoint(model, self.directory, step, {SCORE_FILE: record})
            self.metric.assign(score.metric)
            self.value.assign(score.value)
            self.step.assign(step)
            self.stale.assign(0)
            print(f"step {step}: best {score.metric} so far, {score.value:.4f}: saved in {self.directory}", flush=True)
        else:
            self.stale.assign_add(1)
            of = f" (--early_stopping={self.patience})" if self.patience else ""
            print(f"step {step}: {score.metric} {score.value:.4f} is not better than {self.describe_best()}: "
                  f"{self.stale_evaluations} evaluation(s) in a row without improvement{of}", flush=True)
        self._log(step)
        return improved

    def describe_best(self):
        """"dev_bleu 27.3000 at step 1200", or "none" before any."""
        if self.best_step < 0:
            return "none"
        return f"{self.best_metric} {self.best_value:.4f} at step {self.best_step}"

    def stop_message(self, step):
        """The log line that says why training ends at `step`."""
        return (f"early stopping at step {step}: no better dev score in {self.stale_evaluations} evaluations in a "
                f"row (--early_stopping={self.patience}); the best is {self.describe_best()}, in {self.directory}")

    def _log(self, step):
        if self.summary_dir is None or self.best_step < 0:
            return
        if self._writer is None:
            self._writer = tf.summary.create_file_writer(self.summary_dir)
        with self._writer.as_default(step=step):
            tf.summary.scalar(f"best_{self.best_metric}", self.best_value)
        self._writer.flush()
