"""Training curves of a run from its TensorBoard logs: loss, learning rate, throughput and dev metrics.

The trainer writes output_dir/train (loss, learning_rate, target_tokens_per_s, every --log_steps) and the dev
evaluator output_dir/dev (dev_loss, dev_perplexity and dev_bleu or dev_f1, every --eval_steps). A resumed run
writes a new event file and may log some steps again; the value written last wins.

    scalars = run_scalars(output_dir)        # {"loss": [(step, value), ...], "dev_bleu": [...], ...}
    paths = plot_curves(output_dir, "figures/")
"""

import glob
import os

import tensorflow as tf

from t2t_repro.errors import UserError
from t2t_repro.visualize import new_figure, save_figure

LOG_DIRS = ("train", "dev")

# One PNG per panel: (file name, title, y label, [(tag, legend label)], log-scale y).
PANELS = (
    ("loss.png", "label-smoothed cross-entropy per target token", "loss",
     [("loss", "train"), ("dev_loss", "dev")], False),
    ("learning_rate.png", "learning rate (section 5.3)", "learning rate", [("learning_rate", None)], False),
    ("dev_perplexity.png", "dev perplexity per subword token", "perplexity", [("dev_perplexity", None)], True),
    ("dev_bleu.png", "dev BLEU (sacreBLEU, beam search)", "BLEU", [("dev_bleu", None)], False),
    ("dev_f1.png", "dev labelled bracket F1 (beam search)", "F1", [("dev_f1", None)], False),
    ("throughput.png", "training throughput", "target tokens / s", [("target_tokens_per_s", None)], False),
)


def _scalar_value(value):
    """The float in a summary value: TF2 summaries store a tensor, TF1 ones a simple_value."""

    if value.HasField("tensor"):
        return float(tf.make_ndarray(value.tensor))
    return float(value.simple_value)


def read_scalars(log_dir):
    """{tag: [(step, value), ...] sorted by step} from every event file in `log_dir`, oldest file first (read
    as tf.compat.v1.train.summary_iterator does, without its deprecation warning).

    A truncated last record (a run killed while writing) ends that file's reading, keeping what came before."""

    by_tag = {}
    paths = sorted(glob.glob(os.path.join(log_dir, "events.out.tfevents.*")), key=os.path.getmtime)
    for path in paths:
        try:
            for record in tf.data.TFRecordDataset(path):
                event = tf.compat.v1.Event.FromString(record.numpy())
                for value in event.summary.value:
                    by_tag.setdefault(value.tag, {})[event.step] = _scalar_value(value)
        except tf.errors.DataLossError:
            continue
    return {tag: sorted(points.items()) for tag, points in by_tag.items()}


def run_scalars(output_dir):
    """Every scalar a run logged, train and dev together: {tag: [(step, value), ...]}."""
    if not os.path.isdir(output_dir):
        raise UserError(f"--output_dir={output_dir}: no such directory")
    scalars = {}
    for name in LOG_DIRS:
        scalars.update(read_scalars(os.path.join(output_dir, name)))
    if not scalars:
        raise UserError(f"no TensorBoard logs in {output_dir}/train or {output_dir}/dev: is it a t2t-repro "
                        "output_dir that has trained for at least --log_steps steps?")
    return scalars


def panel_figure(title, y_label, series, log_scale):
    """One line plot over training steps; `series` is [(legend label or None, [(step, value), ...])]."""
    figure = new_figure(6.4, 4.0)
    axes = figure.add_subplot()
    for label, points in series:
        steps, values = zip(*points)
        axes.plot(steps, values, marker="." if len(points) < 50 else None, label=label)
    if log_scale:
        axes.set_yscale("log")
    axes.set_title(title)
    axes.set_xlabel("step")
    axes.set_ylabel(y_label)
    axes.grid(True, alpha=0.3)
    if any(label for label, _ in series):
        axes.legend()
    return figure


def plot_curves(output_dir, out_dir):
    """Writes one PNG per panel of PANELS whose tags the run logged (see PANELS); returns the paths written."""
    scalars = run_scalars(output_dir)
    paths = []
    for file_name, title, y_label, tags, log_scale in PANELS:
        series = [(label, scalars[tag]) for tag, label in tags if scalars.get(tag)]
        if series:
            paths.append(save_figure(panel_figure(title, y_label, series, log_scale), os.path.join(out_dir,
                                                                                                   file_name)))
    return paths
