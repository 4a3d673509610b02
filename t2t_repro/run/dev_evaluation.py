"""Evaluation during training on the dev split: loss and perplexity, and BLEU or F1 from real beam decoding.

Dev perplexity is per subword token without label smoothing (Table 3's "PPL (dev)"); dev BLEU and chrF, or F1,
come from beam-decoding a subset of dev sentences with the problem's decoding defaults and scoring them with the
problem's own scorer, never from teacher-forced predictions. Each evaluation returns its score (`DevScore`):
by default the scorer's headline (BLEU for translation, F1 for parsing: higher is better) when dev sentences
are decoded, else the dev loss (lower is better), or the figure --best_metric names; the trainer keeps the best
checkpoint by it (`BestCheckpoint`).
"""

import math

import tensorflow as tf

from t2t_repro.data.batching import token_batches
from t2t_repro.decode.decode_text import decode_texts
from t2t_repro.errors import UserError
from t2t_repro.train.best_checkpoint import DevScore
from t2t_repro.train.loss import label_smoothed_cross_entropy

# Long dev sentences are scored too: only pairs longer than this many tokens are left out of the dev loss.
_DEV_MAX_LENGTH = 1024


def check_best_metric(best_metric, problem, decode_sentences):
    """UserError for a --best_metric the run's dev evaluation does not give: a decoded figure without decoded
    dev sentences, or one the problem's scorer does not compute (its `metric_names`, where it names them)."""
    if best_metric in ("auto", "loss"):
        return
    if decode_sentences <= 0:
        raise UserError(f"--best_metric={best_metric} is a figure of decoded dev sentences: it needs "
                        "--eval_decode_sentences above 0 (or --best_metric=loss)")
    names = getattr(problem.scorer, "metric_names", None)
    if names is not None and best_metric not in names:
        raise UserError(f"--best_metric={best_metric}: problem {problem.name}'s dev evaluation gives "
                        f"{', '.join(names)} and loss")


class DevEvaluator:
    """`evaluator(step, model)` computes the dev metrics of the model's current weights, writes them as
    TensorBoard summaries to `summary_dir` and returns the step's `DevScore`.

    Args:
        problem, vocabularies, data_dir: the run's problem, its `Vocabularies` and its data.
        label_smoothing: epsilon_ls of the smoothed dev loss.
        batch_tokens: tokens per dev batch (at least the longest dev pair kept).
        decode_sentences: dev sentences beam-decoded and scored (0: none).
        summary_dir: where the summaries go.
        best_metric: the figure each evaluation returns as its score: "auto" (the scorer's headline, BLEU or F1,
            or the dev loss without decoded sentences), "loss", or one of the scorer's (e.g. "chrf").
    """

    def __init__(self, problem, vocabularies, data_dir, label_smoothing, batch_tokens, decode_sentences, summary_dir,
                 best_metric="auto"):
        check_best_metric(best_metric, problem, decode_sentences)
        self.best_metric = best_metric
        self.problem = problem
        self.vocabularies = vocabularies
        self.data_dir = data_dir
        self.label_smoothing = label_smoothing
        self.batch_tokens = max(batch_tokens, _DEV_MAX_LENGTH)
        self.decode_sentences = decode_sentences
        self.writer = tf.summary.create_file_writer(summary_dir)
        self._loss_steps = {}

    def _loss_step(self, model):
        """The compiled dev-loss step of `model` (traced once per model)."""
        if model not in self._loss_steps:
            batch_spec = {key: tf.TensorSpec([None, None], tf.int32) for key in ("inputs", "targets")}

            def batch_losses(batch):
                logits = model(batch, training=False)
                smoothed, tokens = label_smoothed_cross_entropy(batch["targets"], logits, self.label_smoothing)
                plain, _ = label_smoothed_cross_entropy(batch["targets"], logits, 0.0)
                return smoothed, plain, tokens

            self._loss_steps[model] = tf.function(batch_losses, input_signature=[batch_spec], autograph=False)
        return self._loss_steps[model]

    def dev_loss(self, model):
        """(label-smoothed loss per token, perplexity per token) over the dev split."""
        step = self._loss_step(model)
        totals = [0.0, 0.0, 0.0]
        for batch in token_batches(self.problem.dataset("dev", self.data_dir, _DEV_MAX_LENGTH), self.batch_tokens,
                                   _DEV_MAX_LENGTH):
            for i, value in enumerate(step(batch)):
                totals[i] += float(value)
        smoothed, plain, tokens = totals
        tokens = max(tokens, 1.0)
        return smoothed / tokens, math.exp(min(plain / tokens, 50.0))

    def dev_scores(self, model):
        """Decodes the first dev sentences with the problem's decoding defaults; the headline's name and
        {name: value} of every figure the scorer gives for a dev curve (`headlines`: BLEU and chrF, or F1)."""
        pairs = self.problem.text_pairs("dev", self.data_dir)[: self.decode_sentences]
        sources = [source for source, _ in pairs]
        references = [reference for _, reference in pairs]
        hypotheses = decode_texts(sources, model, self.vocabularies, self.problem.decode_settings,
                                  self.problem.postprocess, self.problem.output_constraint(self.vocabularies),
                                  progress=False)
        scorer = self.problem.scorer
        scores = self.problem.evaluate(hypotheses, references, sources)
        name, value = scorer.headline(scores)
        return name, (scorer.headlines(scores) if hasattr(scorer, "headlines") else {name: value})

    def __call__(self, step, model):
        loss, perplexity = self.dev_loss(model)
        metrics = {"dev_loss": loss, "dev_perplexity": perplexity}
        score = DevScore("dev_loss", loss, higher_is_better=False)
        if self.decode_sentences > 0:
            headline, figures = self.dev_scores(model)
            metrics.update((f"dev_{name}", value) for name, value in figures.items())
            chosen = headline if self.best_metric == "auto" else self.best_metric
            if chosen != "loss":
                if chosen not in figures:
                    raise UserError(f"--best_metric={chosen}: the dev evaluation of problem {self.problem.name} gives "
                                    f"{', '.join(figures)} and loss")
                score = DevScore(f"dev_{chosen}", figures[chosen], higher_is_better=True)
        with self.writer.as_default(step=step):
            for name, value in metrics.items():
                tf.summary.scalar(name, value)
        self.writer.flush()
        print(f"step {step} dev: " + "  ".join(f"{k} {v:.4f}" for k, v in metrics.items()), flush=True)
        return score
