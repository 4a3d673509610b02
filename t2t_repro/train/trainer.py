"""The training loop: orchestrates data, model, optimizer, checkpoints, summaries and evaluation.

It owns no algorithm: the step is `TrainStep`, batching is `token_batches`, the schedule and optimizer are
`make_optimizer`, decoding is `t2t_repro.decode`, scoring is the problem's `evaluate`.
"""

import dataclasses
import math
import os
import time

import keras
import tensorflow as tf

from t2t_repro import registry
from t2t_repro.data.batching import token_batches
from t2t_repro.data.text_problem import summary_line
from t2t_repro.errors import UserError
from t2t_repro.hparams_type import apply_overrides
from t2t_repro.model import build_transformer
from t2t_repro.train import run_dir
from t2t_repro.train.evaluation import DevEvaluator
from t2t_repro.train.optimizer import make_optimizer
from t2t_repro.train.step import TrainStep
from t2t_repro.train.strategy import is_chief, make_strategy, worker_position

# Tokens per side one device handles in a micro-batch unless told otherwise. The paper's 8 P100s each held
# about 25,000 / 8 = 3,125 (section 5.2); 4,096 fits the big model in float32 on any current accelerator, so
# one GPU accumulates 7 micro-batches to train with the paper's 25,000-token batch, 8 GPUs need none.
DEFAULT_DEVICE_BATCH_TOKENS = 4096


@dataclasses.dataclass(frozen=True)
class TrainerConfig:
    """Everything a training run is started with (the trainer's command-line flags)."""

    problem: str
    hparams_set: str
    output_dir: str
    data_dir: str
    hparams_overrides: str = ""
    train_steps: int | None = None
    strategy: str = "auto"
    tpu_address: str | None = None
    batch_tokens: int | None = None
    device_batch_tokens: int | None = None
    gradient_accumulation: str = "auto"
    checkpoint_minutes: float = 10.0  # section 6.1: checkpoints written at 10-minute intervals
    checkpoint_steps: int | None = None
    keep_checkpoints: int | None = None
    seed: int = 1
    log_steps: int = 100
    eval_steps: int = 2000
    eval_decode_sentences: int = 100
    tmp_dir: str | None = None
    manual_dir: str | None = None
    command_line: tuple = ()


def resolve_hparams(config):
    hparams = apply_overrides(registry.get_hparams(config.hparams_set), config.hparams_overrides)
    if config.train_steps is not None:
        hparams = dataclasses.replace(hparams, train_steps=config.train_steps)
    return hparams


