"""Evaluation during training on the dev split: loss and perplexity, and BLEU or F1 from real beam decoding.

Dev perplexity is per subword token without label smoothing (Table 3's "PPL (dev)"); dev BLEU or F1 comes from
beam-decoding a subset of dev sentences with the problem's decoding defaults and scoring them with the
problem's own evaluation, never from teacher-forced predictions.
"""

import math
import os

import tensorflow as tf

from t2t_repro.data.batching import token_batches
from t2t_repro.train.loss import label_smoothed_cross_entropy

# Long dev sentences are scored too: only pairs longer than this many tokens are left out of the dev loss.
_DEV_MAX_LENGTH = 1024


def headline_score(scores):
    """The single number a problem's evaluation is summarised by: sacreBLEU, or labelled bracket F1."""
    if "bleu" in scores:
        return "bleu", scores["bleu"]["sacrebleu"]
    return "f1", scores["f1"]


class DevEvaluator:
    """Computes dev metrics for a Trainer's current weights and writes them as TensorBoard summaries."""

    def __init__(self, trainer):
        self.trainer = trainer
        self.writer = tf.summary.create_file_writer(os.path.join(trainer.config.output_dir, "dev"))
        self.smoothing = trainer.hparams.label_smoothing
        batch_spec = {key: tf.TensorSpec([None, None], tf.int32) for key in ("inputs", "targets")}
        self._loss_step = tf.function(self._batch_losses, input_signature=[batch_spec])

    def _batch_losses(self, batch):
        logits = self.trainer.model(batch, training=False)
        smoothed, tokens = label_smoothed_cross_entropy(batch["targets"], logits, self.smoothing)
        plain, _ = label_smoothed_cross_entropy(batch["targets"], logits, 0.0)
        return smoothed, plain, tokens

    def dev_loss(self):
        """(label-smoothed loss per token, perplexity per token) over the dev split."""
        trainer = self.trainer
        dev = trainer.problem.dataset("dev", trainer.config.data_dir)
        batch_tokens = max(trainer.micro_batch_tokens, _DEV_MAX_LENGTH)
        totals = [0.0, 0.0, 0.0]
        for batch in token_batches(dev, batch_tokens, _DEV_MAX_LENGTH):
            for i, value in enumerate(self._loss_step(batch)):
                totals[i] += float(value)
        smoothed, plain, tokens = totals
        tokens = max(tokens, 1.0)
        return smoothed / tokens, math.exp(min(plain / tokens, 50.0))

    def dev_score(self):
        """Decodes the first dev sentences with the problem's decoding defaults and scores them."""
        from t2t_repro.decode.decode_text import decode_texts

        trainer = self.trainer
        pairs = trainer.problem.text_pairs("dev", trainer.config.data_dir)[: trainer.config.eval_decode_sentences]
        sources = [source for source, _ in pairs]
        references = [reference for _, reference in pairs]
        hypotheses = decode_texts(sources, trainer.model, trainer.vocabulary, trainer.problem, progress=False)
        return headline_score(trainer.problem.evaluate(hypotheses, references, sources))

    def evaluate(self, step):
        loss, perplexity = self.dev_loss()
        metrics = {"dev_loss": loss, "dev_perplexity": perplexity}
        if self.trainer.config.eval_decode_sentences > 0:
            name, value = self.dev_score()
            metrics[f"dev_{name}"] = value
        with self.writer.as_default(step=step):
            for name, value in metrics.items():
                tf.summary.scalar(name, value)
        self.writer.flush()
        print(f"step {step} dev: " + "  ".join(f"{k} {v:.4f}" for k, v in metrics.items()), flush=True)
        return metrics