def default_checkpoint_steps(hparams):
    """Steps between checkpoints besides the 10-minute clock: about four averaging windows over the run.

    On the paper's runs the 10-minute clock saves far more often (base: 5,000 steps are ~33 minutes); a
    short run that ends before 10 minutes still leaves checkpoints from its last part to average."""
    return max(1, hparams.train_steps // (4 * hparams.checkpoint_average_count))


def accumulation_steps(config, hparams, replicas):
    """Micro-batches per replica per update: explicit, or enough to reach the global batch on these devices."""
    batch_tokens = config.batch_tokens or hparams.batch_tokens
    if config.gradient_accumulation != "auto":
        try:
            steps = int(config.gradient_accumulation)
        except ValueError:
            steps = 0
        if steps < 1:
            raise UserError(f"--gradient_accumulation={config.gradient_accumulation}: expected auto or a count >= 1")
        return steps
    device_tokens = config.device_batch_tokens or max(DEFAULT_DEVICE_BATCH_TOKENS, hparams.max_length)
    return max(1, math.ceil(batch_tokens / (replicas * device_tokens)))


class Trainer:
    """Runs (or resumes) one training run in config.output_dir."""

    def __init__(self, config):
        self.config = config
        self.hparams = resolve_hparams(config)
        self.problem = registry.get_problem(config.problem)
        # The strategy first: multi-worker collectives must be configured before TensorFlow runs any op.
        self.strategy = make_strategy(config.strategy, config.tpu_address)
        keras.utils.set_random_seed(config.seed)
        self.chief = is_chief(self.strategy)
        self.workers, self.worker_index = worker_position(self.strategy)
        replicas = self.strategy.num_replicas_in_sync
        self.accumulation = accumulation_steps(config, self.hparams, replicas)
        self.batch_tokens = config.batch_tokens or self.hparams.batch_tokens
        self.micro_batch_tokens = self.batch_tokens // (replicas * self.accumulation)
        self.checkpoint_steps = config.checkpoint_steps or default_checkpoint_steps(self.hparams)
        if self.micro_batch_tokens < self.hparams.max_length:
            raise UserError(
                f"a micro-batch of {self.micro_batch_tokens} tokens ({self.batch_tokens} over {replicas} replicas x "
                f"{self.accumulation} micro-batches) cannot hold a pair of max_length={self.hparams.max_length}"
            )

    def prepare(self):
        """Generates missing data, records the run, and builds model, optimizer, input and checkpoint."""
        config = self.config
        if not self.problem.data_ready(config.data_dir):
            print(f"generating data for {config.problem} in {config.data_dir}", flush=True)
            summary = self.problem.generate_data(config.data_dir, config.tmp_dir, config.manual_dir)
            print(summary_line(summary), flush=True)
        if self.chief:
            info = run_dir.RunInfo(
                config.problem, config.hparams_set, config.hparams_overrides, os.path.abspath(config.data_dir),
                tuple(config.command_line),
            )
            run_dir.prepare_output_dir(config.output_dir, self.hparams, info)
        self.vocabulary = self.problem.vocabulary(config.data_dir)
        with self.strategy.scope():
            self.model = build_transformer(self.hparams, self.vocabulary.vocab_size)
            self.optimizer = make_optimizer(self.hparams)
            self.optimizer.build(self.model.trainable_variables)
        train = self.problem.dataset("train", config.data_dir).shard(self.workers, self.worker_index)
        batches = token_batches(
            train, self.micro_batch_tokens, self.hparams.max_length, shuffle=True, seed=config.seed, repeat=True
        )
        self.iterator = iter(batches)
        # Dropout's random state lives in non-trainable seed-generator variables; saving them makes resume exact.
        rng_state = {v.path: v for v in self.model.non_trainable_variables}
        # Training time summed over every session of the run (for Table 2's cost estimate).
        self.train_seconds = tf.Variable(0.0, dtype=tf.float64, trainable=False)
        self.checkpoint = tf.train.Checkpoint(
            model=self.model, optimizer=self.optimizer, data=self.iterator, rng=rng_state,
            train_seconds=self.train_seconds,
        )
        directory = os.path.join(config.output_dir, run_dir.CHECKPOINT_DIR)
        if not self.chief:  # every worker saves (it may take part in collectives); only the chief's count
            directory = os.path.join(directory, f"worker-{self.worker_index}")
        keep = config.keep_checkpoints or max(self.hparams.checkpoint_average_count, 1)
        self.manager = tf.train.CheckpointManager(self.checkpoint, directory, max_to_keep=keep)
        self.step_fn = TrainStep(
            self.model, self.optimizer, self.strategy, self.hparams.label_smoothing, self.accumulation
        )

    @property
    def step(self):
        return int(self.optimizer.iterations.numpy())

    def restore(self):
        latest = self.manager.latest_checkpoint
        if latest:
            try:
                self.checkpoint.restore(latest).assert_existing_objects_matched()
            except (AssertionError, tf.errors.OpError, ValueError) as error:
                raise UserError(f"cannot resume from {latest}: {error}") from None
            print(f"resumed from {latest} at step {self.step}", flush=True)

    def save(self):
        now = time.time()
        self.train_seconds.assign_add(now - self._clock)
        self._clock = now
        try:
            path = self.manager.save(checkpoint_number=self.step)
        except (tf.errors.OpError, OSError) as error:
            last = self.manager.latest_checkpoint or "none"
            raise UserError(f"could not write a checkpoint at step {self.step} ({error}); last good: {last}") from None
        return path

    def train(self):
        """Trains up to hparams.train_steps updates; returns statistics of this session's training."""
        config = self.config
        self.prepare()
        self.restore()
        writer = tf.summary.create_file_writer(os.path.join(config.output_dir, "train")) if self.chief else None
        evaluator = DevEvaluator(self) if self.chief else None
        print(
            f"training {config.problem} with {config.hparams_set}: {self.model.count_params():,} parameters, "
            f"{self.strategy.num_replicas_in_sync} replica(s) x {self.accumulation} micro-batch(es) of "
            f"{self.micro_batch_tokens} tokens, {self.hparams.train_steps} steps",
            flush=True,
        )
        start = self._clock = window_start = time.time()  # save() moves _clock to its own time
        window_tokens = total_tokens = 0.0
        while self.step < self.hparams.train_steps:
            loss, tokens = self.step_fn(self.iterator)
            loss = float(loss)
            if not math.isfinite(loss):
                last = self.manager.latest_checkpoint or "none"
                raise UserError(f"loss became {loss} at step {self.step}; stopped. Last good checkpoint: {last}")
            window_tokens += float(tokens)
            total_tokens += float(tokens)
            step = self.step
            if step % config.log_steps == 0 or step == self.hparams.train_steps:
                elapsed = time.time() - window_start
                rate = window_tokens / max(elapsed, 1e-9)
                learning_rate = float(self.optimizer.learning_rate)
                print(
                    f"step {step}/{self.hparams.train_steps}  loss {loss:.4f}  lr {learning_rate:.3g}  "
                    f"{rate:,.0f} target tokens/s",
                    flush=True,
                )
                if writer:
                    with writer.as_default(step=step):
                        tf.summary.scalar("loss", loss)
                        tf.summary.scalar("learning_rate", learning_rate)
                        tf.summary.scalar("target_tokens_per_s", rate)
                window_tokens, window_start = 0.0, time.time()
            due_by_time = time.time() - self._clock >= config.checkpoint_minutes * 60
            due_by_steps = step % self.checkpoint_steps == 0
            if due_by_time or due_by_steps or step == self.hparams.train_steps:
                self.save()
            if evaluator and (step % config.eval_steps == 0 or step == self.hparams.train_steps):
                evaluator.evaluate(step)
        if self.manager.latest_checkpoint is None or run_dir.checkpoint_step(self.manager.latest_checkpoint) != self.step:
            self.save()
        session_seconds = time.time() - start
        return {
            "steps": self.step,
            "train_seconds": float(self.train_seconds.numpy()),
            "target_tokens_per_s": total_tokens / session_seconds if total_tokens else None,
            "devices": self.strategy.num_replicas_in_sync,
            "device_kind": "GPU" if tf.config.list_logical_devices("GPU") else "CPU",
            "accumulation_steps": self.accumulation,
        }
